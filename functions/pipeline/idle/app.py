"""Lambda entry point for the idle queue: each SQS message asks "has this conversation
gone quiet?".

Every stored user message re-arms its conversation's timer with a delayed message
(SqsJobs.idle_later), so a burst of messages leaves a burst of checks behind it. The
check starts the write pipeline only if no newer message arrived since and there are
user messages the pipeline has not read — only the last check of a burst does anything
(a debounce, not one run per message). Messages carry ids only. A message that is not a
check fails alone (a partial batch response) and reaches the dead-letter queue after
its retries.
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

from chatmemory.adapters.sqs_jobs import parse_idle_check
from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container

# A batch of failures only publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")

processor = BatchProcessor(event_type=EventType.SQS)


@tracer.capture_method
def idle_check(record: SQSRecord) -> None:
    """Check the conversation a message names; ValueError if the message is not a check."""
    user_id, conversation_id = parse_idle_check(record.body)
    started = container().idle.check(user_id, conversation_id)
    count("PipelineStarted" if started else "IdleCheckSkipped")
    logger.info(
        "write pipeline started" if started else "not idle yet, or nothing new",
        extra={"conversation_id": conversation_id},
    )


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=idle_check, processor=processor, context=context
    )
