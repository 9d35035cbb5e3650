"""The per-user quotas, taken before any work that spends model money.

A service asks `QuotaGuard.charge` first thing, before it reads or writes anything: a
refused request raises `RateLimited` and leaves nothing behind. A quota store that
fails does not refuse anyone: the turn goes on and the failure is logged by its type
(a failure of the machinery around the model degrades, it never breaks a turn; the
API's throttles still bound the traffic).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from chatmemory.domain.errors import RateLimited
from chatmemory.domain.quotas import Quota
from chatmemory.ports.clock import Clock
from chatmemory.ports.quotas import QuotaStore

log = logging.getLogger(__name__)


class QuotaGuard:
    """Each user's quotas, with the limits the settings name (a limit of 0: no quota)."""

    def __init__(self, store: QuotaStore, clock: Clock, limits: Mapping[str, int]) -> None:
        self._store = store
        self._clock = clock
        self._quotas = {name: Quota(name, per_minute) for name, per_minute in limits.items()}

    def charge(self, user_id: str, quota: str, *, cost: int = 1) -> None:
        """Take `cost` units of `quota` for `user_id` in this minute; RateLimited (with
        the seconds to the next window) when the minute's limit is used up."""
        limited = self._quotas.get(quota)
        if limited is None or not limited.enforced:
            return
        now = self._clock.now()
        try:
            decision = self._store.take(user_id, limited, now, cost)
        except Exception as exc:  # fail open: the quota is a guard, not the service
            log.warning("quota not checked", extra={"error_type": type(exc).__name__})
            return
        if not decision.allowed:
            log.info("quota used up", extra={"quota": quota})
            raise RateLimited(quota, decision.retry_after)
