"""Lambda entry point for the purge pipeline's Plan task.

Step Functions passes the purge request `{"user_id", "as_of", "memory_ids"}`; the answer
is what the purge will touch: `{"tombstones": n, "personas": [...], "conversations":
[...]}` — ids and counts, never text. The Map states iterate over the two lists.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.api.purge_tasks import run_step
from chatmemory.api.telemetry import logger, metrics, tracer
from chatmemory.config import container

# A step that changes nothing publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return run_step(event, "purge planned", container().purge.plan)
