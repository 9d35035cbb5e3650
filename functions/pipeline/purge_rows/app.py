"""Lambda entry point for the purge pipeline's DeleteRows task.

Deletes the rows of every version of the purged memories (the tombstones stay: ids and
times only), rewrites or drops the notices that quote them, and drops the write
pipeline's runs of their conversations. Deleting twice deletes nothing more. Answers
`{"rows", "notices", "runs_of"}` counts.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.purge import RowsDeleted
from chatmemory.tasks.handler import purge_step
from chatmemory.tasks.payloads import PurgeTask


def delete_rows(task: PurgeTask) -> RowsDeleted:
    """How many rows, notices and conversations' runs went."""
    return container().purge.delete_rows(task.request)


lambda_handler = purge_step(PurgeTask, delete_rows, done="rows deleted")
