"""Lambda entry point for the write pipeline's RebuildProfile task.

Step Functions passes `{"user_id", "persona"}` when a memory the profile was built from
changed (the purge rebuilds its profiles in functions/pipeline/purge_profile). The answer
is `{"rebuilt": bool}`. Rebuilding from the same memories gives the same digest, so a
retry is harmless.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.pipeline import ProfileRebuilt
from chatmemory.tasks.handler import step_task
from chatmemory.tasks.payloads import WriteProfileTask
from chatmemory.telemetry import count, logger


def rebuild_profile(task: WriteProfileTask) -> ProfileRebuilt:
    """The persona's digest again, from its active memories; whether it changed."""
    result = container().pipeline.rebuild_profile(task.user_id, task.persona)
    if result.rebuilt:
        count("ProfileRebuilt")
    logger.info("profile rebuilt" if result.rebuilt else "profile unchanged")
    return result


lambda_handler = step_task(WriteProfileTask, rebuild_profile)
