"""Beliefs with a shelf life (seed 003): how long a memory is still good for, and when it
fades out of use.

Retention R(t) = exp(-t / S), t in days since the last supporting evidence, S the
belief's stability in days. S starts from its category (facts live for years, states for
days: the table below) and grows with each new evidence by the spacing effect,
S' = S · (1 + k · (1 - R)): hearing again what was just said adds almost nothing, hearing
again what was about to be forgotten adds a lot.

Everything here is computed when a memory is read; no job scans the store. A belief is
*due* once its retention falls to one half (time to check it still holds) and *archived*
below 0.3: kept and listed, never retrieved, revived by new evidence.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from chatmemory.domain.memory import Kind, Memory, Status

#: below this a belief is archived: kept, listed under `status=archived`, never retrieved
ARCHIVE_BELOW = 0.3
#: at this a belief falls due: the moment to check it still holds
DUE_AT = 0.5
#: the spacing effect's gain k in S' = S · (1 + k · (1 - R))
SPACING_GAIN = 2.0
#: a memory no evidence touched for this long archives, whatever its stability
UNUSED_FOR = timedelta(days=365)
#: at most this many active memories per user are in use; at the cap the weakest archives
ACTIVE_CAP = 500
#: stability never grows past this (a century): a float must stay a float
MAX_STABILITY_DAYS = 36_500.0

# Stability in days per category: what the extractor and the API recommend (reviewed
# table; a category not named here takes its kind's). Facts about who someone is last
# years; what they are in the middle of lasts weeks; how they feel lasts days.
CATEGORY_STABILITY_DAYS: dict[str, float] = {
    "family": 3650.0,
    "relationships": 1825.0,
    "language": 3650.0,
    "education": 1825.0,
    "location": 1095.0,
    "home": 1095.0,
    "work": 730.0,
    "diet": 1095.0,
    "pets": 1825.0,
    "preferences": 730.0,
    "hobbies": 730.0,
    "tech": 365.0,
    "finance": 365.0,
    "goals": 180.0,
    "travel": 120.0,
    "schedule": 180.0,
    "rhythm": 30.0,
    "health": 365.0,
    "plans": 14.0,
    "mood": 3.0,
    "feelings": 3.0,
    "general": 365.0,
}
# The kinds that are states rather than facts: an event is over soon, a promise or an open
# loop is either kept or forgotten within weeks. A thread follows its own manners
# (seed 004) and never fades out here.
KIND_STABILITY_DAYS: dict[Kind, float] = {
    Kind.FACT: 1095.0,
    Kind.PREFERENCE: 730.0,
    Kind.RELATIONSHIP: 1825.0,
    Kind.EVENT: 30.0,
    Kind.PROMISE: 30.0,
    Kind.OPEN_LOOP: 14.0,
    Kind.THREAD: 90.0,
}
_STATE_KINDS = frozenset({Kind.EVENT, Kind.PROMISE, Kind.OPEN_LOOP})


#: kinds with a life of their own, kept until they are closed: a thread follows its manners
#: (seed 004), a promise is kept or released, an open loop answered — fading would let one
#: slip silently. Their shelf life still says when they are overdue.
KEPT_UNTIL_CLOSED = frozenset({Kind.THREAD, Kind.PROMISE, Kind.OPEN_LOOP})


class Fadable(Protocol):
    """What fading reads of a belief: a whole `Memory`, or the few fields a lean copy of
    one keeps (`ShelfLife`), so a read that holds no rows can still tell what is in use."""

    @property
    def kind(self) -> Kind: ...
    @property
    def category(self) -> str: ...
    @property
    def status(self) -> Status: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def stability_days(self) -> float | None: ...
    @property
    def reinforced_at(self) -> datetime | None: ...
    @property
    def last_used_at(self) -> datetime | None: ...
    @property
    def archived_at(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class ShelfLife:
    """The fields fading reads, without the rest of the row."""

    kind: Kind
    category: str
    created_at: datetime
    status: Status = Status.ACTIVE
    stability_days: float | None = None
    reinforced_at: datetime | None = None
    last_used_at: datetime | None = None
    archived_at: datetime | None = None

    @classmethod
    def of(cls, memory: Fadable) -> ShelfLife:
        return cls(
            kind=memory.kind,
            category=memory.category,
            created_at=memory.created_at,
            status=memory.status,
            stability_days=memory.stability_days,
            reinforced_at=memory.reinforced_at,
            last_used_at=memory.last_used_at,
            archived_at=memory.archived_at,
        )


class Archived(StrEnum):
    """Why a belief is out of use."""

    FADED = "faded"  # retention fell below ARCHIVE_BELOW
    UNUSED = "unused"  # no evidence for a year
    CAPPED = "capped"  # the weakest when the user reached ACTIVE_CAP


def default_stability(kind: Kind, category: str) -> float:
    """The stability a new belief starts with: a state kind keeps its own short life even
    in a long-lived category ("has a dentist appointment" is not a family fact)."""
    by_kind = KIND_STABILITY_DAYS[kind]
    if kind in _STATE_KINDS:
        return min(by_kind, CATEGORY_STABILITY_DAYS.get(category, by_kind))
    return CATEGORY_STABILITY_DAYS.get(category, by_kind)


def stability(memory: Fadable) -> float:
    """S in days: what evidence made it, else where its category starts."""
    if memory.stability_days is not None:
        return memory.stability_days
    return default_stability(memory.kind, memory.category)


def reinforced_at(memory: Fadable) -> datetime:
    """The last supporting evidence: a repeat, a use in a reply, or the write itself."""
    latest = memory.reinforced_at or memory.created_at
    if memory.last_used_at is not None and memory.last_used_at > latest:
        latest = memory.last_used_at
    return latest


def retention(memory: Fadable, now: datetime) -> float:
    """R = exp(-t / S), 1.0 for a thread (its manners decide when it rests)."""
    if memory.kind is Kind.THREAD:
        return 1.0
    days = max((now - reinforced_at(memory)).total_seconds(), 0.0) / 86_400
    return math.exp(-days / stability(memory))


def due_at(memory: Memory) -> datetime:
    """When the belief needs checking: its `valid_until` when it has one, else the moment
    its retention reaches one half."""
    if memory.valid_until is not None:
        return memory.valid_until
    days = stability(memory) * math.log(1 / DUE_AT)
    return reinforced_at(memory) + timedelta(days=min(days, MAX_STABILITY_DAYS))


def due_in(memory: Memory, now: datetime) -> timedelta:
    """How long it is still good for; negative once overdue."""
    return due_at(memory) - now


def archived(memory: Fadable, now: datetime) -> Archived | None:
    """Why an active belief is out of use now, or None while it is in use.

    History rows (superseded, closed) are never archived: they are already out of use; nor
    are the kinds kept until they are closed.
    """
    if memory.status is not Status.ACTIVE or memory.kind in KEPT_UNTIL_CLOSED:
        return None
    if memory.archived_at is not None and memory.archived_at <= now:
        return Archived.CAPPED
    if retention(memory, now) < ARCHIVE_BELOW:
        return Archived.FADED
    if now - reinforced_at(memory) >= UNUSED_FOR:
        return Archived.UNUSED
    return None


#: a belief whose stability is below this has a shelf life worth saying in a persona block
SHORT_LIVED_DAYS = 60.0


def short_lived(memory: Memory) -> bool:
    """A belief whose shelf life matters to a reply: one with a `valid_until`, or a state
    that lasts weeks rather than years (an event, a promise, a plan, a mood)."""
    if memory.kind is Kind.THREAD:
        return False  # its manners say when to raise it (seed 004)
    return memory.valid_until is not None or stability(memory) < SHORT_LIVED_DAYS


def out_of_use_at(memory: Fadable) -> datetime | None:
    """When an active belief will be archived if nothing new supports it (its retention
    falls below ARCHIVE_BELOW, or a year passes unused), or None if it never is."""
    if memory.status is not Status.ACTIVE or memory.kind in KEPT_UNTIL_CLOSED:
        return None
    if memory.archived_at is not None:
        return memory.archived_at
    days = stability(memory) * math.log(1 / ARCHIVE_BELOW)
    faded = reinforced_at(memory) + timedelta(days=min(days, MAX_STABILITY_DAYS))
    return min(faded, reinforced_at(memory) + UNUSED_FOR)


def in_use(memory: Fadable, now: datetime) -> bool:
    return memory.status is Status.ACTIVE and archived(memory, now) is None


def reinforced(memory: Memory, at: datetime) -> Memory:
    """The belief after a new supporting evidence at `at` (a repeat in chat, the router
    finding it said again, a use in a reply): stability grows by the spacing effect,
    retention starts again from 1, and an archived belief is revived."""
    current = stability(memory)
    r = retention(memory, at)
    grown = min(current * (1 + SPACING_GAIN * (1 - r)), MAX_STABILITY_DAYS)
    return dataclasses.replace(
        memory,
        stability_days=round(grown, 4),
        reinforced_at=max(at, reinforced_at(memory)),
        archived_at=None,
    )


def set_aside(memory: Memory, at: datetime) -> Memory:
    """The belief archived by the cap: kept, listed under `archived`, never retrieved."""
    return dataclasses.replace(memory, archived_at=at)


def strength(memory: Memory, now: datetime) -> float:
    """What the cap weighs: retention x importance (the weakest goes first)."""
    return retention(memory, now) * memory.importance


def over_cap(memories: Iterable[Memory], now: datetime, cap: int = ACTIVE_CAP) -> list[Memory]:
    """The weakest in-use beliefs beyond the cap, weakest first — what the guard archives
    so the user keeps at most `cap` in use. Threads do not count: they have their own cap."""
    using = [m for m in memories if m.kind is not Kind.THREAD and in_use(m, now)]
    surplus = len(using) - cap
    if surplus <= 0:
        return []
    using.sort(key=lambda m: (strength(m, now), m.created_at, m.memory_id))
    return using[:surplus]


def ranking_weight(memory: Memory, now: datetime) -> float:
    """How much retention weighs into ranking: a fresh belief keeps its full score, one
    about to archive keeps 80% of it — enough to order near ties, never to bury a match."""
    return 0.8 + 0.2 * retention(memory, now)


# ---- how a shelf life reads ----------------------------------------------------------------


# (below this many days, how to say it): a rough span as people say it
_SPANS: tuple[tuple[float, str], ...] = (
    (1.5, "a day"),
    (6.5, "{days} days"),
    (10.5, "a week"),
    (27, "{weeks} weeks"),
    (45, "a month"),
    (320, "{months} months"),
    (548, "a year"),
    (1826, "{years} years"),
)


def _amount(days: float) -> str:
    """ "a day", "3 days", "a week", "2 months", "years"."""
    for below, words in _SPANS:
        if days < below:
            return words.format(
                days=round(days),
                weeks=round(days / 7),
                months=round(days / 30.4),
                years=round(days / 365),
            )
    return "years"


def describe_due(left: timedelta) -> str:
    """ "2 days left", "due today", "overdue by a week": the shelf life as a reply can say it."""
    seconds = left.total_seconds()
    days = abs(seconds) / 86_400
    if seconds < 0:
        return f"overdue by {_amount(days)}"
    if days < 1:
        return "due today"
    return f"{_amount(days)} left"


def weighted(scored: Sequence[tuple[Memory, float]], now: datetime) -> list[tuple[Memory, float]]:
    """Scores weighed by retention, best first (stable for equal scores)."""
    out = [(memory, score * ranking_weight(memory, now)) for memory, score in scored]
    return sorted(out, key=lambda pair: -pair[1])
