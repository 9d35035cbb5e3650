"""The audit log of what happened to each memory (ids and times only)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from chatmemory.domain.events import MemoryEvent


class EventLog(ABC):
    """Append-only memory events; memory writes add theirs in the same atomic write."""

    @abstractmethod
    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        """Append audit events. Re-adding an event id changes nothing."""

    @abstractmethod
    def list_events(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        """A memory's events, oldest first."""
