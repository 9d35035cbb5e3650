"""What the background extractor may propose, and the write filter that code enforces.

Seed 002: "the write filter matters more than the search". A candidate is kept only if it
is durable, about the user, useful later — and the rules code can check are checked in
code, whatever the model said: only the user's own statements (never pasted or quoted
text, never the assistant's words), importance ≥ 3, no secrets, nothing shaped like an
instruction to the model, sensitive categories only when the user asked, and a daily cap
of new memories per user.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import Any

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.ids import CHATMEMORY_NAMESPACE
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.secrets import find_secret, find_secrets, holds_withheld, repeats_secret
from chatmemory.domain.sensitive import reads_sensitive, sensitive_category
from chatmemory.domain.threads import (
    THREAD_TEXT_MAX,
    Cadence,
    ThreadReport,
    last_beat_of,
    mentions,
    meta_of,
)
from chatmemory.domain.time import require_utc
from chatmemory.domain.uses import clean_uses
from chatmemory.domain.write_filter import instruction_shape, side_texts

IMPORTANCE_FLOOR = 3
DAILY_CAP = 12
MAX_CANDIDATES = 12
# A deep read (the user asked to remember the whole conversation, or the daily sweep reads
# what the idle timers missed) covers more at once and is the user's own request or a
# catch-up: it may keep twice as many candidates, and add twice as many memories that day.
DEEP_MAX_CANDIDATES = 24
DEEP_DAILY_CAP = 24
# A message this long, or shaped like a document, is material the user brought, not
# something they said about themselves (seed 002: pasted text cannot plant a memory).
PASTED_CHARS = 1200
_PASTED_SHAPES = re.compile(
    r"```|^\s*>|^\s*(?:#{1,6} |[-*] |\d+\. )|https?://|\b(?:the user|the assistant|ai model|"
    r"system prompt|as an ai)\b",
    re.IGNORECASE | re.MULTILINE,
)
_ASKED_TO_REMEMBER = re.compile(
    r"\b(?:remember|don't forget|do not forget|keep in mind|note that|save that)\b", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One message of the slice the extractor reads; its id is what evidence points to."""

    message_id: str
    role: str  # "user" | "assistant"
    content: str
    # In a room, who said it: "u:<user id>" or "p:<persona>" ("" in a one-to-one chat).
    speaker: str = ""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One proposed memory: a standalone sentence, with where it came from."""

    text: str
    category: str
    kind: Kind
    importance: int
    stated_by: StatedBy
    evidence: tuple[str, ...]
    key: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    uses: tuple[str, ...] = ()
    # Whom it is about, in a room: "u:<user id>", "self" (the persona's own promise or
    # open loop, with its `counterpart` "u:<user id>") or "world". "" in a one-to-one
    # chat, where every candidate is about the user.
    subject: str = ""
    counterpart: str | None = None
    # A thread's beat (seed 004): how fast the story moves, the day an event waits for,
    # and the known thread it continues — the extractor's number for it ("T1"), the
    # thread's memory id once the service mapped it back; None for a new concern.
    cadence: Cadence | None = None
    event_on: date | None = None
    thread: str | None = None
    # A plain fact that concludes a known thread ("Works at Acme since Dec 2026."): the
    # thread resolves and rests under it. Its number, then its id, as for `thread`.
    concludes: str | None = None

    def __post_init__(self) -> None:
        rules.text("text", self.text, rules.EXTRACTED_TEXT_MAX)
        _check_scope(self.subject, self.counterpart)
        rules.category(self.category)
        object.__setattr__(self, "kind", Kind(self.kind))
        self._check_thread_fields()
        object.__setattr__(self, "stated_by", StatedBy(self.stated_by))
        rules.int_range("importance", self.importance, 1, 10)
        if not self.evidence:
            raise InvalidField("evidence", "a candidate points to the messages it came from")
        object.__setattr__(self, "evidence", rules.id_tuple("evidence", self.evidence))
        if self.key is not None:
            rules.key(self.key)
        for name in ("valid_from", "valid_until"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, require_utc(name, value))
        if self.valid_from and self.valid_until and self.valid_until <= self.valid_from:
            raise InvalidField("valid_until", "must come after valid_from")
        object.__setattr__(self, "uses", clean_uses(self.uses))

    def _check_thread_fields(self) -> None:
        """A thread's fields only on a thread (its text one short sentence, its anchors
        whole); `concludes` only on what is not one."""
        if self.kind is Kind.THREAD:
            rules.text("text", self.text, THREAD_TEXT_MAX)
            if self.cadence is not None:
                object.__setattr__(self, "cadence", Cadence(self.cadence))
            if self.event_on is not None and type(self.event_on) is not date:
                raise InvalidField("event_on", "must be a date")
            if self.concludes is not None:
                raise InvalidField("concludes", "a thread does not conclude another")
        elif self.cadence is not None or self.event_on is not None or self.thread is not None:
            raise InvalidField("cadence", "only a thread has a cadence, an event day or a thread")
        for name in ("thread", "concludes"):
            value = getattr(self, name)
            if value is not None:
                rules.opaque_id(name, value)

    @property
    def continues_thread(self) -> bool:
        """A beat of a thread already followed: it rides whatever its importance."""
        return self.kind is Kind.THREAD and self.thread is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "category": self.category,
            "kind": self.kind.value,
            "importance": self.importance,
            "stated_by": self.stated_by.value,
            "evidence": list(self.evidence),
            "key": self.key,
            "valid_from": self.valid_from.isoformat() if self.valid_from else None,
            "valid_until": self.valid_until.isoformat() if self.valid_until else None,
            "uses": list(self.uses),
            "subject": self.subject,
            "counterpart": self.counterpart,
            "cadence": self.cadence.value if self.cadence else None,
            "event_on": self.event_on.isoformat() if self.event_on else None,
            "thread": self.thread,
            "concludes": self.concludes,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Candidate:
        def when(name: str) -> datetime | None:
            value = data.get(name)
            return datetime.fromisoformat(value) if value else None

        return cls(
            text=str(data["text"]),
            category=str(data.get("category") or rules.DEFAULT_CATEGORY),
            kind=Kind(str(data.get("kind") or Kind.FACT.value)),
            importance=int(data.get("importance") or 5),
            stated_by=StatedBy(str(data.get("stated_by") or StatedBy.USER.value)),
            evidence=tuple(str(e) for e in data.get("evidence") or ()),
            key=str(data["key"]) if data.get("key") else None,
            valid_from=when("valid_from"),
            valid_until=when("valid_until"),
            uses=tuple(str(u) for u in data.get("uses") or ()),
            subject=str(data.get("subject") or ""),
            counterpart=str(data["counterpart"]) if data.get("counterpart") else None,
            cadence=Cadence(str(data["cadence"])) if data.get("cadence") else None,
            event_on=date.fromisoformat(str(data["event_on"])) if data.get("event_on") else None,
            thread=str(data["thread"]) if data.get("thread") else None,
            concludes=str(data["concludes"]) if data.get("concludes") else None,
        )


def _check_scope(subject: str, counterpart: str | None) -> None:
    if subject in ("", "world", "self") or (subject.startswith("u:") and len(subject) > 2):
        if subject.startswith("u:"):
            rules.user_id(subject[2:], "subject")
    else:
        raise InvalidField("subject", "must be 'u:<user id>', 'self' or 'world'")
    if counterpart is None:
        return
    if subject != "self":
        raise InvalidField("counterpart", "only a persona's own ('self') item has one")
    if not counterpart.startswith("u:") or len(counterpart) < 3:
        raise InvalidField("counterpart", "must be 'u:<user id>'")
    rules.user_id(counterpart[2:], "counterpart")


@dataclass(frozen=True, slots=True)
class RoomSeat:
    """Whose memory a room's write is, and who was there (seed 000 §2.1): the extractor
    writes from this persona's seat, naming people by their `u:` ids, never by display
    names, and nothing about anyone outside `present`."""

    persona: str
    present: tuple[str, ...]  # user ids, sorted
    group: bool  # a group room (else a private chat)

    def __post_init__(self) -> None:
        rules.persona(self.persona)
        present = tuple(sorted({rules.user_id(u, "present") for u in self.present}))
        object.__setattr__(self, "present", present)


@dataclass(frozen=True, slots=True)
class KnownThread:
    """A thread the persona already follows, as the extractor sees it: its number ("T1"),
    never its id; its current state, its status and when it was last heard. `memory_id`
    and `subject` stay on this side (the adapters never show them)."""

    number: str
    text: str
    status: str
    last_heard: date
    memory_id: str
    subject: str = ""  # in a room: whose story it is ("u:<id>")
    key: str | None = None  # the concern's key, as the thread was written


def known_threads(rows: Sequence[Memory]) -> tuple[KnownThread, ...]:
    """The persona's active thread rows (any thread status), numbered T1, T2, … newest
    beat first: what the extractor needs to tell a beat from a new concern."""
    threads = sorted(
        (m for m in rows if m.kind is Kind.THREAD and m.status is Status.ACTIVE),
        key=lambda m: (-m.created_at.timestamp(), m.memory_id),
    )
    return tuple(
        KnownThread(
            number=f"T{number}",
            text=memory.text,
            status=meta_of(memory).status.value,
            last_heard=last_beat_of(memory),
            memory_id=memory.memory_id,
            subject=memory.subject,
            key=memory.key,
        )
        for number, memory in enumerate(threads, start=1)
    )


@dataclass(frozen=True, slots=True)
class ExtractionInput:
    """What the extractor reads: the new slice, what is already known, and today's date."""

    transcript: tuple[TranscriptLine, ...]
    profile: str
    known: tuple[str, ...]  # the nearest existing memories, so it extracts what is new
    today: date
    # Set for a room: extract from this persona's seat, each candidate with its subject
    # (`u:<id>` of someone present, `self` with a counterpart, or `world`), and the
    # transcript's lines carry their speakers.
    seat: RoomSeat | None = None
    # The threads this persona follows about the people here: a beat about one of them is
    # a beat of that thread, never a second one (seed 004 §3).
    threads: tuple[KnownThread, ...] = ()
    # A deep read: the same extraction on the stronger model, with a larger budget and up
    # to DEEP_MAX_CANDIDATES candidates (domain/cadence.py says when).
    deep: bool = False

    @property
    def max_candidates(self) -> int:
        """How many candidates this extraction may propose."""
        return DEEP_MAX_CANDIDATES if self.deep else MAX_CANDIDATES


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    """What one extraction call returns: the candidate memories, and the post-hoc report
    of each thread the persona raised in the spell and how the person met it."""

    candidates: tuple[Candidate, ...] = ()
    reports: tuple[ThreadReport, ...] = ()


