"""The model's structured answers as domain values: `record_memories` and
`record_room_memories` items as Candidates, `route_memories` decisions as RouteDecisions.

A bad item inside a good answer is dropped, never repaired: a candidate that names a line
not offered, breaks a field rule or leaves the offered values (in a room: a subject of an
unknown shape, a counterpart on an item that is not the persona's own); a decision for no
case offered. A case with no single good decision is NONE.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from chatmemory.adapters.claude.answer_tools import EXTRACTED_CATEGORIES, EXTRACTED_KINDS
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.extraction import MAX_CANDIDATES, Candidate
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.room_extraction import ROOM_MAX_CANDIDATES
from chatmemory.domain.routing import Action, RouteDecision
from chatmemory.domain.time import parse_instant

# A room item names whom it is about; "" (a one-to-one item) is not a room subject.
_ROOM_SUBJECT = re.compile(r"^(?:self|world|u:\S.*)$", re.DOTALL)


@dataclass(frozen=True)
class Extracted:
    """The candidates kept, and how many items were dropped for each field (or over the cap)."""

    kept: list[Candidate]
    dropped: Counter[str]


@dataclass(frozen=True)
class Routed:
    """One decision per case, in order; how many cases defaulted to NONE; how many
    answers named no case offered."""

    decisions: list[RouteDecision]
    defaulted: int
    stray: int


def candidates(items: Sequence[object], line_ids: Sequence[str]) -> Extracted:
    """Every good item as a Candidate, at most MAX_CANDIDATES; evidence numbers (from 1)
    mapped back to `line_ids`."""
    return _read_all(items, line_ids, _candidate, MAX_CANDIDATES)


def room_candidates(items: Sequence[object], line_ids: Sequence[str]) -> Extracted:
    """Every good `record_room_memories` item as a Candidate with its subject (and a
    `self` item's counterpart), at most ROOM_MAX_CANDIDATES; evidence as in `candidates`.
    Whether the subject was present, and allows the persona, is the room filter's to say."""
    return _read_all(items, line_ids, _room_candidate, ROOM_MAX_CANDIDATES)


def _read_all(
    items: Sequence[object],
    line_ids: Sequence[str],
    read: Callable[[object, Sequence[str]], Candidate],
    cap: int,
) -> Extracted:
    kept: list[Candidate] = []
    dropped: Counter[str] = Counter()
    for item in items:
        try:
            candidate = read(item, line_ids)
        except ValueError as error:  # InvalidField is a ValueError
            dropped[error.field if isinstance(error, InvalidField) else "value"] += 1
            continue
        if len(kept) == cap:
            dropped["over_cap"] += 1
            continue
        kept.append(candidate)
    return Extracted(kept, dropped)


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


def _room_candidate(item: object, line_ids: Sequence[str]) -> Candidate:
    """One `record_room_memories` item as a Candidate; InvalidField if anything is wrong:
    a subject that is not "u:<id>", "self" or "world", a counterpart that is not "u:<id>"
    or sits on an item other than "self" (the Candidate refuses it)."""
    if not isinstance(item, dict):
        raise InvalidField("item", "must be an object")
    subject = item.get("subject")
    if not isinstance(subject, str) or not _ROOM_SUBJECT.match(subject):
        raise InvalidField("subject", "must be 'u:<id>', 'self' or 'world'")
    counterpart = item.get("counterpart")
    if counterpart is not None and not isinstance(counterpart, str):
        raise InvalidField("counterpart", "must be 'u:<id>'")
    return _candidate(item, line_ids, subject=subject, counterpart=counterpart or None)


def _candidate(
    item: object, line_ids: Sequence[str], *, subject: str = "", counterpart: str | None = None
) -> Candidate:
    """One `record_memories` item as a Candidate; InvalidField if anything is wrong."""
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
    return Candidate(
        text=text.strip(),
        category=_one_of("category", item.get("category"), EXTRACTED_CATEGORIES),
        kind=Kind(_one_of("kind", item.get("kind"), EXTRACTED_KINDS)),
        importance=importance,
        stated_by=StatedBy(_one_of("stated_by", item.get("stated_by"), tuple(StatedBy))),
        evidence=tuple(evidence),
        key=_optional_text("key", item.get("key")),
        valid_from=valid_from,
        valid_until=valid_until,
        uses=tuple(uses),
        subject=subject,
        counterpart=counterpart,
    )


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
