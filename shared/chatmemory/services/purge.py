"""The purge: after a delete, remove or rebuild every copy of the memory.

A delete writes a tombstone at once and the read path filters by it; the purge then, in
order: removes the index documents (first cutting the versions' words out of the rows
that replaced them) → deletes the rows of every version (the tombstone
stays, ids and times only) and the notices and pipeline runs that quote them → rebuilds
each profile built from one of them → rewrites each conversation summary that folded in
one of their source messages → marks the tombstones purged. Until that last step the read
path keeps withholding whatever may still hold the words.

A purge covers the user's unpurged tombstones deleted up to `as_of` — all of them, or
those of `memory_ids` — so a delete, an undo of several memories and "forget everything"
are one path, and a delete that lands mid-purge waits for its own run. Each step is
idempotent and reads the tombstones afresh, so a retried step, a repeated run or a
re-drive by the daily sweep changes nothing twice.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Concatenate, ParamSpec, TypeVar

from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.ids import new_event_id
from chatmemory.domain.notice import announce
from chatmemory.domain.purge import PurgeRequest
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import PurgeStarter
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorIndex
from chatmemory.services.folding import Folder
from chatmemory.services.pipeline import ProfileRebuilt
from chatmemory.services.profile import ProfileBuilder
from chatmemory.services.reach_cut import cut_reach_to

log = logging.getLogger(__name__)

#: a purge not finished this long after its delete is started again by the sweep
PURGE_GRACE = timedelta(minutes=15)
#: tombstones marked purged in one write, each with its audit event; a store may write a
#: third item per tombstone (DynamoDB deletes its pending copy) and takes 100 a transaction
_MARKED_TOGETHER = 33


# ---- what each step reports: ids and counts, never text (a state machine's payload) ----


@dataclass(frozen=True, slots=True)
class PurgePlan:
    """How many deletions the purge covers, and the profiles and summaries it rebuilds."""

    tombstones: int
    personas: tuple[str, ...]
    conversations: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VectorsRemoved:
    """How many index documents were removed (every version of every deleted memory)."""

    removed: int


@dataclass(frozen=True, slots=True)
class RowsDeleted:
    """Rows deleted, notices rewritten or dropped, conversations whose runs were dropped."""

    rows: int
    notices: int
    runs_of: int


@dataclass(frozen=True, slots=True)
class SummaryRewritten:
    """Whether the summary was rebuilt, and how many turns it left out."""

    rewritten: bool
    turns_left_out: int


@dataclass(frozen=True, slots=True)
class Purged:
    """Tombstones marked purged, and how long after the oldest deletion (milliseconds)."""

    purged: int
    latency_ms: int


@dataclass(frozen=True, slots=True)
class PurgeFailureRecorded:
    """How many tombstones keep the error's kind, and the kind kept."""

    recorded: int
    error: str


_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")


def _records_failure(
    step: Callable[Concatenate[PurgePipeline, PurgeRequest, _Args], _Result],
) -> Callable[Concatenate[PurgePipeline, PurgeRequest, _Args], _Result]:
    """A step that fails keeps the error's kind on its tombstones, then fails: the state
    machine retries it, and a redrive (or the sweep) resumes from it."""

    @functools.wraps(step)
    def recorded(
        self: PurgePipeline, request: PurgeRequest, /, *args: _Args.args, **kwargs: _Args.kwargs
    ) -> _Result:
        try:
            return step(self, request, *args, **kwargs)
        except Exception as exc:
            self.record_failure(request, type(exc).__name__)
            raise

    return recorded


