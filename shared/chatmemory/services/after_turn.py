"""What follows a stored exchange, the same whether the chat ran here or was observed.

A chat turn (`services/chat.py`) and a turn a client reports after it happened
(`services/observe.py`) store a user message and a reply; from there on they are one
thing: said with memory off (or the persona muted) it is never read later, even once
memory is back on; otherwise the conversation's idle timer is re-armed so the background
write learns from it once it goes quiet, a full window is folded, and the rhythm is
sampled. Nothing here can fail the turn: it is stored already.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain.cadence import asks_to_remember_conversation
from chatmemory.domain.conversation import Role
from chatmemory.ports.jobs import Jobs
from chatmemory.ports.stores import Stores
from chatmemory.services.folding import fold_due, turns_of
from chatmemory.services.idle import IdleDelays
from chatmemory.services.rhythm import RhythmKeeper

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredExchange:
    """An exchange just stored: where, by whom, and what memory may do with it."""

    user_id: str
    conversation_id: str
    persona: str  # who answered this turn (its rhythm)
    writes_for: str  # the conversation's persona: the one the background write learns for
    message: str  # the user's words ("remember this conversation" arms the timer for now)
    last_seq: int  # the reply's seq
    read_upto: int  # the extraction cursor as the turn found it
    memory_on: bool  # False: memory off, the persona muted, or a temporary chat
    temporary: bool
    at: datetime


class AfterTurn:
    """The bookkeeping after an exchange is stored: the cursor, the timers, the rhythm."""

    def __init__(
        self, stores: Stores, jobs: Jobs, idle: IdleDelays, rhythm: RhythmKeeper | None = None
    ) -> None:
        self._stores = stores
        self._jobs = jobs
        self._idle = idle
        self._rhythm = rhythm

    def follow(self, exchange: StoredExchange) -> None:
        if not exchange.memory_on and not exchange.temporary:
            # Said while memory was off: never read later, even once it is back on.
            self._stores.conversations.advance_extraction(
                exchange.user_id,
                exchange.conversation_id,
                upto_seq=exchange.last_seq,
                expected_upto_seq=exchange.read_upto,
            )
        self._background(exchange)
        if self._rhythm is not None and exchange.memory_on:  # when they chat (seed 003)
            try:
                self._rhythm.sample(
                    exchange.user_id, exchange.persona, exchange.at, temporary=exchange.temporary
                )
            except Exception as exc:  # the turn is stored: a rhythm never fails it
                log.warning("rhythm not sampled", extra={"error_type": type(exc).__name__})

    def _background(self, exchange: StoredExchange) -> None:
        """Queue the turn's background work. The turn is stored; a queue that fails only
        delays that work (the daily sweep catches it up) and never fails the turn."""
        try:
            self._maybe_fold(exchange.user_id, exchange.conversation_id)
            if exchange.memory_on:  # every user message re-arms the conversation's idle timer
                self._jobs.idle_later(
                    exchange.user_id, exchange.conversation_id, self._idle_due(exchange)
                )
        except Exception as exc:
            log.warning("background work not queued", extra={"error_type": type(exc).__name__})

    def _idle_due(self, exchange: StoredExchange) -> datetime:
        """When the idle timer fires: at once for "remember this conversation" (its check
        then reads it in deep mode), else once quiet for the cold or the warm delay."""
        said = exchange.at
        if asks_to_remember_conversation(exchange.message):
            return said
        return said + self._idle.for_timer(exchange.user_id, exchange.writes_for, said)

    def _maybe_fold(self, user_id: str, conversation_id: str) -> None:
        conversation = self._stores.conversations.get_conversation(user_id, conversation_id)
        if conversation is None:
            return
        window = self._stores.conversations.list_messages(
            user_id, conversation_id, after_seq=conversation.summary_upto_seq
        )
        user_turns = sum(1 for turn in turns_of(window) if turn[0].role is Role.USER)
        if fold_due(user_turns):
            self._jobs.fold_later(user_id, conversation_id)
