"""Lambda entry point for the write pipeline's Notify task.

Step Functions passes `{"user_id", "run_id"}`; the answer is `{"notice_id": str | None}`
(None when the run wrote nothing). The notice id is derived from the run, so a retried
Notify raises no second toast.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container

# A run that changes nothing publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")


class NotifyTask(BaseModel):
    user_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = parse(event=event, model=NotifyTask)
    logger.append_keys(run_id=task.run_id)
    result = container().pipeline.notify(task.user_id, task.run_id)
    if result["notice_id"] is not None:
        count("NoticeRaised")
    logger.info("notified", extra={"notice_id": result["notice_id"]})
    return result
