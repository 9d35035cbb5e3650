"""The write pipeline's steps: extract → route → (rebuild the profile) → notify.

Each step is a service call a Lambda (or the local runner) makes with ids only; each is
idempotent — a run's id comes from the conversation and the slice it reads, its
candidates live on the run, memory ids come from the run, and every write is
conditional — so a retried or repeated step changes nothing. Two model calls per idle
session at most: one extraction, one routing call for all candidates.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from chatmemory.domain import rules
from chatmemory.domain.conversation import Message
from chatmemory.domain.errors import (
    ConcurrentChange,
    MemoryDisabled,
    MemoryNotFound,
    ModelRefused,
)
from chatmemory.domain.events import Actor
from chatmemory.domain.extraction import (
    DAILY_CAP,
    DEEP_DAILY_CAP,
    DEEP_MAX_CANDIDATES,
    MAX_CANDIDATES,
    Candidate,
    ExtractionInput,
    ExtractionResult,
    ExtractionRun,
    TranscriptLine,
    filter_candidates,
    known_threads,
    run_id_for,
    trusted_reports,
    with_thread_ids,
)
from chatmemory.domain.ids import (
    CHATMEMORY_NAMESPACE,
    belief_identity,
    normalise_for_identity,
    parse_message_id,
)
from chatmemory.domain.memory import Kind, Memory, Status, subject_for_user
from chatmemory.domain.notice import Notice, announce
from chatmemory.domain.overtaken import SinceTheMessages, overtaken
from chatmemory.domain.routing import (
    Action,
    Neighbour,
    Resolved,
    Routed,
    latest_per_key,
    numbered,
    resolve,
)
from chatmemory.domain.standing import key_of, standing_key
from chatmemory.domain.threads import ThreadReport, acknowledged_after
from chatmemory.ports.clock import Clock
from chatmemory.ports.embedder import Embedder
from chatmemory.ports.jobs import PipelineStarter
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.model import Model, RoutingCase
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorIndex
from chatmemory.services.memories import MemoryService
from chatmemory.services.profile import ProfileBuilder
from chatmemory.services.threads import Beat, Conclusion, Raised, ThreadKeeper, ThreadSpell

log = logging.getLogger(__name__)

RUN_SHELF_LIFE = timedelta(days=7)
KNOWN_FOR_EXTRACTION = 15  # existing memories shown to the extractor, nearest first
NEIGHBOURS = 5  # per candidate, by cosine (seed 000: top 5 ≥ 0.6)
NEIGHBOUR_FLOOR = 0.6


# ---- what each step reports: ids and counts, never text (a state machine's payload) ----


@dataclass(frozen=True, slots=True)
class Extracted:
    """The run Extract wrote (or found), how many candidates it kept, and how many threads
    the persona raised in the slice (reports Route applies even with no candidate)."""

    user_id: str
    run_id: str
    persona: str
    candidates: int
    reports: int = 0


@dataclass(frozen=True, slots=True)
class RoutedRun:
    """How many memories Route wrote, and whether the profile is built from one of them."""

    user_id: str
    run_id: str
    persona: str
    written: int
    # of which: corrections of an older memory, facts that stopped being true
    superseded: int
    closed: int
    profile_affected: bool


@dataclass(frozen=True, slots=True)
class ProfileRebuilt:
    """Whether the digest changed (an unchanged digest is not rewritten)."""

    rebuilt: bool


@dataclass(frozen=True, slots=True)
class Notified:
    """The run's notice, or None when the run wrote nothing to announce."""

    notice_id: str | None


@dataclass(frozen=True, slots=True)
class FailureRecorded:
    """Whether a run was there to keep the error's kind, and the kind kept."""

    recorded: bool
    error: str