def with_thread_ids(result: ExtractionResult, threads: Sequence[KnownThread]) -> ExtractionResult:
    """The result with every thread number mapped back to its memory id. A number that was
    not offered is never guessed: a beat naming one is treated as a new concern (the
    thread's key still finds a known one), a conclusion loses its thread, a report is
    dropped."""
    ids = {thread.number: thread.memory_id for thread in threads}

    def mapped(candidate: Candidate) -> Candidate:
        return dataclasses.replace(
            candidate,
            thread=ids.get(candidate.thread) if candidate.thread else None,
            concludes=ids.get(candidate.concludes) if candidate.concludes else None,
        )

    return ExtractionResult(
        candidates=tuple(mapped(candidate) for candidate in result.candidates),
        reports=tuple(
            dataclasses.replace(report, thread=ids[report.thread])
            for report in result.reports
            if report.thread in ids
        ),
    )


class Dropped(StrEnum):
    NOT_THE_USERS_WORDS = "not_the_users_words"
    PASTED_OR_QUOTED = "pasted_or_quoted"
    BELOW_IMPORTANCE = "below_importance"
    SECRET = "secret"  # noqa: S105 - a reason code, not a secret
    INSTRUCTION = "instruction"
    SENSITIVE_NOT_ASKED = "sensitive_not_asked"
    DAILY_CAP = "daily_cap"
    DUPLICATE = "duplicate"
    # In a room: about someone who was not there, or who does not let this persona
    # remember them (memory off, the persona muted), or about no one in particular.
    NOT_PRESENT = "not_present"
    # The user acted after the message was said (domain/overtaken.py):
    CORRECTED = "corrected_since"  # the memory drawn from it was corrected or closed
    DELETED = "deleted_since"  # a memory drawn from it was deleted
    FORGOTTEN = "forgotten_since"  # "forget everything" came after it


