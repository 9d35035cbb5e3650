"""Behaviour becomes a belief (seed 003): when someone chats, sampled passively, promoted to
a belief only once it repeats.

Each message's instant, read in the user's time zone, is one sample of a local (date,
hour) slot — at most one per slot, however many messages fill it — counted into 7 x 24
counters (weekday x hour). A pattern is a centre hour around which samples fall, within
±1 hour, on at least three distinct days: it becomes a belief ("Usually chats late on
weekday evenings (around 22:00)."), and the samples it rests on are consumed, so no sample
is promoted twice. Three more days of the same pattern re-confirm it; one not re-confirmed
within 30 days is dropped. A pattern whose belief the user deleted is declined: never
promoted again.

Pure: the caller reads the instant in the user's zone, stores the state and writes the
belief. Only the last 30 days of samples are kept, so the state stays small.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from typing import Any, Final

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField

#: distinct days a pattern needs before it becomes a belief (and again to re-confirm it)
DAYS_TO_PROMOTE: Final = 3
#: how far from a pattern's centre hour a sample may fall and still count for it
TOLERANCE_HOURS: Final = 1
#: a belief not re-confirmed within this many days is dropped
CONFIRM_WITHIN_DAYS: Final = 30
#: samples older than this many days (before the newest one) are forgotten
KEEP_DAYS: Final = 30
WEEKDAYS: Final = 7
HOURS: Final = 24

Counters = tuple[tuple[int, ...], ...]
EMPTY_COUNTERS: Final[Counters] = tuple((0,) * HOURS for _ in range(WEEKDAYS))


class DayClass(StrEnum):
    """Which days a pattern keeps to."""

    WEEKDAYS = "weekdays"
    WEEKENDS = "weekends"
    EVERY_DAY = "daily"


@dataclass(frozen=True, slots=True, order=True)
class Slot:
    """One local (date, hour): the unit a message is sampled into."""

    day: date
    hour: int

    def __post_init__(self) -> None:
        if not isinstance(self.day, date) or isinstance(self.day, datetime):
            raise InvalidField("rhythm", "a slot's day must be a date")
        _hour(self.hour)

    def text(self) -> str:
        """`2026-12-01T22`: how a slot is stored."""
        return f"{self.day.isoformat()}T{self.hour:02d}"

    @classmethod
    def parse(cls, text: str) -> Slot:
        day, _, hour = str(text).partition("T")
        try:
            return cls(date.fromisoformat(day), int(hour))
        except ValueError as exc:
            raise InvalidField("rhythm", "a slot must read YYYY-MM-DDTHH") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class Pattern:
    """A promoted pattern: the belief it became (its memory id, once written), the last
    local day it was confirmed, and whether the user declined it by deleting that belief."""

    day_class: DayClass
    hour: int
    confirmed_on: date
    memory_id: str | None = None
    declined: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "day_class", _day_class_of(self.day_class))
        _hour(self.hour)
        if self.memory_id is not None:
            rules.opaque_id("memory_id", self.memory_id)
        if not isinstance(self.declined, bool):
            raise InvalidField("rhythm", "declined must be true or false")

    @property
    def key(self) -> str:
        """`weekdays_22`: the pattern's name (its belief's key is `rhythm_<key>`)."""
        return f"{self.day_class.value}_{self.hour:02d}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rhythm:
    """One user's rhythm: the counters, the samples not yet consumed (`observations`), the
    consumed ones still inside the kept window (so a slot is never sampled twice), and the
    promoted patterns by key. `version` is how many times the store has written it (0:
    never): the compare-and-set token of the next write."""

    counters: Counters = EMPTY_COUNTERS
    observations: frozenset[Slot] = frozenset()
    consumed: frozenset[Slot] = frozenset()
    patterns: tuple[Pattern, ...] = ()
    version: int = 0

    def __post_init__(self) -> None:
        counters = tuple(tuple(row) for row in self.counters)
        shaped = len(counters) == WEEKDAYS and all(len(row) == HOURS for row in counters)
        counted = all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0
            for row in counters
            for n in row
        )
        if not shaped or not counted:
            raise InvalidField("rhythm", "counters must be 7 x 24 counts")
        object.__setattr__(self, "counters", counters)
        object.__setattr__(self, "observations", frozenset(self.observations))
        object.__setattr__(self, "consumed", frozenset(self.consumed))
        patterns = tuple(sorted(self.patterns, key=lambda p: p.key))
        if len({p.key for p in patterns}) != len(patterns):
            raise InvalidField("rhythm", "a pattern is kept once")
        object.__setattr__(self, "patterns", patterns)
        rules.int_range("version", self.version, 0)

    def pattern(self, key: str) -> Pattern | None:
        return next((p for p in self.patterns if p.key == key), None)

    def sampled(self, slot: Slot) -> bool:
        """Whether this slot was already sampled (consumed or not)."""
        return slot in self.observations or slot in self.consumed


class Outcome(StrEnum):
    """What a pattern found in the samples does."""

    NEW = "new"  # a belief to write
    CONFIRMED = "confirmed"  # a known belief seen again: it stays for another 30 days
    DECLINED = "declined"  # the user deleted a belief like it: nothing is written


@dataclass(frozen=True, slots=True)
class Promotion:
    """A pattern the samples showed, as it now stands in the state, and the days it rests on."""

    pattern: Pattern
    outcome: Outcome
    days: tuple[date, ...]


# ---- sampling ---------------------------------------------------------------------------


def observe(state: Rhythm, local: datetime) -> Rhythm:
    """The state with one more sample at `local` (an instant read in the user's zone); the
    same state if its (date, hour) was sampled already. Samples older than `KEEP_DAYS`
    before the newest are dropped."""
    slot = Slot(local.date(), local.hour)
    if state.sampled(slot):
        return state
    newest = max((s.day for s in (*state.observations, *state.consumed)), default=slot.day)
    horizon = max(newest, slot.day) - timedelta(days=KEEP_DAYS)
    if slot.day < horizon:
        return state  # older than anything kept: it could never count
    counters = [list(row) for row in state.counters]
    counters[slot.day.weekday()][slot.hour] += 1
    return dataclasses.replace(
        state,
        counters=tuple(tuple(row) for row in counters),
        observations=frozenset(s for s in (*state.observations, slot) if s.day >= horizon),
        consumed=frozenset(s for s in state.consumed if s.day >= horizon),
    )


# ---- promotion --------------------------------------------------------------------------


def promote(state: Rhythm, today: date) -> tuple[Rhythm, list[Promotion]]:
    """Every pattern the unconsumed samples show, strongest first, each consuming the
    samples it rests on. A pattern like a known one (same days, centre within ±1 hour)
    re-confirms it on `today`; one near a declined pattern (any days) stays declined; any
    other is recorded as new, with no memory id until its belief is written."""
    observations = set(state.observations)
    consumed = set(state.consumed)
    patterns = {p.key: p for p in state.patterns}
    promotions: list[Promotion] = []
    while (found := _strongest(observations)) is not None:
        hour, slots, days = found
        observations -= slots
        consumed |= slots
        day_class = _day_class(days)
        declined = _near(patterns.values(), hour, declined=True)
        if declined:
            promotions.append(Promotion(declined[0], Outcome.DECLINED, days))
            continue
        known = [p for p in _near(patterns.values(), hour) if p.day_class is day_class]
        if known:
            pattern = dataclasses.replace(known[0], confirmed_on=max(known[0].confirmed_on, today))
            outcome = Outcome.CONFIRMED
        else:
            pattern = Pattern(day_class=day_class, hour=hour, confirmed_on=today)
            outcome = Outcome.NEW
        patterns[pattern.key] = pattern
        promotions.append(Promotion(pattern, outcome, days))
    promoted = dataclasses.replace(
        state,
        observations=frozenset(observations),
        consumed=frozenset(consumed),
        patterns=tuple(patterns.values()),
    )
    return promoted, promotions


def stale(state: Rhythm, today: date) -> list[str]:
    """Keys of the patterns not confirmed within `CONFIRM_WITHIN_DAYS` of `today` (a
    declined pattern never goes stale: it stays declined)."""
    limit = today - timedelta(days=CONFIRM_WITHIN_DAYS)
    return [p.key for p in state.patterns if not p.declined and p.confirmed_on < limit]


def remembered(state: Rhythm, key: str, memory_id: str) -> Rhythm:
    """The state with the belief `memory_id` written for pattern `key`."""
    return _changed(state, key, memory_id=memory_id)


def decline(state: Rhythm, key: str) -> Rhythm:
    """The state with pattern `key` declined: its belief was deleted, so it never returns."""
    return _changed(state, key, declined=True)


def drop(state: Rhythm, keys: Iterable[str]) -> Rhythm:
    """The state without these patterns (gone stale)."""
    gone = set(keys)
    return dataclasses.replace(
        state, patterns=tuple(p for p in state.patterns if p.key not in gone)
    )


# ---- the belief's sentence --------------------------------------------------------------

# (part of the day, the days) → how the sentence says it
_PHRASES: Final[Mapping[tuple[str, DayClass], str]] = {
    ("night", DayClass.WEEKDAYS): "late at night on weekdays",
    ("morning", DayClass.WEEKDAYS): "on weekday mornings",
    ("afternoon", DayClass.WEEKDAYS): "on weekday afternoons",
    ("evening", DayClass.WEEKDAYS): "on weekday evenings",
    ("late evening", DayClass.WEEKDAYS): "late on weekday evenings",
    ("night", DayClass.WEEKENDS): "late at night at weekends",
    ("morning", DayClass.WEEKENDS): "in the morning at weekends",
    ("afternoon", DayClass.WEEKENDS): "in the afternoon at weekends",
    ("evening", DayClass.WEEKENDS): "in the evening at weekends",
    ("late evening", DayClass.WEEKENDS): "late in the evening at weekends",
    ("night", DayClass.EVERY_DAY): "late at night",
    ("morning", DayClass.EVERY_DAY): "in the morning",
    ("afternoon", DayClass.EVERY_DAY): "in the afternoon",
    ("evening", DayClass.EVERY_DAY): "in the evening",
    ("late evening", DayClass.EVERY_DAY): "late in the evening",
}


def describe(pattern: Pattern) -> str:
    """The belief a pattern becomes: one standalone third-person sentence, no name."""
    phrase = _PHRASES[(_part_of_day(pattern.hour), pattern.day_class)]
    return f"Usually chats {phrase} (around {pattern.hour:02d}:00)."


def belief_key(pattern: Pattern) -> str:
    """The key of the belief a pattern becomes (`rhythm_weekdays_22`)."""
    return f"rhythm_{pattern.key}"


# ---- the stored form --------------------------------------------------------------------


def as_record(state: Rhythm) -> dict[str, Any]:
    """The state as plain JSON values (the version is the store's, kept beside it)."""
    return {
        "counters": [list(row) for row in state.counters],
        "observations": sorted(s.text() for s in state.observations),
        "consumed": sorted(s.text() for s in state.consumed),
        "patterns": [
            {
                "day_class": p.day_class.value,
                "hour": p.hour,
                "confirmed_on": p.confirmed_on.isoformat(),
                "memory_id": p.memory_id,
                "declined": p.declined,
            }
            for p in state.patterns
        ],
    }


def from_record(record: Mapping[str, Any], version: int) -> Rhythm:
    """The state `as_record` wrote; InvalidField("rhythm") if it is not one."""
    try:
        return Rhythm(
            counters=tuple(tuple(row) for row in record["counters"]),
            observations=frozenset(Slot.parse(s) for s in record["observations"]),
            consumed=frozenset(Slot.parse(s) for s in record["consumed"]),
            patterns=tuple(
                Pattern(
                    day_class=p["day_class"],
                    hour=p["hour"],
                    confirmed_on=date.fromisoformat(p["confirmed_on"]),
                    memory_id=p["memory_id"],
                    declined=p["declined"],
                )
                for p in record["patterns"]
            ),
            version=version,
        )
    except (KeyError, TypeError, ValueError) as exc:  # InvalidField is a ValueError too
        raise InvalidField("rhythm", "is not a stored rhythm") from exc


# ---- small pieces -----------------------------------------------------------------------


def _hour(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < HOURS:
        raise InvalidField("rhythm", "an hour is 0..23")
    return value


def _day_class_of(value: object) -> DayClass:
    try:
        return DayClass(str(value))
    except ValueError as exc:
        raise InvalidField("rhythm", "unknown day class") from exc


def _offset(hour: int, centre: int) -> int:
    """Hours from `centre` to `hour` the short way round the clock (-12..11)."""
    return (hour - centre + 12) % HOURS - 12


def _anchor(slot: Slot, centre: int) -> date | None:
    """The day whose `centre` hour the slot is near, or None if it is not within ±1 hour:
    00:xx counts for the evening before when the centre is 23:00, so one late night is
    one day, never two."""
    offset = _offset(slot.hour, centre)
    if abs(offset) > TOLERANCE_HOURS:
        return None
    wall = datetime.combine(slot.day, time(slot.hour)) - timedelta(hours=offset)
    return wall.date()


def _strongest(observations: set[Slot]) -> tuple[int, set[Slot], tuple[date, ...]] | None:
    """The centre hour with the most distinct days among the samples (then the most at that
    very hour, then the most samples, then the earliest hour), its samples and its days;
    None when no hour reaches `DAYS_TO_PROMOTE` days."""
    best: tuple[tuple[int, int, int, int], int, set[Slot], tuple[date, ...]] | None = None
    for centre in range(HOURS):
        near = {slot: _anchor(slot, centre) for slot in observations}
        slots = {slot for slot, day in near.items() if day is not None}
        days = tuple(sorted({day for day in near.values() if day is not None}))
        if len(days) < DAYS_TO_PROMOTE:
            continue
        exact = sum(1 for slot in slots if slot.hour == centre)
        rank = (len(days), exact, len(slots), -centre)
        if best is None or rank > best[0]:
            best = (rank, centre, slots, days)
    return None if best is None else (best[1], best[2], best[3])


def _day_class(days: Iterable[date]) -> DayClass:
    weekend = {day.weekday() >= 5 for day in days}
    if weekend == {False}:
        return DayClass.WEEKDAYS
    if weekend == {True}:
        return DayClass.WEEKENDS
    return DayClass.EVERY_DAY


def _near(patterns: Iterable[Pattern], hour: int, *, declined: bool = False) -> list[Pattern]:
    """Patterns (declined ones, or the others) centred within ±1 hour, nearest first."""
    near = [
        p
        for p in patterns
        if p.declined is declined and abs(_offset(p.hour, hour)) <= TOLERANCE_HOURS
    ]
    return sorted(near, key=lambda p: (abs(_offset(p.hour, hour)), p.key))


def _part_of_day(hour: int) -> str:
    if hour < 5:
        return "night"
    if hour < 12:
        return "morning"
    if hour < 17:
        return "afternoon"
    if hour < 21:
        return "evening"
    return "late evening"


def _changed(state: Rhythm, key: str, **changes: Any) -> Rhythm:
    pattern = state.pattern(key)
    if pattern is None:
        return state
    others = tuple(p for p in state.patterns if p.key != key)
    return dataclasses.replace(state, patterns=(*others, dataclasses.replace(pattern, **changes)))
