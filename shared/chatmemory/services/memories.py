"""The user's controls over what is remembered: see, add, correct, delete, forget everything."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import fading, rules, standing, write_filter
from chatmemory.domain.endings import ending_of, ends
from chatmemory.domain.errors import (
    ConcurrentChange,
    InvalidField,
    MemoryDisabled,
    MemoryNotFound,
)
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.ids import (
    IdentityKey,
    belief_identity,
    new_event_id,
    new_memory_id,
    normalise_for_identity,
    parse_message_id,
)
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status, as_it_stood, believed_at
from chatmemory.domain.purge import MAX_NAMED, PurgeRequest
from chatmemory.domain.quotas import IMPORTED_ROWS, WRITES
from chatmemory.domain.tombstone import MemoryTrace, Tombstone
from chatmemory.domain.uses import category_by_words
from chatmemory.domain.uses_origin import carried_over, waits_for_job
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs, PurgeStarter
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.pages import MAX_PAGE, Page
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.profile import ProfileRebuilds
from chatmemory.services.quotas import QuotaGuard
from chatmemory.services.reach_cut import cut_reach_to

log = logging.getLogger(__name__)

# How many deterministic ids to try before giving up on determinism for this belief.
_MAX_ID_GENERATIONS = 20
# Tombstones are written in batches during "forget everything".
_TOMBSTONE_BATCH = 25


@dataclass(frozen=True, slots=True)
class NewMemory:
    """What a user (or the model, on their behalf) asks to remember."""

    text: str
    # None: the caller left it out. The same words then land on the belief already held,
    # whatever its category; a new one is filed under the category its words name.
    category: str | None = None
    persona: str = rules.DEFAULT_PERSONA
    valid_until: datetime | None = None
    key: str | None = None
    source_message_id: str | None = None
    room_id: str | None = None
    importance: int = 5
    uses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Created:
    memory: Memory
    created: bool  # False when the same belief was already active (an idempotent replay)


class MemoryService:
    """Writes every change with its memory event; the write filter (secrets, instruction-shaped
    text) runs before anything else, on every path.

    With an indexer, every new version is written with its vectors and published to the
    vector index; deletes withdraw it (the read path filters tombstones regardless). With a
    purge starter, every delete then starts the purge of its other copies. With uses jobs
    (given only when the model can write uses), a memory the user typed, the chat saved or
    a correction made, stored with uses not written for its words, asks for its own off
    the request path (services/uses.py): the write itself never waits on a model.
    """

    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        indexer: MemoryIndexer | None = None,
        purges: PurgeStarter | None = None,
        uses_jobs: Jobs | None = None,
        *,
        model_writes_uses: bool = True,
        profiles: ProfileRebuilds | None = None,
        identities: IdentityKey | Callable[[], IdentityKey] | None = None,
        quotas: QuotaGuard | None = None,
    ) -> None:
        self._quotas = quotas
        self._profiles = profiles
        # A callable is asked on the first id (a Lambda that never makes one never reads
        # the deployment's key).
        self._identities = identities or IdentityKey()
        self._stores = stores
        self._deletions = Deletions(stores)
        self._clock = clock
        self._indexer = indexer
        self._purges = purges
        self._uses_jobs = uses_jobs
        self._model_writes_uses = model_writes_uses

    # ---- reads ----------------------------------------------------------------------

    def list_memories(
        self,
        user_id: str,
        *,
        status: Status | None = Status.ACTIVE,
        archived: bool = False,
        persona: str | None = None,
        kind: Kind | None = None,
        as_of: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Memory]:
        """A page of the user's memories, newest first.

        `status=ACTIVE` lists the beliefs in use (`archived=True`: the active ones out of
        use, faded or set aside by the cap). `as_of` lists instead what was believed at
        that instant, each row as it stood then (a deleted row is gone from every past).
        A filtered page is filled from as many store pages as it takes.
        """
        rules.int_range("limit", limit, 1, MAX_PAGE)
        if persona is not None:
            rules.persona(persona)
        now = self._clock.now()
        if as_of is not None:
            if as_of > now:
                raise InvalidField("as_of", "must not be in the future")
            query = MemoryQuery(status=None, persona=persona, kind=kind)

            def then(memory: Memory) -> Memory | None:
                return as_it_stood(memory, as_of) if believed_at(memory, as_of) else None

            return self._filtered_page(user_id, query, then, limit, cursor)
        query = MemoryQuery(status=status, persona=persona, kind=kind)
        if status is not Status.ACTIVE:
            return self._stores.memories.list_memories(user_id, query, limit=limit, cursor=cursor)

        def in_use_or_archived(memory: Memory) -> Memory | None:
            out_of_use = fading.archived(memory, now) is not None
            return memory if out_of_use == archived else None

        return self._filtered_page(user_id, query, in_use_or_archived, limit, cursor)

    def _filtered_page(
        self,
        user_id: str,
        query: MemoryQuery,
        keep: Callable[[Memory], Memory | None],
        limit: int,
        cursor: str | None,
    ) -> Page[Memory]:
        """Up to `limit` rows `keep` maps to a row, and the store's cursor after them.

        Each store page asks only for as many rows as are still missing, so a page never
        reads past the cursor it returns.
        """
        kept: list[Memory] = []
        while True:
            page = self._stores.memories.list_memories(
                user_id, query, limit=limit - len(kept), cursor=cursor
            )
            kept += [row for row in map(keep, page.items) if row is not None]
            cursor = page.next_cursor
            if cursor is None or len(kept) >= limit:
                return Page(items=kept, next_cursor=cursor)

    def get(self, user_id: str, memory_id: str) -> Memory:
        memory = self._stores.memories.get_memory(user_id, memory_id)
        if memory is None:
            raise MemoryNotFound(memory_id)
        return memory

    def history(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        """Events of this memory and of the versions it superseded, oldest first.

        Events hold ids and times only, so a deleted memory's history may still be shown;
        an id this user never had is not found.
        """
        events = list(self._stores.events.list_events(user_id, memory_id))
        memory = self._stores.memories.get_memory(user_id, memory_id)
        if memory is None and not events:
            raise MemoryNotFound(memory_id)
        seen = {memory_id}
        ancestor = memory.supersedes if memory else None
        while ancestor and ancestor not in seen:
            seen.add(ancestor)
            events.extend(self._stores.events.list_events(user_id, ancestor))
            older = self._stores.memories.get_memory(user_id, ancestor)
            ancestor = older.supersedes if older else None
        return sorted(events, key=lambda event: (event.at, event.event_id))

    # ---- writes ---------------------------------------------------------------------

    def create(self, user_id: str, new: NewMemory, *, actor: Actor = Actor.USER) -> Created:
        """Store a user-stated memory; the same belief stated again returns the first one.

        A belief's identity never rests on a field the caller left out: the same words
        (as identities compare them) already held for this persona are that belief, in
        whichever category it was filed; otherwise an omitted category is the one the
        words name (`uses.category_by_words`), then `general`."""
        self._require_enabled(user_id, new.persona)
        write_filter.check_all(
            write_filter.memory_fields(new.text, uses=new.uses, key=new.key, category=new.category)
        )
        now = self._clock.now()
        if new.valid_until is not None and new.valid_until <= now:
            raise InvalidField("valid_until", "must be in the future")
        if actor is Actor.USER:
            self._charge(user_id)
        held = self._held_in_these_words(user_id, new.persona, new.text)
        if held is not None:
            return Created(self.reinforce(held), created=False)
        category = new.category or category_by_words(new.text) or rules.DEFAULT_CATEGORY
        new = dataclasses.replace(new, category=category)
        memory, created = self._land(
            user_id,
            new.persona,
            belief_identity(category, new.text),
            lambda memory_id: self._prepared(self._build(user_id, memory_id, new, now)),
            actor,
        )
        if not created:
            # The same belief stated again: new evidence, which keeps it (and revives it if
            # it had been archived).
            return Created(self.reinforce(memory), created=False)
        self.settle(memory, actor=actor)
        self._guard_cap(user_id)
        self._ask_for_uses(memory)
        return Created(memory, created=True)

    def _held_in_these_words(self, user_id: str, persona: str, text: str) -> Memory | None:
        """The active belief of this persona already said in these words, if any."""
        said = normalise_for_identity(text)
        return next(
            (
                memory
                for memory in self._stores.memories.iter_memories(
                    user_id, MemoryQuery(persona=persona)
                )
                if normalise_for_identity(memory.text) == said
            ),
            None,
        )

    def _land(
        self,
        user_id: str,
        persona: str,
        identity: str,
        build: Callable[[str], Memory],
        actor: Actor,
    ) -> tuple[Memory, bool]:
        """Write the row `build` makes on this belief's id, or return the active row already
        there (False). An id deleted, made history or held by a hidden row (an expired one)
        is never reused: the identity moves on a generation."""
        for generation in range(_MAX_ID_GENERATIONS):
            memory_id = self.memory_id(user_id, persona, identity, generation)
            if self._stores.tombstones.get_tombstone(user_id, memory_id) is not None:
                continue
            existing = self._stores.memories.get_memory(user_id, memory_id)
            if existing is not None:
                if existing.status is Status.ACTIVE:
                    return existing, False
                continue
            memory = build(memory_id)
            if self._add(memory, actor):
                return memory, True
        memory = build(new_memory_id())
        self._add(memory, actor)
        return memory, True

    def _add(self, memory: Memory, actor: Actor) -> bool:
        event = self._event(memory, Op.ADD, actor, memory.created_at)
        if not self._stores.memories.add_memory(memory, [event]):
            return False
        self._publish(memory)
        self._changed(memory)
        return True

    def _charge(self, user_id: str, rows: int = 1, quota: str = WRITES) -> None:
        """A write by hand takes from the user's quota (RateLimited, StorageFull) before
        anything is written; a delete never does."""
        if self._quotas is not None:
            self._quotas.charge(user_id, quota, cost=rows)

    def charge_import(self, user_id: str, rows: int) -> None:
        """An import's rows taken from the user's quota before any of them is written."""
        self._charge(user_id, rows, IMPORTED_ROWS)

    def _changed(self, memory: Memory | MemoryTrace) -> None:
        """A memory of this persona changed: its profile is rebuilt once the writes of the
        moment are done (services/profile.py), off the request path."""
        if self._profiles is not None:
            self._profiles.soon(memory.user_id, memory.persona)

    def memory_id(self, user_id: str, persona: str, identity: str, generation: int = 0) -> str:
        """The id `identity` lands on in this deployment (keyed: domain/ids.py IdentityKey)."""
        if not isinstance(self._identities, IdentityKey):
            self._identities = self._identities()
        return self._identities.memory_id(user_id, persona, identity, generation)

    def identity(self, user_id: str, persona: str, identity: str) -> tuple[str, Memory | None]:
        """The id this belief lands on (uuid5, seed 003), and the active row already there.

        An id that was deleted or became history is never reused: the identity moves on a
        generation, so the same words said after a correction or a delete are a new row.
        """
        return self.identity_slot(user_id, persona, identity) or (new_memory_id(), None)

    def identity_slot(
        self, user_id: str, persona: str, identity: str
    ) -> tuple[str, Memory | None] | None:
        """`identity`, or None once every generation is spent (where an import, which must
        land the same row on the same id each time, never takes a random one)."""
        for generation in range(_MAX_ID_GENERATIONS):
            memory_id = self.memory_id(user_id, persona, identity, generation)
            if self._stores.tombstones.get_tombstone(user_id, memory_id) is not None:
                continue
            existing = self._stores.memories.get_memory(user_id, memory_id)
            if existing is None:
                # Free unless a row no read shows holds it (an older version of a deleted
                # memory has no tombstone of its own).
                if self._stores.memories.id_in_use(user_id, memory_id):
                    continue
                return memory_id, None
            if existing.status is Status.ACTIVE:
                return memory_id, existing
        return None

    def reinforce(self, memory: Memory) -> Memory:
        """New supporting evidence for an active belief: it lasts longer (the spacing
        effect) and an archived one is back in use."""
        now = self._clock.now()
        reinforced = fading.reinforced(memory, now)
        self._stores.memories.set_fading(memory.user_id, [reinforced])
        if fading.archived(memory, now) is not None:
            self._changed(reinforced)  # back in use: it may belong in the profile again
        return reinforced

    def _guard_cap(self, user_id: str) -> None:
        """After a write: the lean count first (no text, no vectors), the full read only
        once a user is past the cap."""
        if len(self._stores.recall.memory_digests(user_id)) > fading.ACTIVE_CAP:
            self.archive_over_cap(user_id)

    def archive_over_cap(self, user_id: str) -> list[str]:
        """The pollution guard (seed 002): at most `fading.ACTIVE_CAP` beliefs in use per
        user; past it the weakest (retention x importance) are archived — kept, listed,
        revivable — never dropped. Returns the ids set aside."""
        now = self._clock.now()
        rows = list(self._stores.memories.iter_memories(user_id, MemoryQuery()))
        surplus = fading.over_cap(rows, now, cap=fading.ACTIVE_CAP)
        if surplus:
            self._stores.memories.set_fading(
                user_id, [fading.set_aside(memory, now) for memory in surplus]
            )
            log.info("memories archived at the cap", extra={"archived": len(surplus)})
            for memory in {memory.persona: memory for memory in surplus}.values():
                self._changed(memory)
        return [memory.memory_id for memory in surplus]

    def remember_from_chat(
        self,
        user_id: str,
        new: NewMemory,
        *,
        replaces: str | None = None,
        actor: Actor = Actor.MODEL,
    ) -> Memory:
        """What the user asked to keep during a chat, written on that turn.

        A correction supersedes the memory it replaces — the one the model named, else an
        active memory with the same key (newest wins; the user's words beat an inference).
        """
        self._require_enabled(user_id, new.persona)
        write_filter.check_all(
            write_filter.memory_fields(new.text, uses=new.uses, key=new.key, category=new.category)
        )
        target = self._replaced(user_id, new, replaces)
        if target is None:
            return self.create(user_id, new, actor=actor).memory
        if normalise_for_identity(target.text) == normalise_for_identity(new.text):
            return target
        landing, held = self._replacement_id(target, new.category or target.category, new.text)
        if held is not None:
            return self._settle_on(target, held, actor=actor)
        now = self._clock.now()
        replacement = dataclasses.replace(
            self._build(user_id, landing, new, now), supersedes=target.memory_id
        )
        written = self.supersede(target, replacement, actor=actor)
        self._ask_for_uses(written)
        return written

    def _replacement_id(
        self, target: Memory, category: str, text: str
    ) -> tuple[str, Memory | None]:
        """The id a correction of `target` lands on (its belief's identity), and another
        active row already holding those words, if any. A correction that only changes
        what the identity ignores (case, a date) is a new version of the same belief: a
        fresh id, since the target still holds its own."""
        landing, held = self.identity(
            target.user_id, target.persona, belief_identity(category, text)
        )
        if held is not None and held.memory_id == target.memory_id:
            return new_memory_id(), None
        return landing, held

    def _settle_on(self, target: Memory, held: Memory, *, actor: Actor) -> Memory:
        """Corrected into a belief already held: that row stays the one record (new
        evidence for it), and the corrected one stops being believed, closed by it."""
        self.close(target, actor=actor, closed_by=held.memory_id)
        return self.reinforce(held)

    # ---- writes from the background pipeline (actor: extractor) --------------------------

    def add_extracted(self, memory: Memory) -> bool:
        """Write a new memory the pipeline decided to ADD; False if it is already there
        (a re-run of the same step lands on the same id)."""
        self._require_enabled(memory.user_id, memory.persona)
        write_filter.check_memory(memory)
        if not self._add(self._prepared(memory), Actor.EXTRACTOR):
            return False
        self.settle(memory, actor=Actor.EXTRACTOR)
        self._guard_cap(memory.user_id)
        return True

    def settle(
        self, memory: Memory, *, actor: Actor, held: Sequence[Memory] | None = None
    ) -> list[Memory]:
        """What a new memory makes untrue becomes history under it (seed 000: closed,
        never deleted; `closed_by` the new memory): the beliefs an ending ends ("Sold
        their flat in Xuhui." closes "Owns a flat in Xuhui.", domain/endings.py) and an
        older statement of the same single-valued fact ("Lives in Lisbon now." closes
        "Lives in Pune.", domain/standing.py), however either was stored. Newest wins: a
        statement older than a belief it contradicts (an import of last year's) is the
        one closed. Every path that adds or corrects a memory runs it; what it closed.
        `held`: the persona's active memories, when the caller read them already (a batch)."""
        ending = ending_of(memory.text)
        if ending is None and standing.key_of(memory) is None:
            return []
        if held is None:
            held = list(
                self._stores.memories.iter_memories(
                    memory.user_id, MemoryQuery(persona=memory.persona)
                )
            )
        untrue = [
            row
            for row in held
            if standing.replaces(memory, row) or (ending is not None and ends(ending, memory, row))
        ]
        newer = [row for row in untrue if row.created_at > memory.created_at]
        if newer:
            late = self.close_under(memory, max(newer, key=lambda row: row.created_at), actor=actor)
            return [late] if late is not None else []
        closed = [self.close_under(row, memory, actor=actor) for row in untrue]
        return [row for row in closed if row is not None]

    def close_under(self, target: Memory, ending: Memory | None, *, actor: Actor) -> Memory | None:
        """`target` stopped being true, as `ending` (the memory that says so, already
        written, or None) tells: closed under it unless the ending closed it already."""
        try:
            return self.close(target, actor=actor, closed_by=ending.memory_id if ending else None)
        except (ConcurrentChange, MemoryNotFound):
            return None

    def supersede(self, target: Memory, replacement: Memory, *, actor: Actor) -> Memory:
        """Replace `target` with `replacement` (which must say it supersedes it): the old
        row becomes history, linked to the new one. ConcurrentChange if it moved on."""
        write_filter.check_memory(replacement)
        prepared = self._prepared(replacement, replaced=target)
        at = replacement.created_at
        events = [
            self._event(target, Op.UPDATE, actor, at, related=prepared.memory_id),
            self._event(prepared, Op.ADD, actor, at, related=target.memory_id),
        ]
        self._stores.memories.supersede_memory(target.user_id, target.memory_id, prepared, events)
        self._withdraw(target.user_id, [target.memory_id])
        self._publish(prepared)
        self.settle(prepared, actor=actor)
        self._changed(prepared)
        return prepared

    def close(self, target: Memory, *, actor: Actor, closed_by: str | None = None) -> Memory:
        """The fact stopped being true and nothing replaces it: history, never deleted.
        `closed_by`: the row it rests under (a thread under the fact that concluded it)."""
        now = self._clock.now()
        event = self._event(target, Op.CLOSE, actor, now, related=closed_by)
        closed = self._stores.memories.close_memory(
            target.user_id, target.memory_id, now, closed_by, events=[event]
        )
        self._withdraw(target.user_id, [target.memory_id])
        self._changed(closed)
        return closed

    def seen_again(self, memory: Memory, evidence: Sequence[str]) -> Memory:
        """The same fact said again: count it (inferred facts enter the profile when seen
        twice) and keep where it was said."""
        meta = dict(memory.meta)
        seen = meta.get("seen", 1)
        meta["seen"] = (seen if isinstance(seen, int) else 1) + 1
        merged = tuple(dict.fromkeys((*memory.evidence, *evidence)))[-20:]
        now = self._clock.now()
        updated = dataclasses.replace(
            fading.reinforced(memory, now) if memory.status is Status.ACTIVE else memory,
            meta=meta,
            evidence=merged,
            updated_at=max(memory.updated_at, now),
        )
        self._stores.memories.put_memory(updated)
        return updated

    def _replaced(self, user_id: str, new: NewMemory, replaces: str | None) -> Memory | None:
        if replaces:
            named = self._stores.memories.get_memory(user_id, replaces)
            if named is not None and named.status is Status.ACTIVE:
                return named
        if not new.key:
            return None
        same_key = [
            memory
            for memory in self._stores.memories.iter_memories(
                user_id, MemoryQuery(persona=new.persona)
            )
            if memory.key == new.key
        ]
        return same_key[0] if same_key else None  # newest first

    def correct(
        self,
        user_id: str,
        memory_id: str,
        *,
        text: str,
        category: str | None = None,
        valid_until: datetime | None = None,
        actor: Actor = Actor.USER,
    ) -> Memory:
        """Supersede the memory with the corrected one; the old version stays as history."""
        current = self.get(user_id, memory_id)
        self._require_enabled(user_id, current.persona)
        if current.status is not Status.ACTIVE:
            raise ConcurrentChange(
                f"only active memories can be corrected; this one is {current.status}"
            )
        write_filter.check_all(write_filter.memory_fields(text, category=category))
        now = self._clock.now()
        if valid_until is not None and valid_until <= now:
            raise InvalidField("valid_until", "must be in the future")
        if actor is Actor.USER:
            self._charge(user_id)
        unchanged = (
            text == current.text
            and (category is None or category == current.category)
            and (valid_until is None or valid_until == current.valid_until)
        )
        if unchanged:
            return current
        landing, held = self._replacement_id(current, category or current.category, text)
        if held is not None:
            return self._settle_on(current, held, actor=actor)
        corrected = Memory(
            user_id=user_id,
            memory_id=landing,
            text=text,
            created_at=now,
            updated_at=now,
            persona=current.persona,
            subject=current.subject,
            witnessed=current.witnessed,
            room_id=current.room_id,
            kind=current.kind,
            category=category or current.category,
            key=current.key,
            importance=current.importance,
            stated_by=StatedBy.USER,  # the user said so: it now beats any inference
            valid_from=current.valid_from,
            valid_until=valid_until if valid_until is not None else current.valid_until,
            supersedes=current.memory_id,
            # A correction changes what is true, not what it is good for: the same belief
            # answers the same questions, so its uses carry over (bench: corrected facts
            # found after the correction), marked carried until uses are written for the
            # new words. A new category borrows that category's instead.
            meta=(
                carried_over(current.meta)
                if (category or current.category) == current.category
                else {k: v for k, v in current.meta.items() if k not in ("uses", "uses_from")}
            ),
            embedding=None,
        )
        corrected = self._prepared(corrected, replaced=current)
        events = [
            self._event(current, Op.UPDATE, actor, now, related=corrected.memory_id),
            self._event(corrected, Op.ADD, actor, now, related=current.memory_id),
        ]
        self._stores.memories.supersede_memory(user_id, current.memory_id, corrected, events)
        self._withdraw(user_id, [current.memory_id])
        self._publish(corrected)
        self.settle(corrected, actor=actor)
        self._changed(corrected)
        self._ask_for_uses(corrected)
        return corrected

    def delete(self, user_id: str, memory_id: str, *, actor: Actor = Actor.USER) -> Tombstone:
        """Tombstone the memory and its older versions: hidden from the very next read.
        The purge of every other copy starts next."""
        tombstone = self._tombstone(user_id, memory_id, actor)
        self._start_purge(user_id, [memory_id], tombstone.deleted_at)
        return tombstone

    def _tombstone(self, user_id: str, memory_id: str, actor: Actor) -> Tombstone:
        # Its trace, not the row: a row that no longer reads is deleted all the same.
        target = self._trace(user_id, memory_id)
        if target is None:
            raise MemoryNotFound(memory_id)
        versions = self._older_versions(user_id, target)
        tombstone = self._tombstone_for(user_id, [target, *versions], actor)
        event = self._event(target, Op.DELETE, actor, tombstone.deleted_at)
        self._deletions.tombstone_memories(user_id, [tombstone], [event])
        self._withdraw(user_id, tombstone.versions)
        if target.status is Status.SUPERSEDED:
            self._cut_reach_to(target)
        self._changed(target)
        return tombstone

    def _cut_reach_to(self, deleted: MemoryTrace) -> None:
        """The deleted version's words leave the row that replaced it, before the next
        read; if that fails, the delete stands and the purge cuts them (reach_cut.py)."""
        try:
            cut_reach_to(self._stores, deleted.user_id, [deleted.memory_id], self._publish)
        except Exception as exc:
            log.warning("replaced words not cut yet", extra={"error_type": type(exc).__name__})

    def undo_writes(
        self, user_id: str, memory_ids: Sequence[str], *, actor: Actor = Actor.USER
    ) -> list[str]:
        """Undo what a background write did, and nothing more (a notice's "undo").

        A memory it added is deleted; a correction it made is reverted, so the version
        before it is believed again — exactly the state before that write. A memory that
        changed since (corrected, closed or deleted by then) is left as it is. Returns the
        ids undone. One purge covers what was deleted.
        """
        undone: list[str] = []
        for memory_id in memory_ids:
            memory = self._stores.memories.get_memory(user_id, memory_id)
            if memory is None or memory.status is not Status.ACTIVE:
                continue
            # This version only.
            tombstone = self._tombstone_for(user_id, [MemoryTrace.of(memory)], actor)
            deleted = self._event(memory, Op.DELETE, actor, tombstone.deleted_at)
            if not self._revert(memory, tombstone, deleted):
                # It added a memory, or what it replaced is gone since: delete it alone.
                self._deletions.tombstone_memories(user_id, [tombstone], [deleted])
            self._withdraw(user_id, [memory_id])
            undone.append(memory_id)
        if undone:
            self._start_purge(user_id, undone, self._clock.now())
        return undone

    def _revert(self, memory: Memory, tombstone: Tombstone, deleted: MemoryEvent) -> bool:
        """Hide `memory` and believe the version it replaced again; False if there is none."""
        if memory.supersedes is None:
            return False
        # Described as the row it brings back (its persona and kind), never its words.
        earlier = self._stores.memories.get_memory(memory.user_id, memory.supersedes) or memory
        restored_event = MemoryEvent(
            user_id=memory.user_id,
            memory_id=memory.supersedes,
            event_id=new_event_id(tombstone.deleted_at),
            op=Op.RESTORE,
            actor=tombstone.actor,
            at=tombstone.deleted_at,
            related_id=memory.memory_id,
            persona=earlier.persona,
            kind=earlier.kind,
        )
        try:
            restored = self._deletions.revert_supersede(
                memory.user_id, tombstone, [deleted, restored_event]
            )
        except (ConcurrentChange, MemoryNotFound):
            return False
        self._publish(restored)
        return True

    def forget_everything(self, user_id: str) -> int:
        """Hide every memory and the profile in one write, then tombstone each row for the purge.

        Returns how many memories were tombstoned. One purge covers them all.
        """
        now = self._clock.now()
        # Every row's trace, not the rows: one that no longer reads is forgotten too.
        everything = self._stores.visibility.traces(user_id)
        self._deletions.forget_everything(user_id, now)
        self._stores.persona_memories.drop_witness(user_id)
        self._stores.memories.drop_witness(user_id)
        self._stores.rooms.forget_speaker(user_id)
        self._stores.rhythm.delete_rhythm(user_id)  # when they chat is a memory too
        batch: list[Tombstone] = []
        events: list[MemoryEvent] = []
        for memory in everything:
            batch.append(self._tombstone_for(user_id, [memory], Actor.USER, at=now))
            events.append(self._event(memory, Op.DELETE, Actor.USER, now))
            if len(batch) == _TOMBSTONE_BATCH:
                self._deletions.tombstone_memories(user_id, batch, events)
                batch, events = [], []
        if batch:
            self._deletions.tombstone_memories(user_id, batch, events)
        self._withdraw(user_id, [memory.memory_id for memory in everything])
        self._start_purge(user_id, [], now)
        return len(everything)

    def _start_purge(self, user_id: str, memory_ids: Sequence[str], as_of: datetime) -> None:
        """Start the purge; if it cannot start, the delete still stands (the tombstone hides
        the memory) and the daily sweep starts the purge later."""
        if self._purges is None:
            return
        chunks = [memory_ids[i : i + MAX_NAMED] for i in range(0, len(memory_ids), MAX_NAMED)]
        for chunk in chunks or [()]:
            try:
                self._purges.start_purge(
                    PurgeRequest(user_id=user_id, as_of=as_of, memory_ids=tuple(chunk))
                )
            except Exception as exc:
                log.warning("purge not started", extra={"error_type": type(exc).__name__})

    def _ask_for_uses(self, memory: Memory) -> None:
        """Queue the job that writes a stored row's own uses when the ones it was stored
        with were not written for its words (and a model can write them), or its vectors
        when the embedder failed. The row stands either way: a queue that fails only
        leaves it waiting for the daily sweep (`chatmemory flush` locally)."""
        if self._uses_jobs is None or not waits_for_job(memory, self._model_writes_uses):
            return
        try:
            self._uses_jobs.uses_later(memory.user_id, [memory.memory_id])
        except Exception as exc:
            log.warning("uses job not queued", extra={"error_type": type(exc).__name__})

    # ---- helpers --------------------------------------------------------------------

    def _prepared(self, memory: Memory, *, replaced: Memory | None = None) -> Memory:
        return self._indexer.prepare(memory, replaced=replaced) if self._indexer else memory

    def _publish(self, memory: Memory) -> None:
        if self._indexer:
            self._indexer.publish(memory)

    def _withdraw(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if self._indexer and memory_ids:
            self._indexer.withdraw(user_id, memory_ids)

    def _require_enabled(self, user_id: str, persona: str) -> None:
        if not self._stores.user_state.get_settings(user_id).allows(persona):
            raise MemoryDisabled(
                "memory is switched off for this user or persona; "
                "turn it on in /v1/memory/settings to save memories"
            )

    def _build(self, user_id: str, memory_id: str, new: NewMemory, now: datetime) -> Memory:
        return Memory(
            user_id=user_id,
            memory_id=memory_id,
            text=new.text,
            created_at=now,
            updated_at=now,
            persona=new.persona,
            category=new.category or rules.DEFAULT_CATEGORY,
            key=new.key,
            stated_by=StatedBy.USER,
            valid_until=new.valid_until,
            source_message_id=new.source_message_id,
            evidence=(new.source_message_id,) if new.source_message_id else (),
            room_id=new.room_id,
            importance=new.importance,
            meta={"uses": list(new.uses)} if new.uses else {},
        )

    def _trace(self, user_id: str, memory_id: str) -> MemoryTrace | None:
        found = self._stores.visibility.traces(user_id, [memory_id])
        return found[0] if found else None

    def _older_versions(self, user_id: str, memory: MemoryTrace) -> list[MemoryTrace]:
        older: list[MemoryTrace] = []
        seen = {memory.memory_id}
        current = memory
        while current.supersedes and current.supersedes not in seen:
            seen.add(current.supersedes)
            previous = self._trace(user_id, current.supersedes)
            if previous is None:
                break
            older.append(previous)
            current = previous
        return older

    def _tombstone_for(
        self,
        user_id: str,
        versions: Sequence[MemoryTrace],
        actor: Actor,
        at: datetime | None = None,
    ) -> Tombstone:
        """Everything the purge needs to find every copy: ids and places, never text."""
        target = versions[0]
        message_ids: list[str] = []
        conversation_ids: list[str] = []
        for version in versions:
            for message_id in version.message_ids:
                if message_id not in message_ids:
                    message_ids.append(message_id)
            if version.room_id and version.room_id not in conversation_ids:
                conversation_ids.append(version.room_id)
        for message_id in message_ids:
            parsed = parse_message_id(message_id)
            if parsed and parsed[0] not in conversation_ids:
                conversation_ids.append(parsed[0])
        return Tombstone(
            user_id=user_id,
            memory_id=target.memory_id,
            deleted_at=at or self._clock.now(),
            actor=actor,
            persona=target.persona,
            kind=target.kind,
            versions=tuple(dict.fromkeys(v.memory_id for v in reversed(versions))),
            source_message_ids=tuple(message_ids),
            conversation_ids=tuple(conversation_ids),
        )

    @staticmethod
    def _event(
        memory: Memory | MemoryTrace,
        op: Op,
        actor: Actor,
        at: datetime,
        related: str | None = None,
    ) -> MemoryEvent:
        return MemoryEvent(
            user_id=memory.user_id,
            memory_id=memory.memory_id,
            event_id=new_event_id(at),
            op=op,
            actor=actor,
            at=at,
            related_id=related,
            persona=memory.persona,
            kind=memory.kind,
        )

    # ---- rhythms (seed 003): believed from when the user chats, never from what they say ----

    def remember_rhythm(self, user_id: str, new: NewMemory) -> Memory:
        """Write a rhythm the keeper promoted, as an inferred belief (actor: system) on an
        id drawn from its key, so writing it again returns the row already there. An id
        deleted once is never reused. MemoryDisabled when memory is off for the persona."""
        self._require_enabled(user_id, new.persona)
        write_filter.check("text", new.text)
        now = self._clock.now()
        memory, _ = self._land(
            user_id,
            new.persona,
            f"rhythm:{new.key}",
            lambda memory_id: self._inferred_rhythm(user_id, memory_id, new, now),
            Actor.SYSTEM,
        )
        return memory

    def reconfirm_rhythm(
        self, user_id: str, memory_id: str, valid_until: datetime
    ) -> Memory | None:
        """Keep a rhythm believed until `valid_until` (never sooner than it already was),
        reinforced as new evidence; the same row, its id kept. None when the row is no
        longer a visible active belief (deleted, expired). MemoryDisabled when memory is
        off for its persona."""
        current = self._stores.memories.get_memory(user_id, memory_id)
        if current is None or current.status is not Status.ACTIVE:
            return None
        self._require_enabled(user_id, current.persona)
        now = self._clock.now()
        if current.valid_until is not None:
            valid_until = max(valid_until, current.valid_until)
        kept = dataclasses.replace(
            fading.reinforced(current, now),
            valid_until=valid_until,
            updated_at=max(now, current.updated_at),
        )
        try:
            self._stores.memories.put_memory(kept)
        except MemoryNotFound:
            return None  # deleted a moment ago: a deleted row is never written again
        self._publish(kept)  # the index filters on `valid_until` too
        return kept

    def _inferred_rhythm(
        self, user_id: str, memory_id: str, new: NewMemory, now: datetime
    ) -> Memory:
        built = dataclasses.replace(
            self._build(user_id, memory_id, new, now), stated_by=StatedBy.INFERRED
        )
        return self._prepared(built)
