"""The model's structured answers as domain values: `record_memories` and
`record_room_memories` items as Candidates, their `threads_raised` as ThreadReports,
`route_memories` decisions as RouteDecisions, `record_uses` entries as each memory's uses.

A bad item inside a good answer is dropped, never repaired: a candidate that names a line
not offered, breaks a field rule or leaves the offered values (in a room: a subject of an
unknown shape, a counterpart on an item that is not the persona's own, a thread that is
not a present person's story); a report on a line that is not the persona's own, on a
thread not offered, or with a response not offered; a decision for no case offered. A
case with no single good decision is NONE; a memory with no single good list of uses
(at least MIN_USES strings, once cleaned) gets none.

Threads are named by the numbers the request offered ("T1"), never by id. A beat or a
conclusion naming a number that was not offered (or, in a room, a thread of someone else's
story) loses that link and is otherwise kept: a beat becomes a new concern, which its key
can still match, and a conclusion a plain fact.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TypedDict

from chatmemory.adapters.claude.answer_tools import (
    EXTRACTED_CATEGORIES,
    EXTRACTED_KINDS,
    RESPONSES,
)
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.extraction import MAX_CANDIDATES, Candidate, TranscriptLine
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.room_extraction import ROOM_MAX_CANDIDATES
from chatmemory.domain.routing import Action, RouteDecision
from chatmemory.domain.threads import Cadence, Response, ThreadReport
from chatmemory.domain.time import parse_instant
from chatmemory.domain.uses import MIN_USES, clean_uses

# A room item names whom it is about; "" (a one-to-one item) is not a room subject.
_ROOM_SUBJECT = re.compile(r"^(?:self|world|u:\S.*)$", re.DOTALL)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CADENCES: tuple[str, ...] = tuple(cadence.value for cadence in Cadence)
# Fields only a thread carries; a memory of another kind that sets one is malformed.
_THREAD_ONLY = ("cadence", "event_on", "thread")

#: the threads offered, number → whose story it is ("u:<id>" in a room; ignored one-to-one)
Offered = Mapping[str, str]


class _ThreadFields(TypedDict):
    cadence: Cadence | None
    event_on: date | None
    thread: str | None
    concludes: str | None


@dataclass(frozen=True)
class Extracted:
    """The candidates kept; how many items were dropped for each field (or over the cap);
    how many kept items lost a thread link naming no thread offered, or in a room someone
    else's (`cleared`, by field)."""

    kept: list[Candidate]
    dropped: Counter[str]
    cleared: Counter[str]


@dataclass(frozen=True)
class Reported:
    """The thread reports kept, at most one per thread, and how many were dropped, by the
    reason (`threads_raised.<field>`)."""

    reports: list[ThreadReport]
    dropped: Counter[str]


@dataclass(frozen=True)
class Routed:
    """One decision per case, in order; how many cases defaulted to NONE; how many
    answers named no case offered."""

    decisions: list[RouteDecision]
    defaulted: int
    stray: int


def candidates(
    items: Sequence[object],
    line_ids: Sequence[str],
    threads: Offered | None = None,
    *,
    cap: int = MAX_CANDIDATES,
) -> Extracted:
    """Every good item as a Candidate, at most `cap` (a deep read's is larger); evidence
    numbers (from 1) mapped back to `line_ids`; a thread link kept only for a number in
    `threads`."""
    return _read_all(items, line_ids, _candidate, cap, threads or {})


def room_candidates(
    items: Sequence[object], line_ids: Sequence[str], threads: Offered | None = None
) -> Extracted:
    """Every good `record_room_memories` item as a Candidate with its subject (and a
    `self` item's counterpart), at most ROOM_MAX_CANDIDATES; evidence as in `candidates`.
    A thread link is kept only for a number in `threads` whose story is the item's
    subject's. Whether the subject was present, and allows the persona, is the room
    filter's to say."""
    return _read_all(items, line_ids, _room_candidate, ROOM_MAX_CANDIDATES, threads or {})


