"""The one shape of a DynamoDB Streams Lambda: each record handled alone, in order, a
failing one reported back (a partial batch response), so Lambda retries the shard from
that record instead of the whole batch, and the records before it are not sent twice.
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
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.telemetry import logger, metrics, tracer

# A batch of failures only publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")

StreamHandler = Callable[[dict[str, Any], LambdaContext], PartialItemFailureResponse]


def stream_handler(record_handler: Callable[[DynamoDBRecord], None]) -> StreamHandler:
    """The stream's `lambda_handler`: `record_handler` runs once per record (traced); a
    record it raises on is reported back as failed, by its sequence number."""
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    traced = tracer.capture_method(record_handler)

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        return process_partial_response(
            event=event, record_handler=traced, processor=processor, context=context
        )

    return lambda_handler
