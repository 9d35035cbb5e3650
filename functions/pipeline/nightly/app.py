"""Lambda entry point for the nightly thread review (seed 004 law 4, "stale is silent"):
every live thread quiet past three times its rhythm goes dormant — never asked about again
until the person brings it up. Pure code, no model call; idempotent, so a retried or
doubled schedule changes nothing twice. The scheduled event itself carries nothing we need.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.config import container
from chatmemory.telemetry import count, logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    reviewed = container().threads.review()
    count("ThreadsReviewed", reviewed.checked)
    count("ThreadsDormant", reviewed.dormant)
    logger.info(
        "thread review done", extra={"checked": reviewed.checked, "dormant": reviewed.dormant}
    )
    return {"checked": reviewed.checked, "dormant": reviewed.dormant}
