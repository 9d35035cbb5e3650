"""Lambda entry point for the purge pipeline's RewriteSummary task (one Map iteration).

Step Functions passes the purge request plus `conversation_id`. The summary is rebuilt
from the raw messages it covers, leaving out every turn that is the source of a deleted
memory (one model call). ModelUnavailable and ConcurrentChange (a fold moved the
summary meanwhile) propagate: the state machine retries them. Answers
`{"rewritten", "turns_left_out"}`.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from chatmemory.api.purge_tasks import run_step
from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container

# A summary already clean is not rewritten and publishes no metrics; that is expected.
warnings.filterwarnings("ignore", message="No application metrics to publish")


class SummaryItem(BaseModel):
    conversation_id: str = Field(min_length=1)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    item = SummaryItem.model_validate(event)
    logger.append_keys(conversation_id=item.conversation_id)
    result = run_step(
        event,
        "summary rewritten",
        lambda request: container().purge.rewrite_summary(request, item.conversation_id),
    )
    if result["rewritten"]:
        count("SummaryRewritten")
    return result
