"""Lambda entry point for the purge pipeline's Plan task.

Step Functions passes the purge request `{"user_id", "as_of", "memory_ids"}`; the answer
is what the purge will touch: `{"tombstones": n, "personas": [...], "conversations":
[...]}` — ids and counts, never text. The Map states iterate over the two lists.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.purge import PurgePlan
from chatmemory.tasks.handler import purge_step
from chatmemory.tasks.payloads import PurgeTask


def plan(task: PurgeTask) -> PurgePlan:
    """Which deletions, profiles and summaries the purge touches."""
    return container().purge.plan(task.request)


lambda_handler = purge_step(PurgeTask, plan, done="purge planned")
