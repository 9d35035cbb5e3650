"""Rhythm on the chat path (seed 003): each stored turn samples when the user chats, and a
pattern seen on three distinct days becomes a belief.

After a private chat's exchange is stored, `RhythmKeeper.sample` reads the instant in the
user's time zone (a setting) and samples its local (date, hour) — nothing in a temporary
chat, with memory off, or with the persona muted; rooms are never sampled. A new slot
writes the state (compare-and-set, see `ports/rhythm.py`) and runs the promotion
(`domain/rhythm.py`): a new pattern is written through `MemoryService` as an inferred
belief of the default persona (category `rhythm`, key `rhythm_<pattern>`), so the write
filter, the index and the events apply, with `valid_until` 30 days on; a re-confirmation
moves that date on, on the same row. "Dropped after 30 days unconfirmed" is that date
passing: the stores hide an expired row from every read, and the state forgets the pattern
the day after. A belief the user deleted marks its pattern declined, never promoted again.

The chat turn never waits on this going wrong: every failure is logged (its kind only,
never text) and the sample is skipped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final

from chatmemory.domain import rules
from chatmemory.domain.errors import ConcurrentChange
from chatmemory.domain.rhythm import (
    CONFIRM_WITHIN_DAYS,
    Outcome,
    Promotion,
    Rhythm,
    belief_key,
    decline,
    describe,
    drop,
    observe,
    promote,
    remembered,
    stale,
)
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import MemoryService, NewMemory

log = logging.getLogger(__name__)

#: the category of every rhythm belief (its shelf life in `domain/fading.py` is 30 days too)
CATEGORY: Final = "rhythm"
#: the persona that holds rhythm beliefs: a rhythm is the person's, not one persona's
HOLDER: Final = rules.DEFAULT_PERSONA
#: how long a belief stays without re-confirmation
CONFIRM_FOR: Final = timedelta(days=CONFIRM_WITHIN_DAYS)
#: a mundane belief: the first to go when the user reaches the cap
IMPORTANCE: Final = 3
#: compare-and-set rounds before a sample is given up (the next turn samples again)
_TRIES: Final = 3


@dataclass(frozen=True, slots=True)
class Sampled:
    """What one sample did: whether it was a new slot, the beliefs written or kept, and the
    patterns dropped unconfirmed. Ids and keys only."""

    new_slot: bool = False
    believed: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()


NOTHING: Final = Sampled()


class RhythmKeeper:
    """Samples a user's turns into their rhythm, and keeps the beliefs it promoted."""

    def __init__(self, stores: Stores, memories: MemoryService) -> None:
        self._stores = stores
        self._memories = memories

    def sample(self, user_id: str, persona: str, at: datetime, *, temporary: bool) -> Sampled:
        """Sample a stored turn of a private chat with `persona` at `at`. Never raises: a
        failure is logged and the sample skipped."""
        if temporary:
            return NOTHING
        try:
            return self._sample(user_id, persona, at)
        except Exception as exc:
            log.warning("rhythm not sampled", extra={"error_type": type(exc).__name__})
            return NOTHING

    def _sample(self, user_id: str, persona: str, at: datetime) -> Sampled:
        settings = self._stores.user_state.get_settings(user_id)
        if not settings.allows(persona):
            return NOTHING
        local = at.astimezone(settings.zone)
        for _ in range(_TRIES):
            current = self._stores.rhythm.get_rhythm(user_id) or Rhythm()
            observed = observe(current, local)
            if observed is current:  # this hour of this day was sampled already
                return NOTHING
            state, done = observed, Sampled(new_slot=True)
            if settings.allows(HOLDER):  # else the samples wait until the holder may write
                state, done = self._promoted(user_id, observed, local.date(), at)
            try:
                self._stores.rhythm.put_rhythm(user_id, state)
            except ConcurrentChange:
                continue  # another turn wrote first: read its state and sample again
            return done
        log.info("rhythm kept changing; sample skipped")
        return NOTHING

    def _promoted(
        self, user_id: str, state: Rhythm, today: date, at: datetime
    ) -> tuple[Rhythm, Sampled]:
        """The state after promotion and the stale patterns' drop, and what that did; the
        state as observed when a belief could not be written (the next sample retries)."""
        try:
            state = self._declined_since(user_id, state)
            promoted, promotions = promote(state, today)
            believed: list[str] = []
            for promotion in promotions:
                promoted, memory_id = self._believe(user_id, promoted, promotion, at)
                if memory_id is not None:
                    believed.append(memory_id)
            gone = stale(promoted, today)
            return drop(promoted, gone), Sampled(True, tuple(believed), tuple(gone))
        except Exception as exc:
            log.warning("rhythm not promoted", extra={"error_type": type(exc).__name__})
            return state, Sampled(new_slot=True)

    def _declined_since(self, user_id: str, state: Rhythm) -> Rhythm:
        """The state with every pattern whose belief the user deleted marked declined."""
        for pattern in state.patterns:
            if pattern.declined or pattern.memory_id is None:
                continue
            if self._stores.tombstones.get_tombstone(user_id, pattern.memory_id) is not None:
                state = decline(state, pattern.key)
        return state

    def _believe(
        self, user_id: str, state: Rhythm, promotion: Promotion, at: datetime
    ) -> tuple[Rhythm, str | None]:
        """Write or keep the belief of one promotion; the state and the belief's id (None
        when the pattern is declined)."""
        if promotion.outcome is Outcome.DECLINED:
            return state, None
        key = promotion.pattern.key
        pattern = state.pattern(key) or promotion.pattern
        until = at + CONFIRM_FOR
        if pattern.memory_id is not None:
            kept = self._memories.reconfirm_rhythm(user_id, pattern.memory_id, until)
            if kept is not None:
                return state, kept.memory_id
            if self._stores.tombstones.get_tombstone(user_id, pattern.memory_id) is not None:
                return decline(state, key), None  # deleted a moment ago
            # else it expired just before its re-confirmation: believe it afresh
        memory = self._memories.remember_rhythm(
            user_id,
            NewMemory(
                text=describe(pattern),
                category=CATEGORY,
                persona=HOLDER,
                key=belief_key(pattern),
                valid_until=until,
                importance=IMPORTANCE,
            ),
        )
        return remembered(state, key, memory.memory_id), memory.memory_id
