"""Lambda entry point for the fold queue: each SQS message asks to fold one conversation.

The chat path enqueues a fold when a conversation's verbatim window is full (SqsJobs).
Messages carry ids only. A fold is idempotent (it applies only from the state it read),
so a message delivered twice changes nothing the second time. A message that is not a
job fails alone (a partial batch response) and reaches the dead-letter queue after its
retries; the rest of the batch is unaffected.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from chatmemory.config import container
from chatmemory.tasks.queue import queue_handler
from chatmemory.telemetry import count, logger


def fold_job(record: SQSRecord) -> None:
    """Fold the conversation a message names; ValueError if the message is not a job."""
    built = container()
    user_id, conversation_id = built.read_fold_job(record.body)
    outcome = built.folder.fold(user_id, conversation_id)
    count("FoldApplied" if outcome.folded else "FoldSkipped")
    logger.info(
        "fold applied" if outcome.folded else "fold skipped",
        extra={"conversation_id": conversation_id, "rebuilt": outcome.rebuilt},
    )


lambda_handler = queue_handler(fold_job)