@dataclass(frozen=True, slots=True)
class Filtered:
    kept: tuple[Candidate, ...]
    dropped: tuple[tuple[Candidate, Dropped], ...] = field(default=())


def looks_pasted(content: str) -> bool:
    """Material the user brought (a document, code, a quote, a web page), not self-report."""
    return len(content) > PASTED_CHARS or bool(_PASTED_SHAPES.search(content))


def asked_to_remember(content: str) -> bool:
    return bool(_ASKED_TO_REMEMBER.search(content))


def filter_candidates(
    candidates: Sequence[Candidate],
    transcript: Sequence[TranscriptLine],
    *,
    created_today: int,
    daily_cap: int = DAILY_CAP,
    max_candidates: int = MAX_CANDIDATES,
) -> Filtered:
    """Apply the write filter's code rules; what survives may still be routed to NONE.

    Only the first `max_candidates` are read (a deep read passes DEEP_MAX_CANDIDATES)."""
    lines = {line.message_id: line for line in transcript}
    kept: list[Candidate] = []
    dropped: list[tuple[Candidate, Dropped]] = []
    seen: set[str] = set()
    room = max(0, daily_cap - created_today)
    for candidate in candidates[:max_candidates]:
        sources = [lines[m] for m in candidate.evidence if m in lines and lines[m].role == "user"]
        reason = code_rule(candidate, sources, importance_floor=not rides_any_importance(candidate))
        if reason is None and candidate.text.casefold() in seen:
            reason = Dropped.DUPLICATE
        elif reason is None and len(kept) >= room:
            reason = Dropped.DAILY_CAP
        if reason is None:
            seen.add(candidate.text.casefold())
            kept.append(candidate)
        else:
            dropped.append((candidate, reason))
    return Filtered(tuple(kept), tuple(dropped))