class PurgePipeline:
    """The purge's steps, each a service call a Lambda (or the local runner) makes."""

    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        *,
        index: VectorIndex | Callable[[], VectorIndex],
        folder: Folder | Callable[[], Folder],
    ) -> None:
        """The index and the folder (which needs the model) may be factories: a step
        builds only what it uses."""
        self._stores = stores
        self._clock = clock
        self._index_part = index
        self._folder_part = folder
        self._profiles = ProfileBuilder(stores, clock)

    @property
    def _index(self) -> VectorIndex:
        if not isinstance(self._index_part, VectorIndex):
            self._index_part = self._index_part()
        return self._index_part

    @property
    def _folder(self) -> Folder:
        if not isinstance(self._folder_part, Folder):
            self._folder_part = self._folder_part()
        return self._folder_part

    def _selected(self, request: PurgeRequest) -> list[Tombstone]:
        return [
            tombstone
            for tombstone in self._stores.tombstones.list_tombstones(
                request.user_id, unpurged_only=True
            )
            if request.covers(tombstone)
        ]

    @staticmethod
    def _versions(tombstones: Sequence[Tombstone]) -> list[str]:
        return list(dict.fromkeys(v for tombstone in tombstones for v in tombstone.versions))

    # ---- the steps ----------------------------------------------------------------------

    @_records_failure
    def plan(self, request: PurgeRequest) -> PurgePlan:
        """What this purge will touch: how many deletions, which profiles, which summaries."""
        tombstones = self._selected(request)
        versions = set(self._versions(tombstones))
        personas = []
        for persona in dict.fromkeys(tombstone.persona for tombstone in tombstones):
            profile = self._stores.user_state.get_profile(request.user_id, persona)
            if profile is not None and versions.intersection(profile.built_from):
                personas.append(persona)
        conversations = []
        for conversation_id in dict.fromkeys(
            c for tombstone in tombstones for c in tombstone.conversation_ids
        ):
            conversation = self._stores.conversations.get_conversation(
                request.user_id, conversation_id
            )
            if conversation is not None and conversation.summary_upto_seq > 0:
                conversations.append(conversation_id)
        if versions:
            conversations += self._summaries_that_used(request.user_id, versions, conversations)
        return PurgePlan(len(tombstones), tuple(personas), tuple(conversations))

    def _summaries_that_used(
        self, user_id: str, versions: set[str], known: Sequence[str]
    ) -> list[str]:
        """Conversations whose summary covers a reply that used one of these memories: the
        reply quoted it, and a summary may have kept the quote."""
        found = []
        for conversation in self._stores.conversations.list_conversations(user_id):
            if conversation.conversation_id in known or conversation.summary_upto_seq == 0:
                continue
            covered = self._stores.conversations.list_messages(
                user_id, conversation.conversation_id, upto_seq=conversation.summary_upto_seq
            )
            if any(versions.intersection(message.memories_used) for message in covered):
                found.append(conversation.conversation_id)
        return found

    @_records_failure
    def remove_vectors(self, request: PurgeRequest) -> VectorsRemoved:
        """Drop the index documents of every version (removing a missing one is a no-op),
        after cutting their words out of the rows that replaced them (reach_cut.py)."""
        versions = self._versions(self._selected(request))
        if versions:
            cut_reach_to(self._stores, request.user_id, versions, self._index.upsert)
            self._index.remove(request.user_id, versions)
        return VectorsRemoved(removed=len(versions))

    @_records_failure
    def delete_rows(self, request: PurgeRequest) -> RowsDeleted:
        """Delete the rows of every version, and the notices and runs that quote them."""
        tombstones = self._selected(request)
        versions = self._versions(tombstones)
        self._stores.visibility.purge_memories(request.user_id, versions)
        notices = self._forget_in_notices(request.user_id, versions)
        conversations = list(dict.fromkeys(c for t in tombstones for c in t.conversation_ids))
        for conversation_id in conversations:
            # A run's candidates quote what was said; finished runs are only a record.
            self._stores.runs.delete_extraction_runs(request.user_id, conversation_id)
        return RowsDeleted(rows=len(versions), notices=notices, runs_of=len(conversations))

    def _forget_in_notices(self, user_id: str, purged: Sequence[str]) -> int:
        """Drop the purged memories from every notice; a notice left with none is deleted."""
        gone = set(purged)
        changed = 0
        for notice in self._stores.notices.notices_about(user_id, purged):
            left = self._stores.memories.get_memories(
                user_id, [m for m in notice.memory_ids if m not in gone]
            )
            self._stores.notices.delete_notices(user_id, [notice.notice_id])
            if left:
                self._stores.notices.add_notice(
                    dataclasses.replace(
                        notice,
                        text=announce((memory.text for memory in left), persona=notice.persona),
                        memory_ids=tuple(memory.memory_id for memory in left),
                    )
                )
            changed += 1
        return changed

    @_records_failure
    def rebuild_profile(self, request: PurgeRequest, persona: str) -> ProfileRebuilt:
        """The digest again, from what is visible (deleted rows are not)."""
        return ProfileRebuilt(self._profiles.rebuild(request.user_id, persona))

    @_records_failure
    def rewrite_summary(self, request: PurgeRequest, conversation_id: str) -> SummaryRewritten:
        """The summary again, from raw messages, without any deleted memory's turns."""
        rewrite = self._folder.rewrite_without_deleted(request.user_id, conversation_id)
        return SummaryRewritten(rewrite.rewritten, rewrite.turns_left_out)

    @_records_failure
    def mark_purged(self, request: PurgeRequest) -> Purged:
        """The last step: the read path stops withholding what these deletions touched."""
        now = self._clock.now()
        tombstones = self._selected(request)
        for start in range(0, len(tombstones), _MARKED_TOGETHER):
            self._mark(tombstones[start : start + _MARKED_TOGETHER], now)
        oldest = min((t.deleted_at for t in tombstones), default=now)
        return Purged(purged=len(tombstones), latency_ms=int((now - oldest).total_seconds() * 1000))

    def _mark(self, tombstones: Sequence[Tombstone], now: datetime) -> None:
        """Tombstones marked purged and each purge's audit event, in one write: the change
        feed tells "purged" exactly when the read path stops withholding."""
        events = [
            MemoryEvent(
                user_id=tombstone.user_id,
                memory_id=tombstone.memory_id,
                event_id=new_event_id(now),
                op=Op.PURGE,
                actor=Actor.SYSTEM,
                at=now,
                persona=tombstone.persona,
                kind=tombstone.kind,
            )
            for tombstone in tombstones
        ]
        stores = self._stores

        def mark() -> None:
            for tombstone in tombstones:
                stores.tombstones.put_tombstone(
                    dataclasses.replace(tombstone, purged_at=now, purge_error=None)
                )
            stores.events.add_events(events)

        stores.unit_of_work.run(mark, what="the purge was being recorded")

    def record_failure(self, request: PurgeRequest, error: str) -> PurgeFailureRecorded:
        """Keep the error's kind on each tombstone (never its text); the tombstones stay
        unpurged, so the read path keeps filtering and the sweep tries again."""
        kind = error[:80] or "Unknown"
        log.error("purge failed", extra={"error_type": kind})
        try:
            tombstones = self._selected(request)
            for tombstone in tombstones:
                self._stores.tombstones.put_tombstone(
                    dataclasses.replace(tombstone, purge_error=kind)
                )
        except Exception as exc:  # the step's own error is the one to report
            log.warning("purge failure not recorded", extra={"error_type": type(exc).__name__})
            return PurgeFailureRecorded(recorded=0, error=kind)
        return PurgeFailureRecorded(recorded=len(tombstones), error=kind)

    # ---- the whole run, in this process -------------------------------------------------

    def run(self, request: PurgeRequest) -> Purged:
        """Every step in the state machine's order (the local runner, and tests)."""
        plan = self.plan(request)
        if not plan.tombstones:
            return Purged(purged=0, latency_ms=0)
        self.remove_vectors(request)
        self.delete_rows(request)
        for persona in plan.personas:
            self.rebuild_profile(request, persona)
        for conversation_id in plan.conversations:
            self.rewrite_summary(request, conversation_id)
        return self.mark_purged(request)


