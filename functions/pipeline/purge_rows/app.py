"""Lambda entry point for the purge pipeline's DeleteRows task.

Deletes the rows of every version of the purged memories (the tombstones stay: ids and
times only), rewrites or drops the notices that quote them, and drops the write
pipeline's runs of their conversations. Deleting twice deletes nothing more. Answers
`{"rows", "notices", "runs_of"}` counts.
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
    return run_step(event, "rows deleted", container().purge.delete_rows)
