"""Lambda entry point for the write pipeline's Route task.

Step Functions passes `{"user_id", "run_id"}`; the run's candidates are read from the
store, each routed against its nearest memories (add, supersede, close or nothing). The
answer is `{"user_id", "run_id", "persona", "written", "superseded", "closed",
"profile_affected"}`. Routing a run twice writes nothing twice: memory ids are derived,
not random.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.pipeline import RoutedRun
from chatmemory.tasks.handler import step_task
from chatmemory.tasks.payloads import RunTask
from chatmemory.telemetry import count, logger


def route(task: RunTask) -> RoutedRun:
    """The run's candidates applied; how many memories were written, and how."""
    result = container().pipeline.route(task.user_id, task.run_id)
    count("MemoriesWritten", result.written)
    count("MemoriesSuperseded", result.superseded)
    count("MemoriesClosed", result.closed)
    logger.info(
        "routed",
        extra={"written": result.written, "profile_affected": result.profile_affected},
    )
    return result


lambda_handler = step_task(RunTask, route)
