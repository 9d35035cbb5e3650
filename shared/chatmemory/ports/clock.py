"""Where "now" comes from."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime


class Clock(ABC):
    """Where "now" comes from, so tests drive time instead of sleeping."""

    @abstractmethod
    def now(self) -> datetime:
        """The current instant, aware UTC."""
