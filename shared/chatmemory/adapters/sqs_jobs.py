"""Background work on AWS: a message on an SQS queue, consumed by a Lambda.

Messages carry ids only (never text); the consumer re-reads everything from the store,
and every job is idempotent (a fold applies only from the state it read).
"""

from __future__ import annotations

import json
import logging
import math
from datetime import datetime
from typing import Any

from chatmemory.adapters.clock import SystemClock
from chatmemory.domain.time import require_utc
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs

log = logging.getLogger(__name__)

FOLD = "fold"
ROOM_QUIET = "room_quiet"
#: SQS delays a message by at most 15 minutes.
MAX_DELAY_SECONDS = 900


class SqsJobs(Jobs):
    def __init__(
        self,
        client: Any,
        *,
        fold_queue_url: str,
        idle_queue_url: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._fold_queue_url = fold_queue_url
        self._idle_queue_url = idle_queue_url
        self._clock: Clock = clock or SystemClock()

    def fold_later(self, user_id: str, conversation_id: str) -> None:
        body = {"type": FOLD, "user_id": user_id, "conversation_id": conversation_id}
        self._client.send_message(QueueUrl=self._fold_queue_url, MessageBody=json.dumps(body))

    def idle_later(self, user_id: str, conversation_id: str, due_at: datetime) -> None:
        """A delayed message on the idle queue, visible at `due_at` (at most 15 minutes on).

        One message per user message: the consumer finds out whether a newer one came
        since, so only the last check of a burst starts the write pipeline. Rounded up,
        never down: a check that arrives early finds the conversation not yet quiet.
        """
        if self._idle_queue_url is None:
            # A misconfigured function must not fail the chat turn that armed the timer;
            # the daily sweep still reads the conversation, a day late.
            log.error("no idle queue configured: the idle timer was not armed")
            return
        wait = (require_utc("due_at", due_at) - self._clock.now()).total_seconds()
        delay = min(max(math.ceil(wait), 0), MAX_DELAY_SECONDS)
        body = {"user_id": user_id, "conversation_id": conversation_id}
        self._client.send_message(
            QueueUrl=self._idle_queue_url, MessageBody=json.dumps(body), DelaySeconds=delay
        )

    def room_quiet_later(self, room_id: str, due_at: datetime) -> None:
        """A delayed message on the idle queue naming the room (the same queue, the same
        consumer: a room's quiet check is a conversation's idle check for many people)."""
        if self._idle_queue_url is None:
            log.error("no idle queue configured: the room's quiet timer was not armed")
            return
        wait = (require_utc("due_at", due_at) - self._clock.now()).total_seconds()
        delay = min(max(math.ceil(wait), 0), MAX_DELAY_SECONDS)
        body = {"type": ROOM_QUIET, "room_id": room_id}
        self._client.send_message(
            QueueUrl=self._idle_queue_url, MessageBody=json.dumps(body), DelaySeconds=delay
        )


def parse_room_quiet(body: str) -> str | None:
    """The room a quiet check names; None if the message is a conversation's idle check.
    ValueError if it says it is a room's check but names none."""
    check = json.loads(body)
    if not isinstance(check, dict) or check.get("type") != ROOM_QUIET:
        return None
    room_id = check.get("room_id")
    if not isinstance(room_id, str) or not room_id:
        raise ValueError("a room's quiet check names its room")
    return room_id


def parse_job(body: str) -> tuple[str, str, str]:
    """(type, user_id, conversation_id) of a queued job; ValueError if it is not one."""
    job = json.loads(body)
    if not isinstance(job, dict) or job.get("type") != FOLD:
        raise ValueError("not a chatmemory job")
    user_id, conversation_id = job.get("user_id"), job.get("conversation_id")
    if not isinstance(user_id, str) or not isinstance(conversation_id, str):
        raise ValueError("a job names its user and conversation")
    return FOLD, user_id, conversation_id


def parse_idle_check(body: str) -> tuple[str, str]:
    """(user_id, conversation_id) of an idle-queue message; ValueError if it is not one."""
    check = json.loads(body)
    if not isinstance(check, dict):
        raise ValueError("not an idle check")
    user_id, conversation_id = check.get("user_id"), check.get("conversation_id")
    if not isinstance(user_id, str) or not isinstance(conversation_id, str):
        raise ValueError("an idle check names its user and conversation")
    if not user_id or not conversation_id:
        raise ValueError("an idle check names its user and conversation")
    return user_id, conversation_id
