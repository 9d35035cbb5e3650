"""Per-user quota counters (`domain/quotas.py`): one count per user, quota and minute.

Concurrency: many turns of one user may arrive at once (several containers, several
threads), so a take is one atomic step in the store — count and compare together — and
concurrent takes never let more through than the limit. A counter holds no text, only a
number, and it expires a few minutes after its window.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from chatmemory.domain.quotas import Quota, QuotaDecision, Stored


class QuotaStore(ABC):
    """The counters of every user's quota windows."""

    @abstractmethod
    def take(self, user_id: str, quota: Quota, now: datetime, cost: int = 1) -> QuotaDecision:
        """Count `cost` units against `user_id`'s `quota` in the window `now` falls in, if
        that keeps the window within `quota.per_minute`; allowed then. Otherwise nothing
        is counted and the decision says how many seconds remain in the window. A quota
        that is not enforced (`per_minute` 0) is allowed without counting."""

    @abstractmethod
    def stored(self, user_id: str) -> Stored:
        """How much the user has stored: every memory version (any status, history too)
        and every conversation message. A count, read by key (the store's own index),
        never the rows."""
