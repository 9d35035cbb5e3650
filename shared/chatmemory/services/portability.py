"""Export and import: a user's memories, every version of them, and their settings, out of
the store and back in (`GET /v1/memories/export`, `POST /v1/memories/import`).

The rules for ids and times are in `domain/portability.py`. An import is idempotent — the
same batch imported twice finds every row already there — and passes every text through
the write filter, as every door does; a row it cannot take is skipped with the reason,
never failing the rest.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from chatmemory.domain import fading, rules, write_filter
from chatmemory.domain.errors import (
    DomainError,
    InvalidField,
    PartlyApplied,
)
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.ids import belief_identity, new_event_id
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.portability import (
    EXPORT_PAGE_MAX,
    arrived,
    imported_memory_id,
    relearned,
    relinked,
    same_memory,
)
from chatmemory.domain.uses_origin import waits_for_job
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.pages import MAX_PAGE
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.profile import ProfileRebuilds

log = logging.getLogger(__name__)

# How many generations an imported id may move on (each one a "forget everything" or a
# delete of that id since): past it the row is skipped, never written on a random id, so
# a repeated import stays idempotent.
_MAX_GENERATIONS = 20


@dataclass(frozen=True, slots=True)
class ExportPage:
    """One page of a user's export: their settings, up to `limit` rows (every status,
    newest first), and the cursor of the next page (None on the last)."""

    exported_at: datetime
    settings: MemorySettings
    memories: list[Memory]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class SettingsImport:
    """The settings a document carries; each replaces the user's own."""

    enabled: bool
    note: str
    muted_personas: frozenset[str]
    timezone: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """A row the import did not take, and why (a code, then a sentence)."""

    index: int | None  # the row's place in the batch; None for the settings
    memory_id: str | None
    reason: str


SettingsOutcome = Literal["imported", "unchanged", "skipped"]


@dataclass(frozen=True, slots=True)
class ImportReport:
    imported: int
    unchanged: int
    skipped: tuple[Skipped, ...]
    settings: SettingsOutcome | None  # None when the batch sent no settings


