"""Threads (seed 004) off the request path: what a quiet spell did to the threads a persona
follows about one person, and the nightly review that lets quiet threads sleep.

A spell brings three kinds of news about threads, applied in this order:
- beats: the person said something new about a concern. A beat of a known thread (named
  by the extractor, or sharing its key) is an UPDATE — the old state closes under the new,
  so the arc is the history — never a second thread; a new concern is a new thread, and
  past the cap of five live ones the quietest goes dormant;
- reports: the persona raised a thread and the person answered, deflected or said nothing
  (the manners in `domain/threads.py` decide what that does);
- conclusions: a plain fact concluded a thread ("Works at Acme since Dec 2026."): the
  thread is resolved, and once acknowledged it rests under that fact (closed by it).
Manners change in place (`ThreadStore.set_thread_meta`, compare-and-set, so two writers
never lose each other's change); beats are versions written through `MemoryService`, like
every other memory (the write filter, the switches, the index, the audit events).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from chatmemory.domain.errors import ConcurrentChange, MemoryDisabled, MemoryNotFound
from chatmemory.domain.events import Actor, MemoryEvent
from chatmemory.domain.extraction import Candidate
from chatmemory.domain.ids import new_event_id, normalise_for_identity
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.threads import (
    Cadence,
    ThreadMeta,
    ThreadReport,
    ThreadStatus,
    after_spell,
    asked,
    crowded_out,
    last_beat_of,
    manner_ops,
    meta_of,
    nightly_review,
    over_cap,
    resolved,
    with_manners,
)
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import MemoryService

log = logging.getLogger(__name__)

#: a compare-and-set that keeps losing is given up (the next spell or review tries again)
_MANNER_TRIES: Final = 3
#: the row's meta key naming the fact a resolved thread rests under, until it is closed
CONCLUDED_BY: Final = "concluded_by"


@dataclass(frozen=True, slots=True)
class Beat:
    """A beat the extractor kept, with the row it would become: its id, text and place
    already chosen by the caller (the pipeline or a room's write); its manners come here."""

    candidate: Candidate
    row: Memory


@dataclass(frozen=True, slots=True)
class Raised:
    """A report of the spell, mapped to a thread id, with the day the persona raised it."""

    report: ThreadReport
    on: date


@dataclass(frozen=True, slots=True)
class Conclusion:
    """A concluding fact the router wrote (None if it wrote nothing new), the candidate it
    came from (its `concludes` names the thread), and whether the persona already answered
    the news in the same spell (then that was the one acknowledgement)."""

    candidate: Candidate
    fact: Memory | None
    acknowledged: bool
    on: date


@dataclass(frozen=True, slots=True)
class ThreadSpell:
    """One spell's news about the threads `persona` follows about one person (`subject`,
    whose partition `owner` holds them)."""

    owner: str
    persona: str
    subject: str
    beats: Sequence[Beat] = ()
    raised: Sequence[Raised] = ()
    conclusions: Sequence[Conclusion] = ()


@dataclass(frozen=True, slots=True)
class ThreadsKept:
    """What a spell did to the threads: the rows it wrote (new threads and new beats, for
    the notice) and how many threads changed their manners in place."""

    written: tuple[Memory, ...] = ()
    manners_changed: int = 0


@dataclass(frozen=True, slots=True)
class Reviewed:
    """The nightly review's counts: live threads it looked at, and how many went dormant."""

    checked: int
    dormant: int


class ThreadKeeper:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        memories: MemoryService | Callable[[], MemoryService],
    ) -> None:
        self._stores = stores
        self._clock = clock
        self._memories_or_factory = memories

    @property
    def _memories(self) -> MemoryService:
        if not isinstance(self._memories_or_factory, MemoryService):
            self._memories_or_factory = self._memories_or_factory()
        return self._memories_or_factory

    # ---- a spell ------------------------------------------------------------------------

    def apply(self, spell: ThreadSpell) -> ThreadsKept:
        """Apply a spell's beats, then its reports, then its conclusions, then the cap.

        Idempotent as the write pipeline needs: a beat's row id comes from the run, so a
        retried spell lands on the rows the first try wrote, and a change of manners that
        is already there writes nothing."""
        threads = {
            m.memory_id: m
            for m in self._stores.threads.list_threads(spell.owner, spell.persona)
            if m.subject == spell.subject
        }
        raised = {item.report.thread: item for item in spell.raised}
        written: list[Memory] = []
        changed = 0
        for beat in spell.beats:
            outcome = self._beat(spell, beat, threads, raised)
            if outcome is not None:
                written.append(outcome)
        for thread_id, item in raised.items():
            target = threads.get(thread_id)
            if target is not None and self._report(spell, target, item, threads):
                changed += 1
        for conclusion in spell.conclusions:
            if self._conclude(spell, conclusion, threads):
                changed += 1
        changed += self._cap(spell, threads)
        return ThreadsKept(tuple(written), changed)

    def _beat(
        self,
        spell: ThreadSpell,
        beat: Beat,
        threads: dict[str, Memory],
        raised: dict[str, Raised],
    ) -> Memory | None:
        """The beat as an UPDATE of its thread, or a new thread; the new row, if any."""
        candidate = beat.candidate
        target = _thread_for(candidate, threads)
        try:
            if target is None:
                meta = ThreadMeta(
                    cadence=candidate.cadence or Cadence.SLOW, event_on=candidate.event_on
                )
                new = beat.row.with_changes(meta=with_manners(beat.row.meta, meta))
                if not self._memories.add_extracted(new):
                    return None
                threads[new.memory_id] = new
                return new
            item = raised.pop(target.memory_id, None)
            before = meta_of(target)
            after = after_spell(
                before,
                raised_on=item.on if item else None,
                response=item.report.response if item else None,
                beat=True,
                cadence=candidate.cadence,
                event_on=candidate.event_on,
            )
            if normalise_for_identity(target.text) == normalise_for_identity(candidate.text):
                # Brought up again without news: the person reopened it, nothing to rewrite.
                updated = self._set_manners(spell.owner, target, lambda _: after)
                if updated is not None:
                    threads[target.memory_id] = updated
                return None
            kept = {k: v for k, v in target.meta.items() if k == CONCLUDED_BY}
            row = beat.row.with_changes(
                supersedes=target.memory_id,
                meta=with_manners({**kept, **beat.row.meta}, after),
            )
            new = self._memories.supersede(target, row, actor=Actor.EXTRACTOR)
        except (ConcurrentChange, MemoryNotFound, MemoryDisabled):
            return None  # applied by an earlier try, moved on, or memory switched off
        threads.pop(target.memory_id, None)
        threads[new.memory_id] = new
        return new

    def _report(
        self, spell: ThreadSpell, target: Memory, item: Raised, threads: dict[str, Memory]
    ) -> bool:
        """The persona raised it: answered, deflected or unanswered. A resolved thread
        raised is its one acknowledgement: it then rests under its concluding fact."""
        after = after_spell(meta_of(target), raised_on=item.on, response=item.report.response)
        if after.status is ThreadStatus.RESOLVED and after.acknowledged:
            return self._rest(spell.owner, target, after, threads)
        updated = self._set_manners(spell.owner, target, lambda _: after)
        if updated is None:
            return False
        threads[target.memory_id] = updated
        return True

    def _conclude(
        self, spell: ThreadSpell, conclusion: Conclusion, threads: dict[str, Memory]
    ) -> bool:
        """The story concluded: resolved, and at rest under its fact once acknowledged."""
        target = threads.get(conclusion.candidate.concludes or "")
        if target is None:
            return False
        fact_id = conclusion.fact.memory_id if conclusion.fact is not None else None
        after = resolved(meta_of(target))
        if conclusion.acknowledged:
            after = asked(after, conclusion.on)
            return self._rest(spell.owner, target, after, threads, fact_id)
        extra = {CONCLUDED_BY: fact_id} if fact_id else {}
        updated = self._set_manners(spell.owner, target, lambda _: after, extra)
        if updated is None:
            return False
        threads[target.memory_id] = updated
        return True

    def _rest(
        self,
        owner: str,
        target: Memory,
        after: ThreadMeta,
        threads: dict[str, Memory],
        fact_id: str | None = None,
    ) -> bool:
        """Resolved and acknowledged: the manners say so, and the thread closes under the
        fact that concluded it (the arc stays readable; it is never raised again)."""
        concluded = fact_id or target.meta.get(CONCLUDED_BY)
        updated = self._set_manners(owner, target, lambda _: after)
        if updated is None:
            return False
        try:
            self._memories.close(
                updated,
                actor=Actor.EXTRACTOR,
                closed_by=concluded if isinstance(concluded, str) else None,
            )
        except (ConcurrentChange, MemoryNotFound):
            return False
        threads.pop(target.memory_id, None)
        return True

    def _cap(self, spell: ThreadSpell, threads: dict[str, Memory]) -> int:
        """Past five live threads the quietest go dormant: more is a questionnaire."""
        live = [(m.memory_id, meta_of(m), last_beat_of(m)) for m in threads.values()]
        crowded = 0
        for thread_id in over_cap(live):
            if self._set_manners(spell.owner, threads[thread_id], crowded_out) is not None:
                crowded += 1
        return crowded

    # ---- the nightly review -------------------------------------------------------------

    def review(self, *, batch: int = 100) -> Reviewed:
        """Put every live thread quiet past three times its rhythm to sleep: pure code, no
        model call. Idempotent: a thread already dormant is no longer listed, and one that
        moved on since it was listed is left as it is."""
        today = self._clock.now().date()
        seen: set[tuple[str, str]] = set()
        checked = dormant = 0
        while True:
            due = [d for d in self._stores.threads.threads_due(today, limit=batch) if d not in seen]
            if not due:
                return Reviewed(checked, dormant)
            for owner, memory_id in due:
                seen.add((owner, memory_id))
                row = self._stores.memories.get_memory(owner, memory_id)
                if row is None or row.kind is not Kind.THREAD or row.status is not Status.ACTIVE:
                    continue
                checked += 1
                quiet = functools.partial(_reviewed, last_beat=last_beat_of(row), today=today)
                updated = self._set_manners(owner, row, quiet, actor=Actor.SYSTEM)
                if updated is not None and meta_of(updated).status is ThreadStatus.DORMANT:
                    dormant += 1

    # ---- the one write of manners --------------------------------------------------------

    def _set_manners(
        self,
        owner: str,
        target: Memory,
        change: Callable[[ThreadMeta], ThreadMeta],
        extra: Mapping[str, Any] | None = None,
        *,
        actor: Actor = Actor.EXTRACTOR,
    ) -> Memory | None:
        """Apply `change` to the row's manners, compare-and-set; re-read and re-apply when
        another writer got there first. The row as it is after (unchanged if nothing was
        to change), or None if it is gone or no longer an active thread."""
        row = target
        for _ in range(_MANNER_TRIES):
            before = meta_of(row)
            after = change(before)
            meta = {**with_manners(row.meta, after), **(extra or {})}
            if meta == dict(row.meta):
                return row
            now = self._clock.now()
            events = [
                MemoryEvent(
                    user_id=owner,
                    memory_id=row.memory_id,
                    event_id=new_event_id(now),
                    op=op,
                    actor=actor,
                    at=now,
                    persona=row.persona,
                    kind=row.kind,
                )
                for op in manner_ops(before, after)
            ]
            try:
                return self._stores.threads.set_thread_meta(
                    owner, row.memory_id, meta, now, expected=row.meta, events=events
                )
            except MemoryNotFound:
                return None
            except ConcurrentChange:
                fresh = self._stores.memories.get_memory(owner, row.memory_id)
                if fresh is None or fresh.status is not Status.ACTIVE:
                    return None
                row = fresh
        log.warning("thread manners not written: kept changing", extra={"memory_id": row.memory_id})
        return None


def _reviewed(meta: ThreadMeta, *, last_beat: date, today: date) -> ThreadMeta:
    return nightly_review(meta, last_beat, today)


def _thread_for(candidate: Candidate, threads: Mapping[str, Memory]) -> Memory | None:
    """The known thread a beat continues: the one the extractor named, else the newest one
    with the same key — one thread per concern, never a second."""
    if candidate.thread and candidate.thread in threads:
        return threads[candidate.thread]
    if not candidate.key:
        return None
    same_key = [m for m in threads.values() if m.key == candidate.key]
    return max(same_key, key=lambda m: (m.created_at, m.memory_id), default=None)
