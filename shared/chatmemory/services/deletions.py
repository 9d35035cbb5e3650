"""Deletes that touch more than one aggregate, each as one unit of work.

A tombstone and the rows it hides, an undone correction, "forget everything": each
writes to memories, deletion bookkeeping, events or profiles together, so each is
composed here from the stores' primitives and committed through the unit of work —
never half done, on every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from chatmemory.domain.errors import ConcurrentChange, InvalidField, MemoryNotFound
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.stores import Stores


def _check_owner(user_id: str, owners: Sequence[str]) -> None:
    if any(owner != user_id for owner in owners):
        raise InvalidField("user_id", "a row may only be written under its own user")


class Deletions:
    """Tombstoning, undoing a correction and forgetting everything, atomically."""

    def __init__(self, stores: Stores) -> None:
        self._stores = stores

    def tombstone_memories(
        self, user_id: str, tombstones: Sequence[Tombstone], events: Sequence[MemoryEvent] = ()
    ) -> None:
        """Hide every row named in the tombstones' `versions` and keep the tombstones.

        Idempotent: tombstoning an id twice keeps the first tombstone. The rows are hidden
        before any tombstone lands, so a tombstone never exists while its rows show —
        even when a batch is too big for one DynamoDB transaction.
        """
        _check_owner(user_id, [t.user_id for t in tombstones] + [e.user_id for e in events])
        firsts: dict[str, Tombstone] = {}
        for tombstone in tombstones:
            firsts.setdefault(tombstone.memory_id, tombstone)
        versions = list(dict.fromkeys(v for t in firsts.values() for v in t.versions))
        stores = self._stores

        def delete() -> None:
            stores.visibility.hide_memories(user_id, versions)
            stores.tombstones.add_tombstones(user_id, list(firsts.values()))
            stores.events.add_events(events)

        stores.unit_of_work.run(delete, retry=True, what="they were being deleted")

    def revert_supersede(
        self, user_id: str, tombstone: Tombstone, events: Sequence[MemoryEvent] = ()
    ) -> Memory:
        """Undo a supersede: hide the newer row (`tombstone.memory_id`, its only version)
        behind the tombstone and make the row it superseded active again; the
        reinstated row.

        MemoryNotFound if the newer row is not visible; ConcurrentChange if it is not
        active or supersedes nothing, or if the older row is not visible or no longer
        superseded by it. In every failure nothing is written.
        """
        _check_owner(user_id, [tombstone.user_id] + [e.user_id for e in events])
        if tombstone.versions != (tombstone.memory_id,):
            raise InvalidField("versions", "an undone supersede hides only the newer row")
        memories = self._stores.memories

        def revert() -> Memory:
            newer = memories.get_memory(user_id, tombstone.memory_id)
            if newer is None:
                raise MemoryNotFound(tombstone.memory_id)
            if newer.status is not Status.ACTIVE:
                raise ConcurrentChange(f"memory is {newer.status}, not active")
            if newer.supersedes is None:
                raise ConcurrentChange("the memory is not a correction of another")
            older = memories.get_memory(user_id, newer.supersedes)
            if older is None:
                raise ConcurrentChange("the earlier version is gone")
            reinstated = older.reinstated_from(newer, tombstone.deleted_at)
            self._stores.visibility.reinstate_memory(reinstated, superseded_by=newer.memory_id)
            self._stores.visibility.hide_active_memory(user_id, newer.memory_id)
            self._stores.tombstones.add_tombstones(user_id, [tombstone], first_only=False)
            self._stores.events.add_events(events)
            return reinstated

        return self._stores.unit_of_work.run(revert, what="the change was being undone")

    def forget_everything(self, user_id: str, at: datetime) -> None:
        """In one write, hide every memory created up to `at` and delete every profile."""
        stores = self._stores

        def forget() -> None:
            stores.tombstones.raise_forget_watermark(user_id, at)
            stores.user_state.delete_profiles(user_id)

        try:
            stores.unit_of_work.run(forget, what="everything was being forgotten")
        except ConcurrentChange:
            # A later "forget" is already in place and hides more; the profiles still go.
            stores.user_state.delete_profiles(user_id)
