"""When a conversation goes quiet, learn from it: the idle trigger and the daily sweep.

Every user message re-arms the conversation's idle timer. When a timer fires, the check
starts the write pipeline only if no newer message arrived since — a newer one armed its
own timer — so a burst of messages is read once, after the last (a real debounce, not one
run per message). How long "quiet" is adapts to how much is known (domain/cadence.py): a
cold profile is read after 2 minutes, a warm one after 10. The turn that arms the timer and
the check it fires judge cold or warm by the same rows — the persona's active memories
written by the time the user's last message was said — so they agree on the delay: an
early fire is never taken for quiet, and the last message's own fire always is.

A message asking to remember the whole conversation arms its timer for now, and the check
starts the pipeline at once in deep mode (the stronger model, a larger budget). The daily
sweep catches conversations whose cursor fell behind (a lost timer, a failed run); the
scheduled sweep reads them in deep mode too.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from chatmemory.domain.cadence import (
    COLD_DELAY,
    COLD_MEMORIES,
    WARM_DELAY,
    asks_to_remember_conversation,
    idle_delay,
)
from chatmemory.domain.conversation import Conversation, Role
from chatmemory.domain.extraction import run_id_for
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import PipelineStarter
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)

#: the warm delay: how long a known user's conversation must be quiet (CHATMEMORY_IDLE_SECONDS)
IDLE_AFTER = WARM_DELAY


class IdleDelays:
    """How long a conversation must be quiet before it is read, cold or warm.

    The count behind it is bounded: the persona's active memories, newest first, a page of
    COLD_MEMORIES rows at a time, stopping once the profile is known to be warm — one small
    read per turn however many memories the user has (no turn reads them all for this).
    """

    def __init__(
        self, stores: Stores, *, warm: timedelta = WARM_DELAY, cold: timedelta = COLD_DELAY
    ) -> None:
        self._stores = stores
        self.warm = warm
        self.cold = min(cold, warm)

    def for_timer(self, user_id: str, persona: str, said: datetime) -> timedelta:
        """The delay a turn arms the timer with; the warm one if the count fails, so the
        check (which then counts, or falls back to cold) never waits longer than its timer."""
        try:
            return self._after(user_id, persona, said)
        except Exception as exc:
            log.warning("memory count failed; warm delay", extra={"error_type": type(exc).__name__})
            return self.warm

    def for_check(self, user_id: str, persona: str, said: datetime) -> timedelta:
        """The delay a check holds the conversation to; the cold one if the count fails."""
        try:
            return self._after(user_id, persona, said)
        except Exception as exc:
            log.warning("memory count failed; cold delay", extra={"error_type": type(exc).__name__})
            return self.cold

    def known_by(self, user_id: str, persona: str, said: datetime) -> int:
        """How many of the persona's active memories of the user were written by `said`,
        counted up to COLD_MEMORIES (all the rule needs).

        Rows written after `said` — this turn's own saves, a run that finished meanwhile —
        do not count, so the turn and the check count the same rows; rows deleted or
        replaced meanwhile only make the check's delay shorter, never longer.
        """
        known = 0
        cursor: str | None = None
        while True:
            page = self._stores.memories.list_memories(
                user_id, MemoryQuery(persona=persona), limit=COLD_MEMORIES, cursor=cursor
            )
            known += sum(1 for memory in page.items if memory.created_at <= said)
            if known >= COLD_MEMORIES or page.next_cursor is None:
                return min(known, COLD_MEMORIES)
            cursor = page.next_cursor

    def _after(self, user_id: str, persona: str, said: datetime) -> timedelta:
        if self.cold == self.warm:  # nothing to tell apart: no read
            return self.warm
        known = self.known_by(user_id, persona, said)
        return idle_delay(known, cold=self.cold, warm=self.warm)


class IdleTrigger:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        starter: PipelineStarter,
        *,
        idle_after: timedelta = IDLE_AFTER,
        idle_cold_after: timedelta = COLD_DELAY,
    ) -> None:
        self._stores = stores
        self._clock = clock
        self._starter = starter
        self.delays = IdleDelays(stores, warm=idle_after, cold=idle_cold_after)
        self.idle_after = idle_after

    def check(
        self, user_id: str, conversation_id: str, *, now_or_never: bool = False, deep: bool = False
    ) -> bool:
        """Start the pipeline if the conversation is quiet and has unread user messages.

        `now_or_never`: skip the quiet period (`chatmemory flush`). `deep`: read in deep
        mode (the daily sweep); a last message asking to remember the conversation skips
        the quiet period and reads in deep mode as well.
        """
        conversation = self._stores.conversations.get_conversation(user_id, conversation_id)
        if conversation is None or conversation.temporary:
            return False
        if conversation.extracted_upto_seq >= conversation.last_seq:
            return False
        asked = self._asked_to_remember(conversation)
        if not (now_or_never or self._quiet(conversation)):
            if not asked:
                return False  # a newer message re-armed the timer; that timer will fire
            if self._already_read(conversation):
                return False  # the asked-for run is under way: an earlier timer fired
        return self._starter.start_write(
            user_id, conversation_id, conversation.last_seq, deep=deep or asked
        )

    def sweep(self, *, now_or_never: bool = False, deep: bool = False, batch: int = 100) -> int:
        """Start the pipeline for every conversation whose cursor fell behind; how many.

        `deep`: read them in deep mode (the scheduled daily sweep; a flush reads as the
        timers would have)."""
        # Quiet for the cold delay at least; each check holds its conversation to its own.
        cutoff = self._clock.now() - (timedelta(0) if now_or_never else self.delays.cold)
        started = 0
        seen: set[tuple[str, str]] = set()
        while True:
            pending = [
                p
                for p in self._stores.conversations.pending_extractions(
                    said_before=cutoff, limit=batch
                )
                if p not in seen
            ]
            if not pending:
                return started
            for user_id, conversation_id in pending:
                seen.add((user_id, conversation_id))
                try:
                    started += self.check(
                        user_id, conversation_id, now_or_never=now_or_never, deep=deep
                    )
                except Exception as exc:  # one conversation's failure never stops the sweep
                    log.warning(
                        "sweep could not start a run", extra={"error_type": type(exc).__name__}
                    )

    def _quiet(self, conversation: Conversation) -> bool:
        """Quiet for the delay its last message's timer was armed with (no count needed
        before the cold delay has passed, nor after the warm one)."""
        said = conversation.last_user_message_at
        if said is None:
            return True
        waited = self._clock.now() - said
        if waited < self.delays.cold:
            return False
        if waited >= self.delays.warm:
            return True
        delay = self.delays.for_check(conversation.user_id, conversation.persona, said)
        return waited >= delay

    def _asked_to_remember(self, conversation: Conversation) -> bool:
        """Whether the last unread user message asks to remember the conversation (one
        exchange read: the user's message and the reply stored with it)."""
        recent = self._stores.conversations.list_messages(
            conversation.user_id,
            conversation.conversation_id,
            after_seq=max(conversation.extracted_upto_seq, conversation.last_seq - 2),
            upto_seq=conversation.last_seq,
        )
        said = [message for message in recent if message.role is Role.USER]
        return bool(said) and asks_to_remember_conversation(said[-1].content)

    def _already_read(self, conversation: Conversation) -> bool:
        """Whether this slice's run exists (its extraction is done; routing may still run)."""
        run_id = run_id_for(
            conversation.user_id, conversation.conversation_id, conversation.last_seq
        )
        return self._stores.runs.get_extraction_run(conversation.user_id, run_id) is not None
