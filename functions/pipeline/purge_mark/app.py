"""Lambda entry point for the purge pipeline's MarkPurged task, the last one.

Marks the request's tombstones purged; from then on the read path shows the rebuilt
profile and summaries again. Publishes how many memories were purged and how long after
the delete (PurgeLatency, the oldest deletion's). Answers `{"purged", "latency_ms"}`.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.api.purge_tasks import run_step
from chatmemory.api.telemetry import count, logger, metrics, milliseconds, tracer
from chatmemory.config import container

# A repeated run purges nothing and publishes no metrics; not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = run_step(event, "purged", container().purge.mark_purged)
    if result["purged"]:
        count("MemoriesPurged", int(result["purged"]))
        milliseconds("PurgeLatency", result["latency_ms"])
    return result
