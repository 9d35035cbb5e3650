"""Routing a candidate against what is already remembered: ADD · UPDATE · CLOSE · NONE.

The model sees each candidate's nearest memories as numbered neighbours — never raw ids
(mem0's guard against a model inventing one) — and picks an action. Code maps numbers
back to ids, refuses any number it did not offer, and keeps the rules the model may not
bend: newest wins, a stated fact beats an inferred one, nothing is physically deleted.

"Newest" is about when things were said, not when the pipeline got to them: the pipeline
reads a conversation minutes after it went quiet, and by then the user may have corrected
a memory by hand, or said something newer in the same conversation. A message never
overrules a belief stated after it, and of two statements about the same key in one read,
only the later one counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from chatmemory.domain.extraction import Candidate
from chatmemory.domain.ids import normalise_for_identity
from chatmemory.domain.memory import Memory, StatedBy
from chatmemory.domain.standing import key_of, standing_key


class Action(StrEnum):
    ADD = "ADD"  # a new memory
    UPDATE = "UPDATE"  # the same fact, now different or better said: supersede the old row
    CLOSE = "CLOSE"  # the fact stopped being true and nothing replaces it
    NONE = "NONE"  # already known, or not worth keeping


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A memory shown to the router under a number that only this candidate uses."""

    number: str
    memory: Memory

    def view(self) -> dict[str, str]:
        """What the model sees: the number, the words, who said it, and when."""
        view = {
            "id": self.number,
            "text": self.memory.text,
            "stated_by": self.memory.stated_by.value,
            "since": self.memory.created_at.date().isoformat(),
        }
        if self.memory.key:
            view["key"] = self.memory.key  # same key: the likely UPDATE or CLOSE
        return view


def numbered(memories: Sequence[Memory]) -> list[Neighbour]:
    return [Neighbour(str(number), memory) for number, memory in enumerate(memories)]


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """What the model (or the offline router) chose for one candidate."""

    action: Action
    neighbour: str | None = None  # the number of the neighbour it updates or closes


@dataclass(frozen=True, slots=True)
class Resolved:
    action: Action
    target: Memory | None  # the existing memory an UPDATE or CLOSE applies to
    note: str = ""  # why the decision was changed, if it was


def resolve(
    decision: RouteDecision,
    neighbours: Sequence[Neighbour],
    candidate: Candidate,
    *,
    said_at: datetime,
    stated_at: Mapping[str, datetime],
) -> Resolved:
    """The decision as it will be applied, after the rules that code keeps.

    `said_at`: when the candidate's message was said; `stated_at`: when each neighbour's
    belief was stated (its source message, or when the user wrote it) — a belief stated
    after the message is newer than anything in it.
    """
    if decision.action is Action.NONE:
        return Resolved(Action.NONE, None)
    offered = {neighbour.number: neighbour.memory for neighbour in neighbours}
    target = offered.get(str(decision.neighbour)) if decision.neighbour is not None else None

    def newer(memory: Memory) -> bool:
        return stated_at.get(memory.memory_id, memory.created_at) > said_at

    why_not = _why_not(decision.action, target, neighbours, candidate, newer)
    if why_not:
        return Resolved(Action.NONE, None, why_not)
    return Resolved(decision.action, None if decision.action is Action.ADD else target)


def _why_not(
    action: Action,
    target: Memory | None,
    neighbours: Sequence[Neighbour],
    candidate: Candidate,
    newer: Callable[[Memory], bool],
) -> str | None:
    """Why an ADD, UPDATE or CLOSE must not be applied, or None if it may."""
    said = normalise_for_identity(candidate.text)
    if any(normalise_for_identity(n.memory.text) == said for n in neighbours):
        return "kept: already remembered in these words"
    if action is Action.ADD:
        # The same single-valued fact, whether a key says so or the words do (standing.py).
        fact = standing_key(candidate.key, candidate.text)
        newer_same_key = any(
            newer(n.memory)
            and (
                (candidate.key is not None and n.memory.key == candidate.key)
                or (fact is not None and key_of(n.memory) == fact)
            )
            for n in neighbours
        )
        return "kept: a newer statement holds this key" if newer_same_key else None
    if target is None:
        # A number we did not offer (or none): never guess which row was meant.
        return "refused: unknown neighbour"
    if candidate.stated_by is StatedBy.INFERRED and target.stated_by is StatedBy.USER:
        return "kept: a stated fact beats an inferred one"
    return "kept: the memory is newer than what was said" if newer(target) else None


@dataclass(frozen=True, slots=True)
class Routed:
    """One candidate of a run with its decision, in the order the user said them."""

    candidate: Candidate
    said_at: datetime
    resolved: Resolved


def latest_per_key(routed: Sequence[Routed]) -> list[Resolved]:
    """Of two candidates about the same key in one read, only the later-said one acts.

    "I live in Pune" … "actually I just moved to Mumbai" in one conversation: both were
    routed against the same existing memories, so applying both would let the older
    statement win or collide. The earlier one becomes NONE.
    """
    last_said: dict[str, int] = {}
    for position, item in sorted(enumerate(routed), key=lambda pair: pair[1].said_at):
        if item.candidate.key:
            last_said[item.candidate.key] = position
    return [
        item.resolved
        if not item.candidate.key
        or last_said[item.candidate.key] == position
        or item.resolved.action is Action.NONE
        else Resolved(Action.NONE, None, "kept: said differently later in the conversation")
        for position, item in enumerate(routed)
    ]
