"""Reading the audit log in the order it was written, from where a reader stopped.

The change feed's relay tails the log this way where no stream does it for us (SQLite,
locally; on AWS, DynamoDB Streams deliver the table's new audit items instead).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass

from chatmemory.domain.events import MemoryEvent


@dataclass(frozen=True, slots=True)
class SetAside:
    """An audit event the tail could not read: where it is, and why (a field and a rule,
    never what the row holds)."""

    position: int
    reason: str


@dataclass(frozen=True, slots=True)
class TailPage:
    """Audit events after a position, oldest first, and the position after the last;
    those among them that could not be read are set aside, never in the way of the rest."""

    events: tuple[MemoryEvent, ...]
    position: int
    set_aside: tuple[SetAside, ...] = ()


class AuditTail(ABC):
    """Every user's audit events in write order, and the one cursor the relay keeps."""

    @abstractmethod
    def position(self) -> int:
        """Where the relay stopped: every event up to here was published."""

    @abstractmethod
    def read_after(self, position: int, limit: int) -> TailPage:
        """Up to `limit` events written after `position`, in write order (a read across
        users: the relay's only); an event that cannot be read is in `set_aside`, and
        `position` moves past it as past the others."""

    @abstractmethod
    def advance(self, position: int) -> None:
        """Remember that everything up to `position` was published (never moves back)."""

    @abstractmethod
    def claimed(self) -> AbstractContextManager[bool]:
        """Whether this process is the one relaying now (True inside the block), so the
        server's worker and `chatmemory flush` never publish the same events at once."""