class PortabilityService:
    """Exports a user's rows page by page, and imports a batch of them back.

    The rows of a batch are the user's own, built from the document under their id (the
    caller's token), with the ids they were exported with; `memories` is the service
    whose cap an import respects.
    """

    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        memories: MemoryService,
        indexer: MemoryIndexer | None = None,
        uses_jobs: Jobs | None = None,
        *,
        model_writes_uses: bool = True,
        profiles: ProfileRebuilds | None = None,
    ) -> None:
        self._profiles = profiles
        self._stores = stores
        self._clock = clock
        self._memories = memories
        self._settings = SettingsService(stores, clock)
        self._indexer = indexer
        self._uses_jobs = uses_jobs
        self._model_writes_uses = model_writes_uses

    # ---- export -----------------------------------------------------------------------

    def export_page(self, user_id: str, *, limit: int, cursor: str | None) -> ExportPage:
        """Up to `limit` of the user's rows of every status, newest first, read a store
        page at a time. A deleted row is never among them; nor is another user's."""
        rules.int_range("limit", limit, 1, EXPORT_PAGE_MAX)
        rows: list[Memory] = []
        query = MemoryQuery(status=None)
        while True:
            page = self._stores.memories.list_memories(
                user_id, query, limit=min(MAX_PAGE, limit - len(rows)), cursor=cursor
            )
            rows += page.items
            cursor = page.next_cursor
            if cursor is None or len(rows) >= limit:
                break
        return ExportPage(
            exported_at=self._clock.now(),
            settings=self._settings.get(user_id),
            memories=rows,
            next_cursor=cursor,
        )

    # ---- import -----------------------------------------------------------------------

    def import_batch(
        self,
        user_id: str,
        memories: Sequence[Memory],
        settings: SettingsImport | None = None,
    ) -> ImportReport:
        """Land each row that is not there yet; then the settings, if sent.

        Every row must be the user's (InvalidField otherwise: the caller validated the
        whole batch before anything is written). A row is skipped, with its reason, when
        its text or uses are refused by the write filter, its shelf life has passed, it
        was learned after now (any of the store's own times in the future), memory is off
        for its persona, or the store holds a different row on its id. A row lands fresh
        in retention (`domain/portability.arrived`). PartlyApplied when something fails
        once a row has landed: those rows stand, and the same batch again is safe.
        """
        if any(memory.user_id != user_id for memory in memories):
            raise InvalidField("memories", "every imported row must be the caller's")
        self._memories.charge_import(user_id, len(memories) + (settings is not None))
        now = self._clock.now()
        allowed = self._settings.get(user_id)
        beliefs = {
            memory.memory_id: (memory.persona, belief_identity(memory.category, memory.text))
            for memory in memories
            if memory.status is Status.ACTIVE
        }
        landing = _Landing(self._stores, user_id, beliefs, self._memories)
        forgotten = self._stores.tombstones.forgotten_before(user_id)
        written = [arrived(memory, now) for memory in relearned(memories, forgotten, now)]
        outcomes: list[str] = []
        try:
            for exported, memory in zip(memories, written, strict=True):
                outcomes.append(self._import_one(exported, memory, now, allowed, landing))
            self._after_landing(user_id, written, outcomes, landing)
            settings_outcome, refused = self._import_settings(user_id, settings)
        except Exception as exc:
            if _IMPORTED not in outcomes:
                raise
            raise self._partly_imported(outcomes.count(_IMPORTED), exc) from exc
        imported = outcomes.count(_IMPORTED)
        skipped = [
            Skipped(index, memories[index].memory_id, outcome)
            for index, outcome in enumerate(outcomes)
            if outcome not in (_IMPORTED, _UNCHANGED)
        ]
        log.info(
            "memories imported",
            extra={
                "imported": imported,
                "unchanged": outcomes.count(_UNCHANGED),
                "skipped": len(skipped),
            },
        )
        return ImportReport(
            imported=imported,
            unchanged=outcomes.count(_UNCHANGED),
            skipped=(*skipped, *refused),
            settings=settings_outcome,
        )

    def _after_landing(
        self,
        user_id: str,
        written: Sequence[Memory],
        outcomes: Sequence[str],
        landing: _Landing,
    ) -> None:
        """What the rows that landed make untrue is settled, the cap applied and their
        profiles asked for."""
        landed = [
            relinked(memory, landing.mapped)
            for memory, outcome in zip(written, outcomes, strict=True)
            if outcome == _IMPORTED
        ]
        if not landed:
            return
        self._settle(landed)
        self._guard_cap(user_id)
        if self._profiles is not None:
            for persona in sorted({memory.persona for memory in landed}):
                self._profiles.soon(user_id, persona)

    @staticmethod
    def _partly_imported(imported: int, failure: Exception) -> PartlyApplied:
        """The truthful answer to a batch that failed once some of its rows had landed:
        each row is its own write (a batch is too big for one transaction), so those
        stand; importing the same batch again finds them and lands the rest."""
        log.error(
            "import failed after rows landed",
            extra={"imported": imported, "error_type": type(failure).__name__},
        )
        return PartlyApplied(
            f"something went wrong on our side after {imported} memory(ies) of the batch "
            "were imported; they are kept, and importing the same batch again is safe"
        )

    def _import_one(
        self,
        exported: Memory,
        memory: Memory,
        now: datetime,
        allowed: MemorySettings,
        landing: _Landing,
    ) -> str:
        """What became of one row: imported, unchanged, or why it was skipped.

        `exported` is the row as the document says it; `memory` the same row with the
        times it is written with."""
        refusal = self._refusal(exported, now)
        if refusal is not None:
            return refusal
        target = landing.of(exported.memory_id)
        if target is None:
            return "conflict: this id was deleted here too many times"
        stored = self._stores.memories.get_memory(exported.user_id, target)
        if stored is not None or landing.believed_elsewhere(exported):
            return _UNCHANGED if stored is None or same_memory(stored, exported) else _CHANGED_HERE
        if not allowed.allows(exported.persona):
            return _SWITCHED_OFF
        if self._land(relinked(memory, landing.mapped)):
            return _IMPORTED
        # Another import of the same row may have landed it a moment ago.
        stored = self._stores.memories.get_memory(exported.user_id, target)
        return _UNCHANGED if stored is not None and same_memory(stored, exported) else _TAKEN

    def _settle(self, landed: Sequence[Memory]) -> None:
        """Every belief the import brought is compared with what the person believes, as
        every write is (MemoryService.settle): the older statement of one single-valued
        fact, or what an ending ends, becomes history — by when each was learned."""
        beliefs = sorted(
            (m for m in landed if m.status is Status.ACTIVE), key=lambda m: m.created_at
        )
        for persona in sorted({memory.persona for memory in beliefs}):
            query = MemoryQuery(persona=persona)
            held = {
                m.memory_id: m
                for m in self._stores.memories.iter_memories(beliefs[0].user_id, query)
            }
            for memory in (m for m in beliefs if m.persona == persona):
                current = held.get(memory.memory_id)
                if current is None:  # closed by an earlier one of the batch
                    continue
                for closed in self._memories.settle(
                    current, actor=Actor.USER, held=list(held.values())
                ):
                    held.pop(closed.memory_id, None)

    def _refusal(self, memory: Memory, now: datetime) -> str | None:
        """Why this row cannot be imported at all, or None."""
        if memory.is_expired(now):
            return "expired: its valid_until has passed"
        for name in _OWN_TIMES:
            value = getattr(memory, name)
            if value is not None and value > now:
                return f"validation_error: it was learned after now ({name} is in the future)"
        # every field the row keeps: its words, uses, key and category, and its ids
        refused = write_filter.memory_refusal(memory)
        return None if refused is None else f"{refused.code}: {refused}"

    def _land(self, memory: Memory) -> bool:
        """Write one row with its vectors and its add event; index it if it is a belief."""
        prepared = self._indexer.prepare(memory) if self._indexer else memory
        event = MemoryEvent(
            user_id=memory.user_id,
            memory_id=memory.memory_id,
            event_id=new_event_id(memory.created_at),
            op=Op.ADD,
            actor=Actor.USER,
            at=memory.created_at,
        )
        if not self._stores.memories.add_memory(prepared, [event]):
            return False
        if prepared.status is Status.ACTIVE:
            if self._indexer:
                self._indexer.publish(prepared)
            self._ask_for_uses(prepared)
        return True

    def _ask_for_uses(self, memory: Memory) -> None:
        """A belief imported without uses written for its words, or whose vectors could
        not be made, asks for them as a typed one does (off the request path; the row
        stands either way)."""
        if self._uses_jobs is None or not waits_for_job(memory, self._model_writes_uses):
            return
        try:
            self._uses_jobs.uses_later(memory.user_id, [memory.memory_id])
        except Exception as exc:
            log.warning("uses job not queued", extra={"error_type": type(exc).__name__})

    def _guard_cap(self, user_id: str) -> None:
        if len(self._stores.recall.memory_digests(user_id)) > fading.ACTIVE_CAP:
            self._memories.archive_over_cap(user_id)

    def _import_settings(
        self, user_id: str, wanted: SettingsImport | None
    ) -> tuple[SettingsOutcome | None, list[Skipped]]:
        if wanted is None:
            return None, []
        current = self._settings.get(user_id)
        same = dataclasses.replace(
            current,
            enabled=wanted.enabled,
            note=wanted.note,
            muted_personas=wanted.muted_personas,
            timezone=wanted.timezone,
        )
        if same == current:
            return "unchanged", []
        try:
            self._settings.update(
                user_id,
                enabled=wanted.enabled,
                note=wanted.note,
                muted_personas=wanted.muted_personas,
                timezone=wanted.timezone,
            )
        except DomainError as refused:
            return "skipped", [Skipped(None, None, f"{refused.code}: {refused}")]
        return "imported", []


