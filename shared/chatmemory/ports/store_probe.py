"""Whether the store can be used right now: what the health check asks of it."""

from __future__ import annotations

from abc import ABC, abstractmethod


class StoreUnavailable(Exception):
    """The store cannot be read or written right now. The message says how, for logs only."""


class StoreProbe(ABC):
    """One cheap, real use of the store, so health tells the truth about it."""

    @abstractmethod
    def check(self) -> None:
        """Return when the store can be used now; StoreUnavailable otherwise."""
