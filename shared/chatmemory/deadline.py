"""How long the current request may still take: its Lambda's remaining time, less a margin.

A model call that outlives its function ends as the gateway's bare 503, with nothing in the
contract's shape. So every entry point that has a Lambda context sets the deadline here,
and the model adapter gives each call only the time that is left (and no retry that could
not finish), so a slow model ends as `502 model_unavailable` while the function can still
answer. Kept per request in a context variable: concurrent requests (the local server's
threads) each see their own, and code outside a request sees none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from time import monotonic

#: kept back from the Lambda's remaining time to map the failure and write the answer
ANSWER_MARGIN_SECONDS = 1.5

_deadline: ContextVar[float | None] = ContextVar("chatmemory_deadline", default=None)


@contextmanager
def request_deadline(remaining_seconds: float | None) -> Iterator[None]:
    """Within the block, work must end `remaining_seconds` from now (less the margin);
    None leaves it unbounded."""
    deadline = (
        None
        if remaining_seconds is None
        else monotonic() + remaining_seconds - ANSWER_MARGIN_SECONDS
    )
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def time_left() -> float | None:
    """Seconds until the current request's deadline (≤ 0 once past); None if unbounded."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - monotonic()


def remaining_seconds_of(context: object) -> float | None:
    """A Lambda context's remaining time in seconds; None for anything that has none."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return None
    try:
        return float(remaining()) / 1000
    except (TypeError, ValueError):
        return None
