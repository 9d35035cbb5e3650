"""Whether this deployment can serve: what `GET /v1/health` reports."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from chatmemory.ports.store_probe import StoreProbe, StoreUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HealthReport:
    """`ok`, or `degraded` with the reason (`storage_unavailable`)."""

    status: Literal["ok", "degraded"]
    reason: str | None = None


class HealthCheck:
    """Asks the store for real on every call (one small write locally, one read on AWS):
    a health that says ok while every write fails is worse than none."""

    def __init__(self, probe: StoreProbe) -> None:
        self._probe = probe

    def check(self) -> HealthReport:
        try:
            self._probe.check()
        except StoreUnavailable as exc:
            log.warning("the store is unavailable: %s", exc)  # a code, never any content
            return HealthReport("degraded", "storage_unavailable")
        return HealthReport("ok")
