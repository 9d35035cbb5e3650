"""When a conversation goes quiet, learn from it: the idle trigger and the daily sweep.

Every user message re-arms the conversation's idle timer (10 minutes by default). When a
timer fires, the check starts the write pipeline only if no newer message arrived since —
a newer one armed its own timer — so a burst of messages is read once, after the last
(a real debounce, not one run per message). A daily sweep catches conversations whose
cursor fell behind (a lost timer, a failed run).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import PipelineStarter
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)

IDLE_AFTER = timedelta(minutes=10)


class IdleTrigger:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        starter: PipelineStarter,
        *,
        idle_after: timedelta = IDLE_AFTER,
    ) -> None:
        self._stores = stores
        self._clock = clock
        self._starter = starter
        self.idle_after = idle_after

    def check(self, user_id: str, conversation_id: str, *, now_or_never: bool = False) -> bool:
        """Start the pipeline if the conversation is quiet and has unread user messages.

        `now_or_never`: skip the quiet period (`chatmemory flush`).
        """
        conversation = self._stores.conversations.get_conversation(user_id, conversation_id)
        if conversation is None or conversation.temporary:
            return False
        if conversation.extracted_upto_seq >= conversation.last_seq:
            return False
        said = conversation.last_user_message_at
        quiet = said is None or said + self.idle_after <= self._clock.now()
        if not quiet and not now_or_never:
            return False  # a newer message re-armed the timer; that timer will fire
        return self._starter.start_write(user_id, conversation_id, conversation.last_seq)

    def sweep(self, *, now_or_never: bool = False, batch: int = 100) -> int:
        """Start the pipeline for every conversation whose cursor fell behind; how many."""
        cutoff = self._clock.now() - (timedelta(0) if now_or_never else self.idle_after)
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
                    started += self.check(user_id, conversation_id, now_or_never=now_or_never)
                except Exception as exc:  # one conversation's failure never stops the sweep
                    log.warning(
                        "sweep could not start a run", extra={"error_type": type(exc).__name__}
                    )