class WritePipeline:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        *,
        model: Model | Callable[[], Model],
        memories: MemoryService | Callable[[], MemoryService],
        embedder: Embedder | Callable[[], Embedder],
        index: VectorIndex | Callable[[], VectorIndex],
    ) -> None:
        """Heavy collaborators may be given as factories: a step builds only what it uses
        (RebuildProfile and Notify never load a model or open the vector collection)."""
        self._stores = stores
        self._clock = clock
        self._parts: dict[str, Any] = {
            "model": model,
            "memories": memories,
            "embedder": embedder,
            "index": index,
        }
        self._threads = ThreadKeeper(stores, clock, lambda: self._memories)

    def _part(self, name: str) -> Any:
        part = self._parts[name]
        if callable(part) and not isinstance(part, Model | MemoryService | Embedder | VectorIndex):
            part = self._parts[name] = part()
        return part

    @property
    def _model(self) -> Model:
        model: Model = self._part("model")
        return model

    @property
    def _memories(self) -> MemoryService:
        memories: MemoryService = self._part("memories")
        return memories

    @property
    def _embedder(self) -> Embedder:
        embedder: Embedder = self._part("embedder")
        return embedder

    @property
    def _index(self) -> VectorIndex:
        index: VectorIndex = self._part("index")
        return index

    def use_model(self, model: Model) -> None:
        """Swap the model (the benchmark measures what Claude would be sent)."""
        self._parts["model"] = model

    # ---- extract ------------------------------------------------------------------------

    def extract(
        self, user_id: str, conversation_id: str, upto_seq: int, deep: bool = False
    ) -> Extracted:
        """Read the conversation's new messages up to `upto_seq` and keep the candidates
        that pass the write filter on a run.

        `deep`: the same read in deep mode — the model's stronger tier and larger budget,
        up to DEEP_MAX_CANDIDATES kept and DEEP_DAILY_CAP new memories that day; the run
        records it. A slice already read keeps the run it has, deep or not."""
        run_id = run_id_for(user_id, conversation_id, upto_seq)
        existing = self._stores.runs.get_extraction_run(user_id, run_id)
        if existing is not None:
            return self._extracted(existing)
        conversation = self._stores.conversations.get_conversation(user_id, conversation_id)
        if conversation is None or conversation.extracted_upto_seq >= upto_seq:
            return Extracted(user_id, run_id, rules.DEFAULT_PERSONA, candidates=0)

        persona = conversation.persona
        skip = conversation.temporary or not self._stores.user_state.get_settings(user_id).allows(
            persona
        )
        slice_ = (
            []
            if skip
            else self._stores.conversations.list_messages(
                user_id,
                conversation_id,
                after_seq=conversation.extracted_upto_seq,
                upto_seq=upto_seq,
            )
        )
        transcript = tuple(
            TranscriptLine(message.message_id, message.role.value, message.content)
            for message in slice_
        )
        kept: tuple[Candidate, ...] = ()
        reports: tuple[ThreadReport, ...] = ()
        dropped: dict[str, int] = {}
        if any(line.role == "user" for line in transcript):
            threads = known_threads(self._stores.threads.list_threads(user_id, persona))
            try:
                proposed = self._model.extract(
                    ExtractionInput(
                        transcript=transcript,
                        profile=self._profile_text(user_id, persona),
                        known=self._known(user_id, persona, transcript),
                        today=self._clock.now().date(),
                        threads=threads,
                        deep=deep,
                    )
                )
            except ModelRefused:
                # The same slice would be refused again every day: read it and move on.
                proposed, dropped["refused"] = ExtractionResult(), 1
            proposed = with_thread_ids(proposed, threads)
            filtered = filter_candidates(
                proposed.candidates,
                transcript,
                created_today=self._created_today(user_id),
                daily_cap=DEEP_DAILY_CAP if deep else DAILY_CAP,
                max_candidates=DEEP_MAX_CANDIDATES if deep else MAX_CANDIDATES,
            )
            kept = filtered.kept
            reports = trusted_reports(
                proposed.reports, transcript, threads, own=lambda line: line.role == "assistant"
            )
            for _, reason in filtered.dropped:
                dropped[reason.value] = dropped.get(reason.value, 0) + 1
        now = self._clock.now()
        run = ExtractionRun(
            user_id=user_id,
            run_id=run_id,
            conversation_id=conversation_id,
            persona=persona,
            from_seq=conversation.extracted_upto_seq,
            upto_seq=upto_seq,
            created_at=now,
            expires_at=now + RUN_SHELF_LIFE,
            candidates=kept,
            reports=reports,
            dropped=dropped,
            deep=deep,
        )
        if not self._stores.runs.put_extraction_run(run, only_if_new=True):
            # Another try of this step got there first: its candidates are the run's.
            earlier = self._stores.runs.get_extraction_run(user_id, run_id)
            return self._extracted(earlier or run)
        if not kept and not reports:  # nothing to route: the slice has been read
            self._advance(run)
        return self._extracted(run)

    def _extracted(self, run: ExtractionRun) -> Extracted:
        return Extracted(
            run.user_id,
            run.run_id,
            run.persona,
            candidates=len(run.candidates),
            reports=len(run.reports),
        )

    def _profile_text(self, user_id: str, persona: str) -> str:
        profile = self._stores.user_state.get_profile(user_id, persona)
        return profile.text if profile else ""

    def _known(
        self, user_id: str, persona: str, transcript: Sequence[TranscriptLine]
    ) -> tuple[str, ...]:
        """What is already remembered near what was said, so the extractor adds what is new."""
        said = " ".join(line.content for line in transcript if line.role == "user")[-2000:]
        try:
            hits = self._index.search(
                user_id, self._embedder.embed([said])[0], k=KNOWN_FOR_EXTRACTION, persona=persona
            )
        except Exception as exc:  # the extractor can do without; it may then repeat a fact
            log.warning("known memories unavailable", extra={"error_type": type(exc).__name__})
            return ()
        rows = self._stores.memories.get_memories(user_id, [hit.memory_id for hit in hits])
        # Threads are offered apart, numbered, so a beat can name the one it continues.
        return tuple(
            memory.text
            for memory in rows
            if memory.status is Status.ACTIVE and memory.kind is not Kind.THREAD
        )

    def _created_today(self, user_id: str) -> int:
        start = datetime.combine(self._clock.now().date(), time(), tzinfo=UTC)
        page = self._stores.memories.list_memories(
            user_id, MemoryQuery(status=None, created_after=start), limit=100
        )
        return len(page.items)

    # ---- route --------------------------------------------------------------------------

    def route(self, user_id: str, run_id: str) -> RoutedRun:
        """Decide ADD · UPDATE · CLOSE · NONE for each candidate (one model call) and apply.

        What the user did since the messages were said comes first: a candidate whose
        memory the user corrected, deleted or forgot since is dropped, a message never
        overrules a belief stated after it, and of two statements about one key only the
        later counts (domain/overtaken.py, domain/routing.py).
        """
        run = self._stores.runs.get_extraction_run(user_id, run_id)
        if run is None:
            return RoutedRun(
                user_id,
                run_id,
                rules.DEFAULT_PERSONA,
                written=0,
                superseded=0,
                closed=0,
                profile_affected=False,
            )
        if run.routed_at is not None:
            return self._routed(run)
        times = _StatementTimes(self._stores, user_id, self._slice(run))
        rows = list(
            self._stores.memories.iter_memories(
                user_id, MemoryQuery(status=None, persona=run.persona)
            )
        )
        since = SinceTheMessages.of(
            rows,
            self._stores.tombstones.list_tombstones(user_id),
            self._stores.tombstones.forgotten_before(user_id),
        )
        active = [memory for memory in rows if memory.status is Status.ACTIVE]
        dropped = dict(run.dropped)
        live: list[tuple[int, datetime]] = []
        beats: list[Beat] = []
        for index, candidate in enumerate(run.candidates):
            said_at = times.said(candidate.evidence, default=run.created_at)
            reason = overtaken(candidate, said_at, since)
            if reason is not None:
                dropped[reason.value] = dropped.get(reason.value, 0) + 1
            elif candidate.kind is Kind.THREAD:
                # A thread is routed in code: its beats update it, never a second one.
                # A beat is a step of a story, not a belief: its id is this run's.
                identity = f"extract:{run.run_id}:{index}:{normalise_for_identity(candidate.text)}"
                beat_id = self._memories.memory_id(run.user_id, run.persona, identity)
                row = self._new_memory(run, beat_id, candidate, supersedes=None)
                beats.append(Beat(candidate, row))
            else:
                live.append((index, said_at))
        cases = [
            RoutingCase(run.candidates[i], tuple(self._neighbours(run, run.candidates[i], active)))
            for i, _ in live
        ]
        decisions = self._model.route(cases) if cases else []
        stated_at = {
            n.memory.memory_id: times.stated(n.memory) for case in cases for n in case.neighbours
        }
        routed = [
            Routed(
                case.candidate,
                said_at,
                resolve(
                    decision,
                    case.neighbours,
                    case.candidate,
                    said_at=said_at,
                    stated_at=stated_at,
                ),
            )
            for case, decision, (_, said_at) in zip(cases, decisions, live, strict=True)
        ]
        written: list[str] = []
        changed: list[Memory] = []
        conclusions: list[Conclusion] = []
        slice_ = self._slice(run)
        for (_, said_at), case, resolved in zip(live, cases, latest_per_key(routed), strict=True):
            if resolved.note:
                log.info("routing decision changed", extra={"note": resolved.note})
            outcome = self._apply(run, case, resolved)
            if outcome is not None:
                written.append(outcome.memory_id)
                changed.append(outcome)
            if case.candidate.concludes:
                acknowledged = acknowledged_after(
                    [(m.message_id, m.role.value == "assistant") for m in slice_],
                    case.candidate.evidence,
                )
                fact = outcome if outcome is not None else _same_as(case)
                conclusions.append(Conclusion(case.candidate, fact, acknowledged, said_at.date()))
        kept = self._keep_threads(run, beats, conclusions, times)
        written += [memory.memory_id for memory in kept]
        routed_run = dataclasses.replace(
            run,
            routed_at=self._clock.now(),
            written=tuple(written),
            dropped=dropped,
            profile_affected=self._profile_affected(changed),
        )
        self._stores.runs.put_extraction_run(routed_run)
        self._advance(routed_run)
        return self._routed(routed_run)

    def _keep_threads(
        self,
        run: ExtractionRun,
        beats: Sequence[Beat],
        conclusions: Sequence[Conclusion],
        times: _StatementTimes,
    ) -> list[Memory]:
        """The spell's beats, reports and conclusions applied to the user's threads; the
        new thread rows (for the notice). A failure here leaves the facts written."""
        if not beats and not conclusions and not run.reports:
            return []
        raised = [
            Raised(report, times.said([report.raised_in], default=run.created_at).date())
            for report in run.reports
        ]
        spell = ThreadSpell(
            owner=run.user_id,
            persona=run.persona,
            subject=subject_for_user(run.user_id),
            beats=beats,
            raised=raised,
            conclusions=conclusions,
        )
        return list(self._threads.apply(spell).written)

    def _slice(self, run: ExtractionRun) -> list[Message]:
        return self._stores.conversations.list_messages(
            run.user_id, run.conversation_id, after_seq=run.from_seq, upto_seq=run.upto_seq
        )

    def _routed(self, run: ExtractionRun) -> RoutedRun:
        rows = self._stores.memories.get_memories(run.user_id, list(run.written))
        return RoutedRun(
            run.user_id,
            run.run_id,
            run.persona,
            written=len(run.written),
            superseded=sum(1 for memory in rows if memory.supersedes is not None),
            closed=sum(1 for memory in rows if memory.status is Status.CLOSED),
            profile_affected=run.profile_affected,
        )

    def _neighbours(
        self, run: ExtractionRun, candidate: Candidate, active: Sequence[Memory]
    ) -> list[Neighbour]:
        """Its nearest memories (cosine ≥ 0.6, top 5) and every memory with the same key."""
        chosen: dict[str, Memory] = {}
        try:
            vector = self._embedder.embed([candidate.text])[0]
            hits = self._index.search(run.user_id, vector, k=NEIGHBOURS, persona=run.persona)
            near = [hit.memory_id for hit in hits if (hit.said or hit.score) >= NEIGHBOUR_FLOOR]
            chosen.update(
                (m.memory_id, m) for m in self._stores.memories.get_memories(run.user_id, near)
            )
        except Exception as exc:  # same-key rows still guard the obvious conflicts
            log.warning("neighbour search failed", extra={"error_type": type(exc).__name__})
        fact = standing_key(candidate.key, candidate.text)
        for memory in active:
            same_key = candidate.key is not None and memory.key == candidate.key
            if same_key or (fact is not None and key_of(memory) == fact):
                chosen.setdefault(memory.memory_id, memory)
        # A thread is never a fact's neighbour: a fact does not update a story in progress.
        believed = [
            m for m in chosen.values() if m.status is Status.ACTIVE and m.kind is not Kind.THREAD
        ]
        newest_first = sorted(believed, key=lambda m: m.created_at, reverse=True)
        return numbered(newest_first[: NEIGHBOURS + 3])

    def _apply(self, run: ExtractionRun, case: RoutingCase, resolved: Resolved) -> Memory | None:
        candidate = case.candidate
        try:
            if resolved.action is Action.ADD:
                return self._add(run, candidate)
            if resolved.action is Action.UPDATE and resolved.target is not None:
                return self._update(run, candidate, resolved.target)
            if resolved.action is Action.CLOSE and resolved.target is not None:
                # What says it stopped is kept, and the belief closes under it (seed 000:
                # the arc stays readable, `closed_by` the ending).
                ending = self._add(run, candidate)
                self._memories.close_under(resolved.target, ending, actor=Actor.EXTRACTOR)
                return ending
            same = next(
                (n.memory for n in case.neighbours if _same_fact(n.memory, candidate)), None
            )
            if same is not None and candidate.evidence[0] not in same.evidence:
                self._memories.seen_again(same, candidate.evidence)
        except (ConcurrentChange, MemoryNotFound, MemoryDisabled):
            # Already applied by an earlier try of this step, the memory moved on, or
            # memory was switched off meanwhile.
            return None
        return None

    def _update(self, run: ExtractionRun, candidate: Candidate, target: Memory) -> Memory | None:
        memory_id, existing = self._landing(run, candidate)
        if existing is not None:  # this step's earlier try, or the new words already held
            return existing if existing.supersedes == target.memory_id else None
        memory = self._new_memory(run, memory_id, candidate, supersedes=target.memory_id)
        return self._memories.supersede(target, memory, actor=Actor.EXTRACTOR)

    def _add(self, run: ExtractionRun, candidate: Candidate) -> Memory | None:
        memory_id, existing = self._landing(run, candidate)
        if existing is None:
            memory = self._new_memory(run, memory_id, candidate, supersedes=None)
            self._memories.add_extracted(memory)
            return memory
        # The same belief is already held under its identity: a re-run of this step finds
        # its own write; anything else is the belief said again.
        if existing.source_message_id == candidate.evidence[0]:
            return existing
        self._memories.seen_again(existing, candidate.evidence)
        return None

    def _landing(self, run: ExtractionRun, candidate: Candidate) -> tuple[str, Memory | None]:
        """The id a candidate's belief lands on (seed 003: the same belief written twice is
        one record, whichever run or path writes it), and the active row already there.
        An event is an observation: the day it happened is part of what it is."""
        observed = candidate.valid_from or (
            self._clock.now() if candidate.kind is Kind.EVENT else None
        )
        identity = belief_identity(
            candidate.category,
            candidate.text,
            observed.date().isoformat() if candidate.kind is Kind.EVENT and observed else None,
        )
        return self._memories.identity(run.user_id, run.persona, identity)

    def _new_memory(
        self, run: ExtractionRun, memory_id: str, candidate: Candidate, *, supersedes: str | None
    ) -> Memory:
        now = self._clock.now()
        meta: dict[str, Any] = {"uses": list(candidate.uses)} if candidate.uses else {}
        return Memory(
            user_id=run.user_id,
            memory_id=memory_id,
            text=candidate.text,
            created_at=now,
            updated_at=now,
            persona=run.persona,
            room_id=run.conversation_id,
            kind=candidate.kind,
            category=candidate.category,
            key=candidate.key,
            importance=candidate.importance,
            stated_by=candidate.stated_by,
            valid_from=candidate.valid_from,
            valid_until=candidate.valid_until
            if candidate.valid_until is None or candidate.valid_until > now
            else None,
            supersedes=supersedes,
            evidence=candidate.evidence,
            source_message_id=candidate.evidence[0],
            meta=meta,
        )

    @staticmethod
    def _profile_affected(changed: Sequence[Memory]) -> bool:
        """Did the run write anything? Then the profile is rebuilt (a no-op when its
        digest is unchanged): a write may close what the profile holds under a memory the
        profile never takes (an ending, an event), so what was written alone cannot say."""
        return bool(changed)

    def _advance(self, run: ExtractionRun) -> None:
        self._stores.conversations.advance_extraction(
            run.user_id, run.conversation_id, upto_seq=run.upto_seq, expected_upto_seq=run.from_seq
        )

    # ---- profile and notice -------------------------------------------------------------

    def rebuild_profile(self, user_id: str, persona: str) -> ProfileRebuilt:
        """Rebuild the digest from the active memories; unchanged digests are not rewritten."""
        return ProfileRebuilt(ProfileBuilder(self._stores, self._clock).rebuild(user_id, persona))

    def notify(self, user_id: str, run_id: str) -> Notified:
        """One notice per conversation per run: "noted: … · undo"."""
        run = self._stores.runs.get_extraction_run(user_id, run_id)
        if run is None or run.notice_id is not None:
            return Notified(run.notice_id if run else None)
        new_rows = [
            memory
            for memory in self._stores.memories.get_memories(user_id, list(run.written))
            if memory.status is Status.ACTIVE
        ]
        if not new_rows:
            return Notified(None)
        notice_id = "ntc_" + uuid.uuid5(CHATMEMORY_NAMESPACE, f"notice:{run.run_id}").hex
        self._stores.notices.add_notice(
            Notice(
                user_id=user_id,
                notice_id=notice_id,
                text=announce((memory.text for memory in new_rows), persona=run.persona),
                memory_ids=tuple(memory.memory_id for memory in new_rows),
                created_at=self._clock.now(),
                persona=run.persona,
                conversation_id=run.conversation_id,
            )
        )
        self._stores.runs.put_extraction_run(dataclasses.replace(run, notice_id=notice_id))
        return Notified(notice_id)

    def record_failure(
        self, user_id: str, run_id: str | None, error: str, cause: str = ""
    ) -> FailureRecorded:
        """Keep the error's kind on the run (never its text, which may quote the user)."""
        kind = error[:80] or "Unknown"
        log.error("write pipeline failed", extra={"error_type": kind})
        run = self._stores.runs.get_extraction_run(user_id, run_id) if run_id else None
        if run is not None:
            self._stores.runs.put_extraction_run(dataclasses.replace(run, failure=kind))
        return FailureRecorded(recorded=run is not None, error=kind)


