"""A room's write (seed 000 §2): when a room goes quiet, each seated persona carries away
what it may — off the floor, once per quiet spell, from its own seat.

For one persona: the transcript since its cursor, the people present (by `u:` id) and
today's date go to one extraction call; code keeps only what the write filter allows
(`domain/room_extraction.py`: about someone present who lets this persona remember
them, in their own words, over the importance floor, within the daily cap); one routing
call decides ADD · UPDATE · CLOSE · NONE for each against the persona's own nearest rows
(cosine ≥ 0.6, top 5, numbered); then one notice per person ("Warren noted: … · undo").
Nothing at all is read or written in a fiction or incognito room; the lines of someone
who keeps memory off, or muted this persona, are not even shown to the model.

Where a row lives: about a user, or a persona's promise to one, in that user's partition
(their delete-all reaches it); a world fact, or a persona's note with no one, in the
persona's own partition (`PersonaMemoryStore`).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from chatmemory.domain import vectors
from chatmemory.domain.errors import (
    ConcurrentChange,
    MemoryDisabled,
    MemoryNotFound,
    ModelRefused,
)
from chatmemory.domain.events import Actor
from chatmemory.domain.extraction import (
    Candidate,
    ExtractionInput,
    ExtractionResult,
    KnownThread,
    RoomSeat,
    TranscriptLine,
    known_threads,
    trusted_reports,
    with_thread_ids,
)
from chatmemory.domain.ids import CHATMEMORY_NAMESPACE, normalise_for_identity
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.notice import Notice, announce
from chatmemory.domain.room_extraction import WORLD_CAP, filter_room_candidates, whom_about
from chatmemory.domain.rooms import Room, RoomMessage
from chatmemory.domain.routing import Action, Neighbour, Resolved, numbered, resolve
from chatmemory.domain.standing import key_of, standing_key
from chatmemory.domain.threads import ThreadReport, acknowledged_after
from chatmemory.ports.clock import Clock
from chatmemory.ports.embedder import Embedder
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.model import Model, RoutingCase
from chatmemory.ports.stores import Stores
from chatmemory.services.idle import IDLE_AFTER
from chatmemory.services.memories import MemoryService
from chatmemory.services.threads import Beat, Conclusion, Raised, ThreadKeeper, ThreadSpell

log = logging.getLogger(__name__)

NEIGHBOURS = 5  # per candidate (seed 000 §7: top 5 by cosine ≥ 0.6)
NEIGHBOUR_FLOOR = 0.6
KNOWN_FOR_EXTRACTION = 15  # what the persona already holds, so it extracts what is new
_NOT_READ = "(a message from someone who has not let {persona} remember them; not shown)"


@dataclass(frozen=True, slots=True)
class RoomWritten:
    """What one persona's write did: counts and ids, never text."""

    room_id: str
    persona: str
    upto_seq: int
    written: int = 0
    notices: int = 0
    dropped: Mapping[str, int] = field(default_factory=dict)
    skipped: str | None = None  # "fiction" · "incognito" · "read" (nothing new)


@dataclass(frozen=True, slots=True)
class _Spell:
    """One persona's read of one quiet spell: the room, the seat, the lines read."""

    room: Room
    persona: str
    upto_seq: int
    seat: RoomSeat
    lines: Sequence[RoomMessage]


@dataclass(frozen=True, slots=True)
class _Home:
    """The partition a candidate's row lives in: a user's, or the persona's own."""

    owner: str
    persona_held: bool


