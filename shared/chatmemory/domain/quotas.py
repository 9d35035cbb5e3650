"""Per-user quotas: how many turns a user may take in a minute, and when they may go on.

A quota counts in fixed one-minute windows (12:03:00 up to 12:04:00, UTC): each user has
one counter per quota per window, and a new window starts from nothing. Fixed windows
need one counter and one atomic increment per turn, so the check is a single write on
either store; the price is that a user may burst up to twice the limit across a window's
edge, which bounds spend just as well. A refused turn is told how many seconds remain in
its window: that is when the next turn is allowed.

The limits come from the settings (`config.py`); a limit of 0 switches the quota off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from chatmemory.domain.time import require_utc

WINDOW = timedelta(minutes=1)
#: what a turn that asks to remember the whole conversation counts as: it starts a deep
#: read of the conversation (the model's stronger tier, a larger budget) right away
DEEP_WRITE_COST = 5

MODEL_TURNS = "model_turns"
"""The quota of turns that call the chat model: a chat turn (JSON or streamed), a room
turn a user asks for in their own private chat."""

OBSERVED_TURNS = "observed_turns"
"""The quota of turns reported after they happened (`POST /v1/observe`): no model call
of their own, but each one re-arms the background write, which does call one."""

WRITES = "writes"
"""The quota of what a user writes into their memory by hand: a memory typed or
corrected, a row imported (one each), the settings changed. Deleting is never counted:
nothing may stop a person from erasing their data."""

IMPORTED_ROWS = "imported_rows"
"""The quota of rows imported a minute (`POST /v1/memories/import`), apart from the writes
by hand: a whole export comes back in a few batches at once."""

ROOM_LINES = "room_lines"
"""The quota of lines posted to rooms, taken from each human who speaks them (the user
posting in their own private chat, or each `u:` speaker of the lines the app posts)."""

#: the quotas whose writes keep growing what is stored, so the ceiling is checked beside
STORING = frozenset({WRITES, IMPORTED_ROWS, ROOM_LINES, MODEL_TURNS, OBSERVED_TURNS})


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store holds for one user: every memory version it keeps (history too),
    and every message of their conversations."""

    memory_rows: int
    messages: int


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The most one user may have stored (issue: one account filled the disk for
    everyone); far above what a person makes, far below a full disk."""

    memory_rows: int = 20_000
    messages: int = 200_000

    def reached(self, stored: Stored) -> str | None:
        """What `stored` is at or past the ceiling in, or None."""
        if self.memory_rows and stored.memory_rows >= self.memory_rows:
            return f"{stored.memory_rows} memory versions of at most {self.memory_rows}"
        if self.messages and stored.messages >= self.messages:
            return f"{stored.messages} conversation messages of at most {self.messages}"
        return None


@dataclass(frozen=True, slots=True)
class Quota:
    """One quota class and its limit per window; `per_minute` 0 means no limit."""

    name: str
    per_minute: int

    def __post_init__(self) -> None:
        if not self.name or "#" in self.name:
            raise ValueError("a quota's name is a non-empty word without '#'")
        if self.per_minute < 0:
            raise ValueError("a quota's limit is 0 (off) or more")

    @property
    def enforced(self) -> bool:
        return self.per_minute > 0

    def cost_of(self, units: int) -> int:
        """What `units` take from this quota: never more than the whole limit, so a
        costly turn is still possible in an empty window."""
        return max(1, min(units, self.per_minute)) if self.enforced else units


@dataclass(frozen=True, slots=True)
class QuotaDecision:
    """The answer to one take: allowed or not, and (when not) the seconds to wait."""

    allowed: bool
    retry_after: int = 0  # whole seconds until the window ends; 0 when allowed


def window_start(now: datetime) -> datetime:
    """The start of the window `now` falls in (the minute, UTC)."""
    return require_utc("now", now).replace(second=0, microsecond=0)


def window_end(now: datetime) -> datetime:
    """When the window `now` falls in ends, and the next one begins."""
    return window_start(now) + WINDOW


def window_key(now: datetime) -> str:
    """The window's name in the stores: its start to the minute, so it sorts by time."""
    return window_start(now).strftime("%Y-%m-%dT%H:%MZ")


def seconds_to_window_end(now: datetime) -> int:
    """Whole seconds until the next window, rounded up and at least 1: a client that
    waits this long is in a new window."""
    left = (window_end(now) - require_utc("now", now)).total_seconds()
    return max(1, math.ceil(left))


def allowed() -> QuotaDecision:
    return QuotaDecision(allowed=True)


def refused(now: datetime) -> QuotaDecision:
    return QuotaDecision(allowed=False, retry_after=seconds_to_window_end(now))


def would_allow(taken: int, cost: int, quota: Quota) -> bool:
    """Whether a window that has `taken` units may give `cost` more under `quota`."""
    return not quota.enforced or taken + cost <= quota.per_minute
