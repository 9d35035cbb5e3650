"""Lambda entry point for the fold queue: each SQS message asks to fold one conversation,
to write the uses of memories stored without their own, or to rebuild a profile after its
memories changed.

The chat path enqueues a fold when a conversation's verbatim window is full; a memory
typed, saved in a chat or corrected enqueues its uses (SqsJobs). Messages carry ids only.
Both jobs are idempotent (a fold applies only from the state it read; uses are written
only over the row they were written for), so a message delivered twice changes nothing
the second time. A message that is no job fails alone (a partial batch response) and
reaches the dead-letter queue after its retries; the rest of the batch is unaffected.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from chatmemory.config import container
from chatmemory.tasks.queue import queue_handler
from chatmemory.telemetry import count, logger


def fold_queue_job(record: SQSRecord) -> None:
    """Run the job a message names; ValueError if the message is not a job."""
    built = container()
    profile_job = built.read_profile_job(record.body)
    if profile_job is not None:
        changed = built.profiles.rebuild(*profile_job)
        count("ProfileRebuilt" if changed else "ProfileUnchanged")
        return
    uses_job = built.read_uses_job(record.body)
    if uses_job is not None:
        # A model failure leaves the category's uses; an embedder failure, no vectors yet
        # (the daily sweep hands both back).
        written = built.uses.write(*uses_job)
        count("MemoryUsesWritten", written.written)
        count("MemoryVectorsMade", written.embedded)
        logger.info(
            "memory uses job",
            extra={
                "asked": written.asked,
                "written": written.written,
                "embedded": written.embedded,
                "unembedded": written.unembedded,
            },
        )
        return
    user_id, conversation_id = built.read_fold_job(record.body)
    outcome = built.folder.fold(user_id, conversation_id)
    count("FoldApplied" if outcome.folded else "FoldSkipped")
    logger.info(
        "fold applied" if outcome.folded else "fold skipped",
        extra={"conversation_id": conversation_id, "rebuilt": outcome.rebuilt},
    )


lambda_handler = queue_handler(fold_queue_job)