class InProcessPurge(PurgeStarter):
    """Runs the whole purge before returning (where no local queue runs it later)."""

    def __init__(self, pipeline: PurgePipeline) -> None:
        self._pipeline = pipeline

    def start_purge(self, request: PurgeRequest, *, origin: str = "delete") -> bool:
        self._pipeline.run(request)
        return True


class PurgeSweep:
    """Starts a purge for every user whose deletions are still not purged (a failed or
    lost run): the daily sweep on AWS, `chatmemory flush` locally."""

    def __init__(self, stores: Stores, clock: Clock, starter: PurgeStarter) -> None:
        self._stores = stores
        self._clock = clock
        self._starter = starter

    def sweep(self, *, now_or_never: bool = False, batch: int = 100) -> int:
        """Start one purge per such user; how many started."""
        now = self._clock.now()
        # "now or never" takes every deletion so far, including one made this instant.
        cutoff = now + timedelta(seconds=1) if now_or_never else now - PURGE_GRACE
        started = 0
        seen: set[str] = set()
        while True:
            # Started purges may still be running (on AWS they are): ask past those seen.
            pending = self._stores.tombstones.pending_purges(
                deleted_before=cutoff, limit=batch + len(seen)
            )
            users = [user_id for user_id in pending if user_id not in seen]
            if not users:
                return started
            for user_id in users:
                seen.add(user_id)
                try:
                    started += self._starter.start_purge(
                        PurgeRequest(user_id=user_id, as_of=cutoff), origin="sweep"
                    )
                except Exception as exc:  # one user's failure never stops the sweep
                    log.warning(
                        "sweep could not start a purge", extra={"error_type": type(exc).__name__}
                    )