def thread_reports(
    answer: object,
    lines: Sequence[TranscriptLine],
    threads: Offered,
    *,
    persona_speaker: str | None = None,
) -> Reported:
    """The `threads_raised` of an answer as ThreadReports, `raised_in` the message id of
    the line. A report is kept only when its line was offered and is the persona's own
    (one-to-one: the assistant's; in a room: `persona_speaker`'s), its thread was offered
    and its response is one of the three; the first report of a thread wins. A missing
    list is no report; a malformed one is dropped whole."""
    dropped: Counter[str] = Counter()
    if answer is None:
        return Reported([], dropped)
    if not isinstance(answer, list):
        dropped["threads_raised"] += 1
        return Reported([], dropped)
    reports: list[ThreadReport] = []
    for item in answer:
        try:
            report = _report(item, lines, threads, persona_speaker)
        except InvalidField as error:
            dropped[f"threads_raised.{error.field}"] += 1
            continue
        if any(kept.thread == report.thread for kept in reports):
            dropped["threads_raised.repeat"] += 1
            continue
        reports.append(report)
    return Reported(reports, dropped)


def _read_all(
    items: Sequence[object],
    line_ids: Sequence[str],
    read: Callable[[object, Sequence[str], Offered, Counter[str]], Candidate],
    cap: int,
    threads: Offered,
) -> Extracted:
    kept: list[Candidate] = []
    dropped: Counter[str] = Counter()
    cleared: Counter[str] = Counter()
    for item in items:
        # An item dropped later must not count the links it lost.
        lost: Counter[str] = Counter()
        try:
            candidate = read(item, line_ids, threads, lost)
        except ValueError as error:  # InvalidField is a ValueError
            dropped[error.field if isinstance(error, InvalidField) else "value"] += 1
            continue
        if len(kept) == cap:
            dropped["over_cap"] += 1
            continue
        cleared.update(lost)
        kept.append(candidate)
    return Extracted(kept, dropped, cleared)


def decisions(items: Sequence[object], cases: int) -> Routed:
    """The decision for each of `cases` cases (numbered from 1). A case the model skipped,
    answered more than once or answered with an unknown event is NONE."""
    answers: dict[int, list[RouteDecision | None]] = {}
    stray = 0
    for item in items:
        number = _integer(item.get("candidate")) if isinstance(item, dict) else None
        if number is None or not isinstance(item, dict) or not 1 <= number <= cases:
            stray += 1
            continue
        answers.setdefault(number, []).append(_decision(item))
    decided: list[RouteDecision] = []
    defaulted = 0
    for number in range(1, cases + 1):
        given = answers.get(number, [])
        decision = given[0] if len(given) == 1 else None
        if decision is None:  # skipped, answered twice, or not a decision
            defaulted += 1
            decision = RouteDecision(Action.NONE)
        decided.append(decision)
    return Routed(decided, defaulted, stray)


@dataclass(frozen=True)
class UsesRead:
    """The uses of each memory, in order (`()` where there is no single good list); how
    many entries were dropped, by the reason; how many named no memory offered."""

    uses: list[tuple[str, ...]]
    dropped: Counter[str]
    stray: int


def uses(entries: Sequence[object], memories: int) -> UsesRead:
    """Each of `memories` memories' uses (numbered from 1), cleaned as any memory's are
    (domain/uses.py). A list with anything but strings, fewer than MIN_USES once cleaned
    (a model unsure what the memory is for; its category's uses beat a guess), or a
    memory answered more than once, gives that memory none."""
    given: dict[int, list[tuple[str, ...] | None]] = {}
    dropped: Counter[str] = Counter()
    stray = 0
    for entry in entries:
        number = _integer(entry.get("memory")) if isinstance(entry, dict) else None
        if number is None or not isinstance(entry, dict) or not 1 <= number <= memories:
            stray += 1
            continue
        listed = entry.get("uses")
        if not isinstance(listed, list) or not all(isinstance(use, str) for use in listed):
            dropped["uses"] += 1
            given.setdefault(number, []).append(None)
            continue
        cleaned = clean_uses(listed)
        if len(cleaned) < MIN_USES:
            dropped["too_few"] += 1
            given.setdefault(number, []).append(None)
            continue
        given.setdefault(number, []).append(cleaned)
    found: list[tuple[str, ...]] = []
    for number in range(1, memories + 1):
        answers = given.get(number, [])
        if len(answers) > 1:
            dropped["repeat"] += 1
        single = answers[0] if len(answers) == 1 else None
        found.append(single or ())
    return UsesRead(found, dropped, stray)


