"""The per-user quotas, taken before any work that spends model money.

A service asks `QuotaGuard.charge` first thing, before it reads or writes anything: a
refused request raises `RateLimited` and leaves nothing behind. A quota store that
fails does not refuse anyone: the turn goes on and the failure is logged by its type
(a failure of the machinery around the model degrades, it never breaks a turn; the
API's throttles still bound the traffic).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta

from chatmemory.domain.errors import RateLimited, StorageFull
from chatmemory.domain.quotas import STORING, Ceiling, Quota
from chatmemory.ports.clock import Clock
from chatmemory.ports.quotas import QuotaStore

log = logging.getLogger(__name__)

#: the users one process remembers counting (past it, it forgets them all and counts again)
_COUNTED_USERS = 10_000


#: how often one process counts what a user has stored, at most (the count reads every
#: key of their partition on DynamoDB: once a minute per writer is its whole cost)
CEILING_CHECKED_EVERY = timedelta(minutes=1)


class QuotaGuard:
    """Each user's quotas, with the limits the settings name (a limit of 0: no quota), and
    the ceiling on what one user may have stored."""

    def __init__(
        self,
        store: QuotaStore,
        clock: Clock,
        limits: Mapping[str, int],
        ceiling: Ceiling | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._quotas = {name: Quota(name, per_minute) for name, per_minute in limits.items()}
        self._ceiling = ceiling or Ceiling()
        self._counted: dict[str, datetime] = {}  # user → when their stored rows were counted
        self._lock = threading.Lock()

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
        if quota in STORING:
            self._within_ceiling(user_id, now)

    def _within_ceiling(self, user_id: str, now: datetime) -> None:
        """StorageFull when the user has stored as much as one account may (counted at
        most once a minute per process, so a steady writer pays one count a minute)."""
        with self._lock:
            last = self._counted.get(user_id)
            if last is not None and now - last < CEILING_CHECKED_EVERY:
                return
            if len(self._counted) > _COUNTED_USERS:
                self._counted.clear()  # a bounded memory of whom was counted lately
            self._counted[user_id] = now
        try:
            reached = self._ceiling.reached(self._store.stored(user_id))
        except Exception as exc:  # fail open, as the quota does
            log.warning("stored rows not counted", extra={"error_type": type(exc).__name__})
            return
        if reached is not None:
            with self._lock:
                self._counted.pop(user_id, None)  # count again on the next write
            log.warning("storage ceiling reached")
            raise StorageFull(reached)
