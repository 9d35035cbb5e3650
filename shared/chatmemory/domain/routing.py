"""Routing a candidate against what is already remembered: ADD · UPDATE · CLOSE · NONE.

The model sees each candidate's nearest memories as numbered neighbours — never raw ids
(mem0's guard against a model inventing one) — and picks an action. Code maps numbers
back to ids, refuses any number it did not offer, and keeps the rules the model may not
bend: newest wins, a stated fact beats an inferred one, nothing is physically deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from chatmemory.domain.memory import Memory, StatedBy


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
    decision: RouteDecision, neighbours: Sequence[Neighbour], candidate_stated_by: StatedBy
) -> Resolved:
    """The decision as it will be applied, after the rules that code keeps."""
    if decision.action in (Action.ADD, Action.NONE):
        return Resolved(decision.action, None)
    offered = {neighbour.number: neighbour.memory for neighbour in neighbours}
    target = offered.get(str(decision.neighbour)) if decision.neighbour is not None else None
    if target is None:
        # A number we did not offer (or none): never guess which row was meant.
        return Resolved(Action.NONE, None, "refused: unknown neighbour")
    if candidate_stated_by is StatedBy.INFERRED and target.stated_by is StatedBy.USER:
        return Resolved(Action.NONE, None, "kept: a stated fact beats an inferred one")
    return Resolved(decision.action, target)