def _integer(value: object) -> int | None:
    """A JSON integer, or one written as plain ASCII digits; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.strip().isdigit():
        return int(value)
    return None


def _one_of(field: str, value: object, offered: Sequence[str]) -> str:
    if isinstance(value, str) and value in offered:
        return value
    raise InvalidField(field, "must be one of the values offered")


def _optional_text(field: str, value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidField(field, "must be a string")
    return value.strip()


def _optional_date(field: str, value: object) -> datetime | None:
    text = _optional_text(field, value)
    return None if text is None else parse_instant(field, text)


def _room_candidate(
    item: object, line_ids: Sequence[str], threads: Offered, lost: Counter[str]
) -> Candidate:
    """One `record_room_memories` item as a Candidate; InvalidField if anything is wrong:
    a subject that is not "u:<id>", "self" or "world", a counterpart that is not "u:<id>"
    or sits on an item other than "self" (the Candidate refuses it), a thread about
    anything but a person (a thread is someone's story)."""
    if not isinstance(item, dict):
        raise InvalidField("item", "must be an object")
    subject = item.get("subject")
    if not isinstance(subject, str) or not _ROOM_SUBJECT.match(subject):
        raise InvalidField("subject", "must be 'u:<id>', 'self' or 'world'")
    if item.get("kind") == Kind.THREAD.value and not subject.startswith("u:"):
        raise InvalidField("subject", "a thread is the story of a person present")
    counterpart = item.get("counterpart")
    if counterpart is not None and not isinstance(counterpart, str):
        raise InvalidField("counterpart", "must be 'u:<id>'")
    return _candidate(
        item, line_ids, threads, lost, subject=subject, counterpart=counterpart or None
    )


def _candidate(
    item: object,
    line_ids: Sequence[str],
    threads: Offered,
    lost: Counter[str],
    *,
    subject: str = "",
    counterpart: str | None = None,
) -> Candidate:
    """One `record_memories` item as a Candidate; InvalidField if anything is wrong. A
    thread link to a number not offered is counted in `lost` and left out."""
    if not isinstance(item, dict):
        raise InvalidField("item", "must be an object")
    numbers = item.get("evidence")
    if not isinstance(numbers, list):
        raise InvalidField("evidence", "must be a list of line numbers")
    evidence: list[str] = []
    for value in numbers:
        number = _integer(value)
        if number is None or not 1 <= number <= len(line_ids):
            raise InvalidField("evidence", "names a line that was not offered")
        if line_ids[number - 1] not in evidence:
            evidence.append(line_ids[number - 1])
    text = item.get("text")
    if not isinstance(text, str):
        raise InvalidField("text", "must be a string")
    importance = _integer(item.get("importance"))
    if importance is None:
        raise InvalidField("importance", "must be an integer")
    uses = item.get("uses")
    if uses is None:
        uses = []
    if not isinstance(uses, list) or not all(isinstance(use, str) for use in uses):
        raise InvalidField("uses", "must be a list of strings")
    valid_from = _optional_date("valid_from", item.get("valid_from"))
    valid_until = _optional_date("valid_until", item.get("valid_until"))
    if valid_from is not None and valid_until is not None and valid_until <= valid_from:
        raise InvalidField("valid_until", "must be after valid_from")
    kind = Kind(_one_of("kind", item.get("kind"), EXTRACTED_KINDS))
    return Candidate(
        text=text.strip(),
        category=_one_of("category", item.get("category"), EXTRACTED_CATEGORIES),
        kind=kind,
        importance=importance,
        stated_by=StatedBy(_one_of("stated_by", item.get("stated_by"), tuple(StatedBy))),
        evidence=tuple(evidence),
        key=_optional_text("key", item.get("key")),
        valid_from=valid_from,
        valid_until=valid_until,
        uses=tuple(uses),
        subject=subject,
        counterpart=counterpart,
        **_thread_fields(item, kind, threads, subject, lost),
    )


def _thread_fields(
    item: dict[str, object], kind: Kind, threads: Offered, subject: str, lost: Counter[str]
) -> _ThreadFields:
    """An item's thread fields: a thread's cadence, event day and the thread it continues;
    another memory's thread it concludes. InvalidField when one sits on the wrong kind."""
    is_thread = kind is Kind.THREAD
    for name in _THREAD_ONLY:
        if not is_thread and _given(item.get(name)):
            raise InvalidField(name, "only a thread carries it")
    if is_thread and _given(item.get("concludes")):
        raise InvalidField("concludes", "a thread does not conclude another")
    cadence = item.get("cadence")
    return {
        "cadence": Cadence(_one_of("cadence", cadence, _CADENCES)) if _given(cadence) else None,
        "event_on": _optional_day("event_on", item.get("event_on")),
        "thread": _thread_link("thread", item.get("thread"), threads, subject, lost),
        "concludes": _thread_link("concludes", item.get("concludes"), threads, subject, lost),
    }


def _given(value: object) -> bool:
    """Whether an optional field was filled in (null and "" are left out)."""
    return value is not None and value != ""


def _optional_day(field: str, value: object) -> date | None:
    """A calendar day written YYYY-MM-DD, or None when left out."""
    text = _optional_text(field, value)
    if text is None:
        return None
    if not _ISO_DATE.match(text):
        raise InvalidField(field, "must be a date, YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError as error:
        raise InvalidField(field, "must be a real calendar day") from error


def _thread_link(
    field: str, value: object, threads: Offered, subject: str, lost: Counter[str]
) -> str | None:
    """The offered thread number an item links to, or None. A number not offered, or (in
    a room) a thread of someone else's story, is never guessed at: the link is left out
    and counted."""
    if not _given(value):
        return None
    owner = threads.get(value) if isinstance(value, str) else None
    if owner is None or (subject and owner and owner != subject):
        lost[field] += 1
        return None
    return str(value)


def _report(
    item: object,
    lines: Sequence[TranscriptLine],
    threads: Offered,
    persona_speaker: str | None,
) -> ThreadReport:
    """One `threads_raised` item as a ThreadReport; InvalidField naming what is wrong."""
    if not isinstance(item, dict):
        raise InvalidField("item", "must be an object")
    thread = item.get("thread")
    if not isinstance(thread, str) or thread not in threads:
        raise InvalidField("thread", "names a thread that was not offered")
    number = _integer(item.get("line"))
    if number is None or not 1 <= number <= len(lines):
        raise InvalidField("line", "names a line that was not offered")
    line = lines[number - 1]
    own = line.role == "assistant" if persona_speaker is None else line.speaker == persona_speaker
    if not own:
        raise InvalidField("line", "is not the persona's own line")
    response = Response(_one_of("response", item.get("response"), RESPONSES))
    return ThreadReport(thread=thread, raised_in=line.message_id, response=response)


def _decision(item: dict[str, object]) -> RouteDecision | None:
    """One `route_memories` decision, or None if it is not one."""
    event = item.get("event")
    if not isinstance(event, str) or event not in tuple(Action):
        return None
    action = Action(event)
    if action in (Action.ADD, Action.NONE):
        return RouteDecision(action)
    neighbour = item.get("id")
    if neighbour is None or isinstance(neighbour, str):
        return RouteDecision(action, neighbour)
    if isinstance(neighbour, int) and not isinstance(neighbour, bool):
        return RouteDecision(action, str(neighbour))
    return None
