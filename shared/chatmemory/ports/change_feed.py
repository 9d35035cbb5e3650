"""Where change events go: EventBridge on AWS, an append-only JSON-lines file locally."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from chatmemory.domain.change_events import ChangeEvent


class ChangeFeedUnavailable(RuntimeError):
    """Some changes were not accepted; the caller publishes them again later (the relay
    from its cursor, the stream by retrying the record). The message names how many and
    the kind of failure, never an event's contents."""


class ChangeFeed(ABC):
    """Publishes change events, at least once each, in the order given."""

    @abstractmethod
    def publish(self, changes: Sequence[ChangeEvent]) -> None:
        """Deliver every change, or raise ChangeFeedUnavailable. A change may already
        have been delivered when it is published again; consumers keep the first of
        each `id`."""
