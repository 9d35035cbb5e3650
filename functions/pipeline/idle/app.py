"""Lambda entry point for the idle queue: each SQS message asks "has this conversation
gone quiet?".

Every stored user message re-arms its conversation's timer with a delayed message
(SqsJobs.idle_later), so a burst of messages leaves a burst of checks behind it. The
check starts the write pipeline only if no newer message arrived since and there are
user messages the pipeline has not read (a room's check, the same: each seated persona
writes once the room is quiet) — only the last check of a burst does anything
(a debounce, not one run per message). Messages carry ids only. A message that is not a
check fails alone (a partial batch response) and reaches the dead-letter queue after
its retries.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from chatmemory.config import container
from chatmemory.tasks.queue import queue_handler
from chatmemory.telemetry import count, logger


def idle_check(record: SQSRecord) -> None:
    """Check the conversation (or the room) a message names; ValueError if the message is
    not a check."""
    built = container()
    room_id = built.read_room_quiet(record.body)
    if room_id is not None:
        wrote = built.room_writes.check(room_id)
        count("RoomWrites", wrote)
        logger.info("room checked", extra={"room_id": room_id, "personas_written": wrote})
        return
    user_id, conversation_id = built.read_idle_check(record.body)
    started = built.idle.check(user_id, conversation_id)
    count("PipelineStarted" if started else "IdleCheckSkipped")
    logger.info(
        "write pipeline started" if started else "not idle yet, or nothing new",
        extra={"conversation_id": conversation_id},
    )


lambda_handler = queue_handler(idle_check)
