"""The user's switches: memory on or off, the note every persona reads, the personas
muted ("this persona forgets me"), and the time zone their days and hours fall in."""

from __future__ import annotations

import dataclasses

from chatmemory.domain import write_filter
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.quotas import WRITES
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores
from chatmemory.services.quotas import QuotaGuard


class SettingsService:
    def __init__(self, stores: Stores, clock: Clock, quotas: QuotaGuard | None = None) -> None:
        self._stores = stores
        self._clock = clock
        self._quotas = quotas

    def get(self, user_id: str) -> MemorySettings:
        return self._stores.user_state.get_settings(user_id)

    def update(
        self,
        user_id: str,
        *,
        enabled: bool | None = None,
        note: str | None = None,
        muted_personas: frozenset[str] | None = None,
        timezone: str | None = None,
    ) -> MemorySettings:
        """Change only what was sent. `enabled=False` and a mute take effect on the very
        next request, for every persona and room (seed 000 §5); rows stay until deleted.
        The time zone (an IANA name) decides the local hours a rhythm is sampled in."""
        current = self._stores.user_state.get_settings(user_id)
        if enabled is None and note is None and muted_personas is None and timezone is None:
            return current
        if self._quotas is not None and enabled is not False:
            # Switching memory off is never refused: it stops reads and writes at once.
            self._quotas.charge(user_id, WRITES)
        if note is not None:
            write_filter.check("note", note)  # the note goes into every prompt
        changed = dataclasses.replace(
            current,
            enabled=current.enabled if enabled is None else enabled,
            note=current.note if note is None else note,
            muted_personas=current.muted_personas if muted_personas is None else muted_personas,
            timezone=current.timezone if timezone is None else timezone,
            updated_at=self._clock.now(),
        )
        self._stores.user_state.put_settings(changed)
        return changed
