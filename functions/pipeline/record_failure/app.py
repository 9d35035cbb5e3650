"""Lambda entry point for the write pipeline's RecordFailure task.

Step Functions passes the whole state after a step failed for good: the run's input,
`extract` if Extract got that far, and `error` (`{"Error", "Cause"}`, the Catch's
result). The service keeps the error kind on the run, never text; the conversation's
cursor stays where it was, so the daily sweep offers the slice again.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.pipeline import FailureRecorded
from chatmemory.tasks.handler import step_task
from chatmemory.tasks.payloads import FailedRun
from chatmemory.telemetry import count, logger


def record_failure(failed: FailedRun) -> FailureRecorded:
    """The error's kind kept on the run, if there is one."""
    error = failed.error
    result = container().pipeline.record_failure(
        failed.user_id, failed.run_id, error.error, error.cause
    )
    count("PipelineFailed")
    # The error name only: a cause may quote whatever the failing call said.
    logger.warning("write pipeline failed", extra={"run_id": failed.run_id, "error": error.error})
    return result


lambda_handler = step_task(FailedRun, record_failure)