class InProcessPipeline(PipelineStarter):
    """Runs the same steps, in the same order as the state machine, in this process."""

    def __init__(self, pipeline: WritePipeline) -> None:
        self._pipeline = pipeline

    def start_write(
        self, user_id: str, conversation_id: str, upto_seq: int, *, deep: bool = False
    ) -> bool:
        extracted = self._pipeline.extract(user_id, conversation_id, upto_seq, deep)
        run_id = extracted.run_id
        try:
            if extracted.candidates or extracted.reports:
                routed = self._pipeline.route(user_id, run_id)
                if routed.profile_affected:
                    self._pipeline.rebuild_profile(user_id, routed.persona)
                self._pipeline.notify(user_id, run_id)
        except Exception as exc:  # the state machine's Catch: record, then give up
            self._pipeline.record_failure(user_id, run_id, type(exc).__name__)
            raise
        return True


def _same_as(case: RoutingCase) -> Memory | None:
    """The neighbour already saying a candidate's words (the router's NONE for it)."""
    return next((n.memory for n in case.neighbours if _same_fact(n.memory, case.candidate)), None)


def _same_fact(memory: Memory, candidate: Candidate) -> bool:
    return normalise_for_identity(memory.text) == normalise_for_identity(candidate.text)


class _StatementTimes:
    """When things were said: the messages of a run's slice, and of any other message a
    memory was drawn from (looked up once each). A belief with no message behind it was
    stated when it was written (typed through the API, or a correction)."""

    def __init__(self, stores: Stores, user_id: str, messages: Sequence[Message]) -> None:
        self._stores = stores
        self._user_id = user_id
        self._at: dict[str, datetime | None] = {m.message_id: m.created_at for m in messages}

    def said(self, message_ids: Sequence[str], *, default: datetime) -> datetime:
        """When the last of these messages was said."""
        times = [at for at in map(self._message_time, message_ids) if at is not None]
        return max(times) if times else default

    def stated(self, memory: Memory) -> datetime:
        source = memory.source_message_id
        return (self._message_time(source) if source else None) or memory.created_at

    def _message_time(self, message_id: str) -> datetime | None:
        if message_id not in self._at:
            found = parse_message_id(message_id)
            messages = (
                self._stores.conversations.list_messages(
                    self._user_id, found[0], after_seq=found[1] - 1, upto_seq=found[1]
                )
                if found
                else []
            )
            self._at[message_id] = messages[0].created_at if messages else None
        return self._at[message_id]
