"""Clocks: the system clock in production, a hand-driven one for tests and the bench."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chatmemory.domain.time import require_utc
from chatmemory.ports.clock import Clock


class SystemClock(Clock):
    def now(self) -> datetime:
        return datetime.now(UTC)


class ShiftedClock(Clock):
    """The system clock, a fixed span ahead: a local server that pretends it is N days
    later, so a developer can watch threads ripen, sleep and go quiet without waiting."""

    def __init__(self, ahead: timedelta) -> None:
        self._ahead = ahead

    def now(self) -> datetime:
        return datetime.now(UTC) + self._ahead


class ManualClock(Clock):
    """Time moves only when told to, so expiry and idle timers are tested without sleeping."""

    def __init__(self, start: datetime) -> None:
        self._now = require_utc("start", start)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> datetime:
        self._now += delta
        return self._now

    def set(self, instant: datetime) -> None:
        self._now = require_utc("instant", instant)
