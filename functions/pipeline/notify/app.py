"""Lambda entry point for the write pipeline's Notify task.

Step Functions passes `{"user_id", "run_id"}`; the answer is `{"notice_id": str | None}`
(None when the run wrote nothing). The notice id is derived from the run, so a retried
Notify raises no second toast.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.pipeline import Notified
from chatmemory.tasks.handler import step_task
from chatmemory.tasks.payloads import RunTask
from chatmemory.telemetry import count


def notify(task: RunTask) -> Notified:
    """One notice for what the run wrote; its id, or None."""
    result = container().pipeline.notify(task.user_id, task.run_id)
    if result.notice_id is not None:
        count("NoticeRaised")
    return result


lambda_handler = step_task(RunTask, notify, done="notified")
