"""Background work on AWS: a message on an SQS queue, consumed by a Lambda.

Messages carry ids only (never text); the consumer re-reads everything from the store,
and every job is idempotent (a fold applies only from the state it read, a uses job
writes only over the row it read).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from chatmemory.adapters.clock import SystemClock
from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.time import require_utc
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs

log = logging.getLogger(__name__)

FOLD = "fold"
ROOM_QUIET = "room_quiet"
USES = "uses"
PROFILE = "profile"
#: SQS delays a message by at most 15 minutes.
MAX_DELAY_SECONDS = 900
#: memory ids one uses job names (a chat turn or a request writes one or two); more go
#: in further messages, so no message nears SQS's size limit
USES_PER_MESSAGE = 50


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

    def profile_later(self, user_id: str, persona: str, due_at: datetime) -> None:
        """A delayed message on the fold queue naming the user and the persona: a burst of
        writes sends one each, and each rebuild after the first finds nothing changed."""
        wait = (require_utc("due_at", due_at) - self._clock.now()).total_seconds()
        delay = min(max(math.ceil(wait), 0), MAX_DELAY_SECONDS)
        body = {"type": PROFILE, "user_id": user_id, "persona": persona}
        self._client.send_message(
            QueueUrl=self._fold_queue_url, MessageBody=json.dumps(body), DelaySeconds=delay
        )

    def uses_later(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """A message on the fold queue naming the user and the memories, nothing else:
        the same consumer as the folds (off the request path, room for a model call)."""
        wanted = list(dict.fromkeys(memory_ids))
        for start in range(0, len(wanted), USES_PER_MESSAGE):
            body = {
                "type": USES,
                "user_id": user_id,
                "memory_ids": wanted[start : start + USES_PER_MESSAGE],
            }
            self._client.send_message(QueueUrl=self._fold_queue_url, MessageBody=json.dumps(body))


def parse_uses_job(body: str) -> tuple[str, tuple[str, ...]] | None:
    """(user_id, memory_ids) of a uses job; None if the message is another kind of job.
    ValueError if it says it is a uses job but does not name its user and memories."""
    job = json.loads(body)
    if not isinstance(job, dict) or job.get("type") != USES:
        return None
    user_id, memory_ids = job.get("user_id"), job.get("memory_ids")
    if not isinstance(user_id, str) or not isinstance(memory_ids, list) or not memory_ids:
        raise ValueError("a uses job names its user and memories")
    if len(memory_ids) > USES_PER_MESSAGE:
        raise ValueError("a uses job names too many memories")
    try:
        rules.user_id(user_id)
        named = tuple(rules.opaque_id("memory_id", memory_id) for memory_id in memory_ids)
    except InvalidField as exc:
        raise ValueError("a uses job names its user and memories by id") from exc
    return user_id, named


def parse_profile_job(body: str) -> tuple[str, str] | None:
    """(user_id, persona) of a profile rebuild; None if the message is another kind of
    job. ValueError if it says it is one but does not name its user and persona."""
    job = json.loads(body)
    if not isinstance(job, dict) or job.get("type") != PROFILE:
        return None
    user_id, persona = job.get("user_id"), job.get("persona")
    if not isinstance(user_id, str) or not isinstance(persona, str):
        raise ValueError("a profile job names its user and persona")
    try:
        return rules.user_id(user_id), rules.persona(persona)
    except InvalidField as exc:
        raise ValueError("a profile job names its user and persona") from exc


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
