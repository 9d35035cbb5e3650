"""Lambda entry point for the purge pipeline's RemoveVectors task.

Removes the index documents of every version of the purged memories from the vector
index (OpenSearch on AWS). Removing a document that is already gone is a no-op, so a
retry is harmless. Answers `{"removed": n}`.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.purge import VectorsRemoved
from chatmemory.tasks.handler import purge_step
from chatmemory.tasks.payloads import PurgeTask


def remove_vectors(task: PurgeTask) -> VectorsRemoved:
    """How many index documents were removed."""
    return container().purge.remove_vectors(task.request)


lambda_handler = purge_step(PurgeTask, remove_vectors, done="vectors removed")