def trusted_reports(
    reports: Sequence[ThreadReport],
    transcript: Sequence[TranscriptLine],
    threads: Sequence[KnownThread],
    *,
    own: Callable[[TranscriptLine], bool],
) -> tuple[ThreadReport, ...]:
    """The reports code can stand behind: each rests on the persona's `own` line of this
    slice, and that line names the thread (an anchor, or its subject: `threads.mentions`)
    — else nothing was raised, whatever a model says (seed 004: a persona that did not
    name it did not ask it). One per thread; `thread` is a memory id here."""
    lines = {line.message_id: line for line in transcript if own(line)}
    texts = {thread.memory_id: thread.text for thread in threads}
    kept: dict[str, ThreadReport] = {}
    for report in reports:
        line = lines.get(report.raised_in)
        text = texts.get(report.thread)
        if line is not None and text is not None and mentions(line.content, text):
            kept.setdefault(report.thread, report)
    return tuple(kept.values())


def rides_any_importance(candidate: Candidate) -> bool:
    """A beat of a thread already followed, or the fact that concludes one: small by
    nature, and the story is lost without them (seed 004 §3, the promise floor widened)."""
    return candidate.continues_thread or candidate.concludes is not None


def code_rule(
    candidate: Candidate, sources: Sequence[TranscriptLine], *, importance_floor: bool = True
) -> Dropped | None:
    """The write filter's rules for one candidate, given the lines it may rest on (the
    person's own words); None when it may be kept (duplicates and caps are the caller's).
    The rules are checked in this order, and the first that fails is the reason."""
    beside = side_texts(candidate.uses, candidate.key)  # stored with it: read as it is
    checks: tuple[tuple[Dropped, Callable[[], bool]], ...] = (
        (Dropped.NOT_THE_USERS_WORDS, lambda: not sources),
        (Dropped.PASTED_OR_QUOTED, lambda: all(looks_pasted(s.content) for s in sources)),
        (
            Dropped.BELOW_IMPORTANCE,
            lambda: importance_floor and candidate.importance < IMPORTANCE_FLOOR,
        ),
        # A message may hold a secret and a fact: the fact is kept, the secret never —
        # not even restated without the words that gave it away.
        (
            Dropped.SECRET,
            lambda: bool(
                find_secret(candidate.text)
                or any(find_secret(side) for side in beside)
                or holds_withheld(candidate.text)
                or repeats_secret(
                    candidate.text, (f.value for s in sources for f in find_secrets(s.content))
                )
            ),
        ),
        # A message that tries to steer the assistant is not a trustworthy self-report.
        (
            Dropped.INSTRUCTION,
            lambda: bool(
                instruction_shape(candidate.text)
                or any(instruction_shape(side) for side in beside)
                or any(instruction_shape(s.content) for s in sources)
            ),
        ),
        (
            Dropped.SENSITIVE_NOT_ASKED,
            lambda: (
                (
                    sensitive_category(candidate.category) is not None
                    or reads_sensitive(candidate.text)
                )
                and not any(asked_to_remember(s.content) for s in sources)
            ),
        ),
    )
    return next((reason for reason, fails in checks if fails()), None)


