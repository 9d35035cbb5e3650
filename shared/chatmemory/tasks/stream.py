"""The one shape of a DynamoDB Streams Lambda: each record handled alone, in order, a
failing one reported back (a partial batch response), so Lambda retries the shard from
that record instead of the whole batch, and the records before it are not run twice.
"""

from __future__ import annotations

import threading
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


class HeldBack(Exception):
    """A record not handled because one before it in the batch failed."""


def stream_handler(record_handler: Callable[[DynamoDBRecord], None]) -> StreamHandler:
    """The stream's `lambda_handler`: `record_handler` runs once per record (traced), in
    order; a record it raises on is reported back as failed, by its sequence number, and
    the records after it are held back (reported too, not run), so the retry starts at
    the first failure and nothing is handled ahead of a record before it."""
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    traced = tracer.capture_method(record_handler)
    failed = threading.local()

    def in_order(record: DynamoDBRecord) -> None:
        if getattr(failed, "yes", False):
            raise HeldBack(record.dynamodb.sequence_number if record.dynamodb else None)
        try:
            traced(record)
        except Exception:
            failed.yes = True
            raise

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        failed.yes = False
        return process_partial_response(
            event=event, record_handler=in_order, processor=processor, context=context
        )

    return lambda_handler