class RoomWrites:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        *,
        model: Model | Callable[[], Model],
        embedder: Embedder | Callable[[], Embedder],
        memories: MemoryService | Callable[[], MemoryService],
        quiet_after: timedelta = IDLE_AFTER,
    ) -> None:
        """Heavy collaborators may be factories: a check that finds nothing to do loads
        no model."""
        self._stores = stores
        self._clock = clock
        self._parts: dict[str, Any] = {"model": model, "embedder": embedder, "memories": memories}
        self._threads = ThreadKeeper(stores, clock, lambda: self._part("memories"))
        self.quiet_after = quiet_after

    def _part(self, name: str) -> Any:
        part = self._parts[name]
        if callable(part) and not isinstance(part, Model | Embedder | MemoryService):
            part = self._parts[name] = part()
        return part

    # ---- when ---------------------------------------------------------------------

    def check(self, room_id: str, *, now_or_never: bool = False) -> int:
        """Write for every seated persona that has unread lines, if the room is quiet (a
        newer message re-armed the timer otherwise); how many personas wrote.
        `now_or_never`: skip the quiet period (`chatmemory flush`)."""
        room = self._stores.rooms.get_room(room_id)
        if room is None or room.last_message_at is None:
            return 0
        quiet = room.last_message_at + self.quiet_after <= self._clock.now()
        if not quiet and not now_or_never:
            return 0
        ran = 0
        for persona in sorted(room.personas):
            if self._stores.rooms.extraction_cursor(room_id, persona) >= room.last_seq:
                continue
            try:
                self.write(room_id, persona, room.last_seq)
                ran += 1
            except Exception as exc:  # one persona's failure leaves the others' writes
                log.warning(
                    "room write failed",
                    extra={"error_type": type(exc).__name__, "persona": persona},
                )
        return ran

    def sweep(
        self,
        *,
        now_or_never: bool = False,
        batch: int = 100,
        hand_off: Callable[[str], None] | None = None,
    ) -> int:
        """Write for every quiet room some persona has not read to the end (a lost timer,
        a failed write); how many personas wrote — or, with `hand_off`, pass each room on
        (on AWS: its quiet check goes back on the queue, so the writes run where the model
        is, in parallel) and return how many rooms were handed off. A handed-off room stays
        listed until its write ran, so one sweep hands off at most `batch` rooms."""
        cutoff = self._clock.now() - (timedelta(0) if now_or_never else self.quiet_after)
        if hand_off is not None:
            rooms = self._stores.rooms.quiet_rooms(said_before=cutoff, limit=batch)
            for room_id in rooms:
                hand_off(room_id)
            return len(rooms)
        ran = 0
        seen: set[str] = set()
        while True:
            rooms = [
                r
                for r in self._stores.rooms.quiet_rooms(said_before=cutoff, limit=batch)
                if r not in seen
            ]
            if not rooms:
                return ran
            for room_id in rooms:
                seen.add(room_id)
                try:
                    ran += self.check(room_id, now_or_never=True)
                except Exception as exc:  # one room's failure never stops the sweep
                    log.warning(
                        "room sweep could not write", extra={"error_type": type(exc).__name__}
                    )

    # ---- one persona ----------------------------------------------------------------

    def write(self, room_id: str, persona: str, upto_seq: int) -> RoomWritten:
        """Read the persona's unread lines up to `upto_seq` and write what it may keep.

        Idempotent: memory ids come from the room, the slice and the words, so a retried
        write lands on the rows the first try wrote; the cursor moves only from where it
        was read. A failure of the model leaves the cursor where it was, for a retry.
        """
        room = self._stores.rooms.get_room(room_id)
        cursor = self._stores.rooms.extraction_cursor(room_id, persona)
        if room is None or persona not in room.personas or cursor >= upto_seq:
            return RoomWritten(room_id, persona, upto_seq, skipped="read")
        if room.fiction or room.incognito:
            self._advance(room, persona, upto_seq, cursor)
            return RoomWritten(
                room_id, persona, upto_seq, skipped="fiction" if room.fiction else "incognito"
            )
        lines = self._stores.rooms.list_room_messages(room_id, after_seq=cursor, upto_seq=upto_seq)
        present = room.members | {line.speaker[2:] for line in lines if line.speaker[:2] == "u:"}
        settings = {user: self._stores.user_state.get_settings(user) for user in sorted(present)}
        allowed = frozenset(user for user, s in settings.items() if s.allows(persona))
        transcript = _transcript(lines, persona, allowed)
        seat = RoomSeat(persona=persona, present=tuple(present), group=not room.is_private_chat)
        if not any(line.speaker[2:] in allowed for line in transcript if line.role == "user"):
            self._advance(room, persona, upto_seq, cursor)
            return RoomWritten(room_id, persona, upto_seq, skipped="read")
        held = self._held(persona, allowed)
        threads = known_threads([m for m in held if m.subject.startswith("u:")])
        proposed = self._extract(transcript, seat, held, threads)
        filtered = filter_room_candidates(
            proposed.candidates,
            transcript,
            seat,
            allowed=allowed,
            created_today=self._created_today(persona, allowed),
        )
        dropped: dict[str, int] = {}
        for _, reason in filtered.dropped:
            dropped[reason.value] = dropped.get(reason.value, 0) + 1
        spell = _Spell(room, persona, upto_seq, seat, lines)
        facts = [c for c in filtered.kept if c.kind is not Kind.THREAD]
        written, conclusions = self._route_and_apply(spell, facts, held)
        speaker = f"p:{persona}"
        reports = trusted_reports(
            proposed.reports, transcript, threads, own=lambda line: line.speaker == speaker
        )
        written += self._keep_threads(spell, filtered.kept, conclusions, reports, threads)
        notices = self._notify(room, persona, upto_seq, written)
        self._advance(room, persona, upto_seq, cursor)
        return RoomWritten(
            room_id, persona, upto_seq, written=len(written), notices=notices, dropped=dropped
        )

    def _extract(
        self,
        transcript: Sequence[TranscriptLine],
        seat: RoomSeat,
        held: Sequence[Memory],
        threads: Sequence[KnownThread],
    ) -> ExtractionResult:
        model: Model = self._part("model")
        known = tuple(_known_line(m) for m in held if m.kind is not Kind.THREAD)[
            :KNOWN_FOR_EXTRACTION
        ]
        request = ExtractionInput(
            transcript=tuple(transcript),
            profile="",
            known=known,
            today=self._clock.now().date(),
            seat=seat,
            threads=tuple(threads),
        )
        try:
            return with_thread_ids(model.extract(request), threads)
        except ModelRefused:  # the same slice would be refused again: read it, move on
            return ExtractionResult()

    def _keep_threads(
        self,
        spell: _Spell,
        kept: Sequence[Candidate],
        conclusions: Sequence[Conclusion],
        reports: Sequence[ThreadReport],
        threads: Sequence[KnownThread],
    ) -> list[Memory]:
        """Each present person's threads as the spell left them (their beats, what the
        persona raised, what concluded), and the room's one stamp when a thread was
        raised here (law 8); the new thread rows, for the notices."""
        said_on = {line.message_id: line.created_at.date() for line in spell.lines}
        subject_of = {thread.memory_id: thread.subject for thread in threads}
        by_subject: dict[str, ThreadSpell] = {}

        def of(subject: str) -> ThreadSpell:
            user = subject.removeprefix("u:")
            return by_subject.setdefault(
                subject, ThreadSpell(owner=user, persona=spell.persona, subject=subject)
            )

        for index, candidate in enumerate(kept):
            if candidate.kind is Kind.THREAD and candidate.subject.startswith("u:"):
                row = self._new_memory(spell, index, candidate, self._vector(candidate))
                item = of(candidate.subject)
                by_subject[candidate.subject] = dataclasses.replace(
                    item, beats=(*item.beats, Beat(candidate, row))
                )
        for report in reports:
            subject = subject_of.get(report.thread)
            on = said_on.get(report.raised_in)
            if subject is None or on is None:
                continue
            item = of(subject)
            by_subject[subject] = dataclasses.replace(
                item, raised=(*item.raised, Raised(report, on))
            )
        for conclusion in conclusions:
            subject = subject_of.get(conclusion.candidate.concludes or "")
            if subject is not None:
                item = of(subject)
                by_subject[subject] = dataclasses.replace(
                    item, conclusions=(*item.conclusions, conclusion)
                )
        written: list[Memory] = []
        for subject in sorted(by_subject):
            written += self._threads.apply(by_subject[subject]).written
        raised_on = [said_on[r.raised_in] for r in reports if r.raised_in in said_on]
        if raised_on:
            self._stores.rooms.mark_threads_asked(spell.room.room_id, max(raised_on))
        return written

    def _vector(self, candidate: Candidate) -> npt.NDArray[np.float32]:
        embedder: Embedder = self._part("embedder")
        return np.asarray(embedder.embed([candidate.text])[0], dtype=np.float32)

    def _held(self, persona: str, allowed: frozenset[str]) -> list[Memory]:
        """The persona's active rows the write may route against: about (or with) the
        people present who allow it, and its own; newest first."""
        rows: list[Memory] = []
        query = MemoryQuery(status=Status.ACTIVE, persona=persona)
        for user in sorted(allowed):
            rows.extend(self._stores.memories.iter_memories(user, query))
        rows.extend(self._stores.persona_memories.list_persona_memories(persona))
        return sorted(rows, key=lambda m: m.created_at, reverse=True)

    def _created_today(self, persona: str, allowed: frozenset[str]) -> dict[str, int]:
        start = datetime.combine(self._clock.now().date(), time(), tzinfo=UTC)
        counts: dict[str, int] = {}
        for user in allowed:
            page = self._stores.memories.list_memories(
                user, MemoryQuery(status=None, persona=persona, created_after=start), limit=100
            )
            counts[user] = len(page.items)
        own = self._stores.persona_memories.list_persona_memories(persona, status=None)
        counts[WORLD_CAP] = sum(1 for m in own if m.created_at > start)
        return counts

    # ---- route and apply ------------------------------------------------------------

    def _route_and_apply(
        self, spell: _Spell, kept: Sequence[Candidate], held: Sequence[Memory]
    ) -> tuple[list[Memory], list[Conclusion]]:
        """What the router decided for each candidate, applied; and each fact that
        concluded a thread, with whether the persona answered the news in the spell."""
        if not kept:
            return [], []
        embedder: Embedder = self._part("embedder")
        said_vectors = np.asarray(embedder.embed([c.text for c in kept]), dtype=np.float32)
        cases = [
            RoutingCase(candidate, tuple(self._neighbours(candidate, vector, held)))
            for candidate, vector in zip(kept, said_vectors, strict=True)
        ]
        model: Model = self._part("model")
        decisions = model.route(cases)
        said_at = {line.message_id: line.created_at for line in spell.lines}
        stated = {m.memory_id: m.created_at for m in held}
        written: list[Memory] = []
        conclusions: list[Conclusion] = []
        for index, (case, decision, vector) in enumerate(
            zip(cases, decisions, said_vectors, strict=True)
        ):
            candidate = case.candidate
            when = max((said_at[e] for e in candidate.evidence if e in said_at), default=None)
            resolved = resolve(
                decision,
                case.neighbours,
                candidate,
                said_at=when or self._clock.now(),
                stated_at=stated,
            )
            new = self._new_memory(spell, index, candidate, vector)
            outcome = self._apply(new, case, resolved)
            if outcome is not None:
                written.append(outcome)
            if candidate.concludes:
                said = normalise_for_identity(candidate.text)
                fact = outcome or next(
                    (
                        n.memory
                        for n in case.neighbours
                        if normalise_for_identity(n.memory.text) == said
                    ),
                    None,
                )
                own = f"p:{spell.persona}"
                acknowledged = acknowledged_after(
                    [(line.message_id, line.speaker == own) for line in spell.lines],
                    candidate.evidence,
                )
                on = (when or self._clock.now()).date()
                conclusions.append(Conclusion(candidate, fact, acknowledged, on))
        return written, conclusions

    def _neighbours(
        self, candidate: Candidate, vector: npt.NDArray[np.float32], held: Sequence[Memory]
    ) -> list[Neighbour]:
        """The persona's rows about the same subject nearest to the candidate (cosine ≥ 0.6,
        top 5), and every one with the same key."""
        same_scope = [
            m
            for m in held
            if m.subject == (candidate.subject or m.subject)
            and m.counterpart == candidate.counterpart
            and m.kind is not Kind.THREAD  # a fact never updates a story in progress
        ]
        scored: list[tuple[float, Memory]] = []
        missing = [m for m in same_scope if m.embedding is None]
        fresh: dict[str, npt.NDArray[np.float32]] = {}
        if missing:
            embedder: Embedder = self._part("embedder")
            for memory, row in zip(missing, embedder.embed([m.text for m in missing]), strict=True):
                fresh[memory.memory_id] = np.asarray(row, dtype=np.float32)
        for memory in same_scope:
            row_vector = (
                vectors.said_vector(memory.embedding)
                if memory.embedding is not None
                else fresh[memory.memory_id]
            )
            scored.append((vectors.cosine(vector, row_vector), memory))
        scored.sort(key=lambda pair: pair[0], reverse=True)
        chosen = {m.memory_id: m for score, m in scored[:NEIGHBOURS] if score >= NEIGHBOUR_FLOOR}
        fact = standing_key(candidate.key, candidate.text)
        for memory in same_scope:
            same_key = candidate.key is not None and memory.key == candidate.key
            if same_key or (fact is not None and key_of(memory) == fact):
                chosen.setdefault(memory.memory_id, memory)
        return numbered(sorted(chosen.values(), key=lambda m: m.created_at, reverse=True))

    def _new_memory(
        self, spell: _Spell, index: int, candidate: Candidate, vector: npt.NDArray[np.float32]
    ) -> Memory:
        now = self._clock.now()
        persona = spell.persona
        home = _home(candidate, persona)
        words = normalise_for_identity(candidate.text)
        identity = f"room:{spell.room.room_id}:{spell.upto_seq}:{index}:{words}"
        return Memory(
            user_id=home.owner,
            memory_id=self._part("memories").memory_id(home.owner, persona, identity),
            text=candidate.text,
            created_at=now,
            updated_at=now,
            persona=persona,
            subject=candidate.subject,
            counterpart=candidate.counterpart,
            witnessed=spell.seat.present,
            room_id=spell.room.room_id,
            kind=candidate.kind,
            category=candidate.category,
            key=candidate.key,
            importance=candidate.importance,
            stated_by=candidate.stated_by,
            valid_from=candidate.valid_from,
            valid_until=candidate.valid_until
            if candidate.valid_until is None or candidate.valid_until > now
            else None,
            evidence=candidate.evidence,
            source_message_id=candidate.evidence[0],
            meta={"uses": list(candidate.uses)} if candidate.uses else {},
            # Persona-held rows keep their vector for the next write's neighbours; a user's
            # rows get theirs from the indexer on write.
            embedding=vectors.pack_rows(vector[np.newaxis, :]) if home.persona_held else None,
        )

    def _apply(self, new: Memory, case: RoutingCase, resolved: Resolved) -> Memory | None:
        try:
            if new.held_by_persona:
                return self._apply_held(new, resolved)
            return self._apply_to_user(new, case, resolved)
        except (ConcurrentChange, MemoryNotFound, MemoryDisabled):
            # Applied by an earlier try, the row moved on, or the person switched memory
            # off since the spell began: nothing is written.
            return None

    def _apply_to_user(self, new: Memory, case: RoutingCase, resolved: Resolved) -> Memory | None:
        """In the user's partition, through the same service as every other write (the
        write filter, the switches, the index, the audit events)."""
        memories: MemoryService = self._part("memories")
        target = resolved.target
        if resolved.action is Action.ADD:
            return new if memories.add_extracted(new) else None
        if resolved.action is Action.UPDATE and target is not None:
            replacement = new.with_changes(supersedes=target.memory_id)
            return memories.supersede(target, replacement, actor=Actor.EXTRACTOR)
        if resolved.action is Action.CLOSE and target is not None:
            ending = new if memories.add_extracted(new) else None
            memories.close_under(target, ending, actor=Actor.EXTRACTOR)
            return ending
        said = normalise_for_identity(new.text)
        same = next(
            (n.memory for n in case.neighbours if normalise_for_identity(n.memory.text) == said),
            None,
        )
        if same is not None and new.evidence[0] not in same.evidence:
            memories.seen_again(same, new.evidence)
        return None

    def _apply_held(self, new: Memory, resolved: Resolved) -> Memory | None:
        """In the persona's own partition: world facts and its notes with no one."""
        own = self._stores.persona_memories
        target = resolved.target
        if resolved.action is Action.ADD:
            return new if own.add_persona_memory(new) else None
        if resolved.action is Action.UPDATE and target is not None:
            replacement = new.with_changes(supersedes=target.memory_id)
            own.supersede_persona_memory(new.persona, target.memory_id, replacement)
            return replacement
        if resolved.action is Action.CLOSE and target is not None:
            return own.close_persona_memory(new.persona, target.memory_id, new.created_at)
        return None

    # ---- notices and the cursor -----------------------------------------------------

    def _notify(
        self,
        room: Room,
        persona: str,
        upto_seq: int,
        written: Sequence[Memory],
    ) -> int:
        """One notice per person per persona per quiet spell: a chatty evening is one toast."""
        by_user: dict[str, list[Memory]] = {}
        for memory in written:
            if memory.status is Status.ACTIVE and not memory.held_by_persona:
                by_user.setdefault(memory.user_id, []).append(memory)
        for user, rows in sorted(by_user.items()):
            name = f"notice:room:{room.room_id}:{persona}:{upto_seq}:{user}"
            self._stores.notices.add_notice(
                Notice(
                    user_id=user,
                    notice_id="ntc_" + uuid.uuid5(CHATMEMORY_NAMESPACE, name).hex,
                    text=announce((m.text for m in rows), persona=persona),
                    memory_ids=tuple(m.memory_id for m in rows),
                    created_at=self._clock.now(),
                    persona=persona,
                    conversation_id=room.room_id,
                )
            )
        return len(by_user)

    def _advance(self, room: Room, persona: str, upto_seq: int, cursor: int) -> None:
        self._stores.rooms.advance_room_extraction(
            room.room_id, persona, upto_seq=upto_seq, expected_upto_seq=cursor
        )


def _home(candidate: Candidate, persona: str) -> _Home:
    user = whom_about(candidate)
    return _Home(user, persona_held=False) if user else _Home(persona, persona_held=True)


def _transcript(
    lines: Sequence[RoomMessage], persona: str, allowed: frozenset[str]
) -> list[TranscriptLine]:
    """The slice as the extractor reads it: each line with its id and speaker; the words of
    someone who does not let this persona remember them are not shown at all."""
    transcript = []
    for line in lines:
        human = line.speaker.startswith("u:")
        shown = line.text
        if human and line.speaker[2:] not in allowed:
            shown = _NOT_READ.format(persona=persona)
        transcript.append(
            TranscriptLine(
                message_id=line.message_id,
                role="user" if human else "assistant",
                content=shown,
                speaker=line.speaker,
            )
        )
    return transcript


def _known_line(memory: Memory) -> str:
    """A held row as the extractor sees it: whom it is about, then its words, so in a
    group it can tell whose it is ("u:dan: Is vegetarian.")."""
    scope = memory.subject
    if memory.subject == "self":
        scope = f"self, with {memory.counterpart}" if memory.counterpart else "self"
    return f"{scope}: {memory.text}"