#: the store's own times of a row, none of which can be later than the import
_OWN_TIMES = ("created_at", "updated_at", "last_used_at", "reinforced_at", "archived_at")
_IMPORTED = "imported"
_UNCHANGED = "unchanged"
_CHANGED_HERE = "conflict: this memory changed here since it was exported; the stored one is kept"
_SWITCHED_OFF = "memory_disabled: memory is switched off for this persona"
_TAKEN = "conflict: its id is held here by a memory that does not show"


class _Landing:
    """Where each exported id lands in this store (domain/portability.py), worked out
    once per id per batch.

    A belief in use (`beliefs`: id → persona and belief identity) whose id was deleted
    here lands where the same words typed now would (`MemoryService.identity`), so typing
    them again after the import finds it instead of making a second copy.
    """

    def __init__(
        self,
        stores: Stores,
        user_id: str,
        beliefs: Mapping[str, tuple[str, str]],
        memories: MemoryService,
    ) -> None:
        self._stores = stores
        self._user_id = user_id
        self._beliefs = beliefs
        self._memories = memories
        self._found: dict[str, str | None] = {}

    def of(self, original_id: str) -> str | None:
        """The first generation of this id the store never deleted (a belief's identity
        instead, once it was); None past the last."""
        if original_id not in self._found:
            self._found[original_id] = None
            for generation in range(_MAX_GENERATIONS):
                candidate = imported_memory_id(self._user_id, original_id, generation)
                if self._stores.tombstones.get_tombstone(self._user_id, candidate) is None:
                    self._found[original_id] = candidate
                    break
            if self._found[original_id] != original_id and original_id in self._beliefs:
                slot = self._slot(original_id)
                if slot is not None:
                    self._found[original_id] = slot[0]
        return self._found[original_id]

    def believed_elsewhere(self, exported: Memory) -> bool:
        """Whether the user already holds this belief, in the same words, on another id
        (typed again before the import): then the import has nothing to add."""
        slot = self._slot(exported.memory_id) if exported.memory_id in self._beliefs else None
        return slot is not None and slot[1] is not None and same_memory(slot[1], exported)

    def _slot(self, original_id: str) -> tuple[str, Memory | None] | None:
        persona, identity = self._beliefs[original_id]
        return self._memories.identity_slot(self._user_id, persona, identity)

    def mapped(self, original_id: str) -> str:
        """`of`, for a link: a link past the last generation keeps the id it had (it then
        names nothing here, as a link to a deleted row does)."""
        return self.of(original_id) or original_id