def run_id_for(user_id: str, conversation_id: str, upto_seq: int) -> str:
    """The same slice of the same conversation is always the same run (idempotent steps)."""
    name = "\x1f".join(("run", user_id, conversation_id, str(upto_seq)))
    return "run_" + uuid.uuid5(CHATMEMORY_NAMESPACE, name).hex


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractionRun:
    """One pass of the write pipeline over a conversation's new messages.

    The steps hand each other this record's id, never a transcript: the candidates live
    here (with a short shelf life) instead of in the workflow's payloads and logs.
    """

    user_id: str
    run_id: str
    conversation_id: str
    persona: str
    from_seq: int
    upto_seq: int
    created_at: datetime
    expires_at: datetime
    candidates: tuple[Candidate, ...] = ()
    # Each thread the persona raised in the slice and how the person met it (memory ids).
    reports: tuple[ThreadReport, ...] = ()
    dropped: Mapping[str, int] = field(default_factory=dict)  # reason → how many
    routed_at: datetime | None = None
    written: tuple[str, ...] = ()  # memory ids written or changed by routing
    profile_affected: bool = False
    notice_id: str | None = None
    failure: str | None = None  # the error kind of a failed run (never text)
    deep: bool = False  # read in deep mode (the stronger model, the larger budget)

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.opaque_id("run_id", self.run_id)
        rules.opaque_id("conversation_id", self.conversation_id)
        rules.persona(self.persona)
        rules.int_range("from_seq", self.from_seq, 0)
        rules.int_range("upto_seq", self.upto_seq, self.from_seq)
        for name in ("created_at", "expires_at"):
            object.__setattr__(self, name, require_utc(name, getattr(self, name)))
        if self.routed_at is not None:
            object.__setattr__(self, "routed_at", require_utc("routed_at", self.routed_at))
        object.__setattr__(self, "written", rules.id_tuple("written", self.written))


def run_to_json(run: ExtractionRun) -> dict[str, Any]:
    """A run as plain JSON, for stores that keep it as one document."""
    return {
        "user_id": run.user_id,
        "run_id": run.run_id,
        "conversation_id": run.conversation_id,
        "persona": run.persona,
        "from_seq": run.from_seq,
        "upto_seq": run.upto_seq,
        "created_at": run.created_at.isoformat(),
        "expires_at": run.expires_at.isoformat(),
        "candidates": [candidate.to_json() for candidate in run.candidates],
        "reports": [report.to_json() for report in run.reports],
        "dropped": dict(run.dropped),
        "routed_at": run.routed_at.isoformat() if run.routed_at else None,
        "written": list(run.written),
        "profile_affected": run.profile_affected,
        "notice_id": run.notice_id,
        "failure": run.failure,
        "deep": run.deep,
    }


def run_from_json(data: Mapping[str, Any]) -> ExtractionRun:
    return ExtractionRun(
        user_id=str(data["user_id"]),
        run_id=str(data["run_id"]),
        conversation_id=str(data["conversation_id"]),
        persona=str(data["persona"]),
        from_seq=int(data["from_seq"]),
        upto_seq=int(data["upto_seq"]),
        created_at=datetime.fromisoformat(data["created_at"]),
        expires_at=datetime.fromisoformat(data["expires_at"]),
        candidates=tuple(Candidate.from_json(c) for c in data.get("candidates") or ()),
        reports=tuple(ThreadReport.from_json(r) for r in data.get("reports") or ()),
        dropped={str(k): int(v) for k, v in (data.get("dropped") or {}).items()},
        routed_at=datetime.fromisoformat(data["routed_at"]) if data.get("routed_at") else None,
        written=tuple(str(m) for m in data.get("written") or ()),
        profile_affected=bool(data.get("profile_affected")),
        notice_id=data.get("notice_id"),
        failure=data.get("failure"),
        deep=bool(data.get("deep")),  # runs written before deep mode were not deep
    )
