"""Lambda entry point for the daily sweep: starts the write pipeline for every
conversation whose cursor fell behind (a lost idle message, a failed run, a timed-out
Express execution). The scheduled event itself carries nothing we need.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    started = container().idle.sweep()
    count("SweepStarted", started)
    logger.info("sweep done", extra={"started": started})
    return {"started": started}
