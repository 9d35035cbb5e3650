"""Lambda entry point for the write pipeline's RecordFailure task.

Step Functions passes the whole state after a step failed for good: the run's input,
`extract` if Extract got that far, and `error` (`{"Error", "Cause"}`, the Catch's
result). The service keeps the error kind on the run, never text; the conversation's
cursor stays where it was, so the daily sweep offers the slice again.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container


class StepError(BaseModel):
    """What a Catch puts at `ResultPath`: the error name and its cause."""

    error: str = Field(alias="Error")
    cause: str = Field(default="", alias="Cause")


class ExtractedRun(BaseModel):
    run_id: str


class FailedRun(BaseModel):
    user_id: str = Field(min_length=1)
    extract: ExtractedRun | None = None
    error: StepError


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    failed = parse(event=event, model=FailedRun)
    run_id = failed.extract.run_id if failed.extract else None
    result = container().pipeline.record_failure(
        failed.user_id, run_id, failed.error.error, failed.error.cause
    )
    count("PipelineFailed")
    # The error name only: a cause may quote whatever the failing call said.
    logger.warning("write pipeline failed", extra={"run_id": run_id, "error": failed.error.error})
    return result
