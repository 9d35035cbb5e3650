"""Lambda entry point for the fold queue: each SQS message asks to fold one conversation.

The chat path enqueues a fold when a conversation's verbatim window is full (SqsJobs).
Messages carry ids only. A fold is idempotent (it applies only from the state it read),
so a message delivered twice changes nothing the second time. A message that is not a
job fails alone (a partial batch response) and reaches the dead-letter queue after its
retries; the rest of the batch is unaffected.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.adapters.sqs_jobs import parse_job
from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container

# A batch of failures only publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")

processor = BatchProcessor(event_type=EventType.SQS)


@tracer.capture_method
def fold_job(record: SQSRecord) -> None:
    """Fold the conversation a message names; ValueError if the message is not a job."""
    _, user_id, conversation_id = parse_job(record.body)
    outcome = container().folder.fold(user_id, conversation_id)
    count("FoldApplied" if outcome.folded else "FoldSkipped")
    logger.info(
        "fold applied" if outcome.folded else "fold skipped",
        extra={"conversation_id": conversation_id, "rebuilt": outcome.rebuilt},
    )


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=fold_job, processor=processor, context=context
    )
