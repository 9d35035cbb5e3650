"""The one shape of an SQS-queue Lambda: each message handled alone, a failing one
reported alone (a partial batch response), so only it is retried and, after its
retries, dead-lettered; the rest of the batch is unaffected.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.telemetry import logger, metrics, tracer

# A batch of failures only publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")

QueueHandler = Callable[[dict[str, Any], LambdaContext], PartialItemFailureResponse]


def queue_handler(record_handler: Callable[[SQSRecord], None]) -> QueueHandler:
    """The queue's `lambda_handler`: `record_handler` runs once per message (traced); a
    message it raises on is reported back as failed."""
    processor = BatchProcessor(event_type=EventType.SQS)
    traced = tracer.capture_method(record_handler)

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        return process_partial_response(
            event=event, record_handler=traced, processor=processor, context=context
        )

    return lambda_handler
