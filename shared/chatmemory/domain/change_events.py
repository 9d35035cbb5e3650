"""Change events: what other systems hear about a memory changing, read off the audit log.

Every memory write records its audit events in the same atomic write (`domain/events.py`),
so a change event derived from one can never disagree with the write it reports. A change
event is metadata only — ids, persona, kind, op, actor, time — never a memory's words: a
consumer that needs the text asks the API with the user's own token.

Not every audit event is a change: a use (the memory entered a reply) happens on nearly
every turn and changes nothing a consumer mirrors, and a correction's two halves (the old
row made history, the new row added) are one change, `corrected`, told by the new row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.memory import Kind
from chatmemory.domain.time import to_api

SCHEMA = "chatmemory.change/1"


class ChangeOp(StrEnum):
    """What happened, in the product's words."""

    ADDED = "added"  # a new memory
    CORRECTED = "corrected"  # a new version replaced `related_id` (a correction, a beat)
    CLOSED = "closed"  # stopped being true; history now (under `related_id`, if any)
    DELETED = "deleted"  # tombstoned: hidden at once, its copies purged next
    PURGED = "purged"  # every copy of a deleted memory is gone
    RESTORED = "restored"  # believed again: the change `related_id` made was undone
    # A thread's status (seed 004). How a persona raised it and how it was met (asked,
    # deflected) is conversational manners, not a change anyone mirrors: not told.
    DORMANT = "dormant"
    REOPENED = "reopened"
    RESOLVED = "resolved"


_OPS: dict[Op, ChangeOp] = {
    Op.ADD: ChangeOp.ADDED,
    Op.CLOSE: ChangeOp.CLOSED,
    Op.DELETE: ChangeOp.DELETED,
    Op.PURGE: ChangeOp.PURGED,
    Op.RESTORE: ChangeOp.RESTORED,
    Op.DORMANT: ChangeOp.DORMANT,
    Op.REOPENED: ChangeOp.REOPENED,
    Op.RESOLVED: ChangeOp.RESOLVED,
}

#: audit ops that never become a change event (the stream's filter leaves them out too)
SILENT_OPS = frozenset(op for op in Op if op not in _OPS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeEvent:
    """One change, as published. `id` is the audit event's id: a consumer that sees it
    twice (feeds deliver at least once) keeps the first."""

    id: str
    op: ChangeOp
    user_id: str
    memory_id: str
    related_id: str | None
    persona: str | None
    kind: Kind | None
    actor: Actor
    at: datetime

    def as_record(self) -> dict[str, str | None]:
        """The event as JSON carries it (docs/api.md, "Change events")."""
        return {
            "schema": SCHEMA,
            "id": self.id,
            "op": self.op.value,
            "user_id": self.user_id,
            "memory_id": self.memory_id,
            "related_id": self.related_id,
            "persona": self.persona,
            "kind": None if self.kind is None else self.kind.value,
            "actor": self.actor.value,
            "at": to_api(self.at),
        }


def change_of(event: MemoryEvent) -> ChangeEvent | None:
    """The change an audit event tells, or None when it tells none (a use, the history
    half of a correction, a thread's manners)."""
    op = _OPS.get(event.op)
    if op is None:
        return None
    if event.op is Op.ADD and event.related_id is not None:
        op = ChangeOp.CORRECTED  # the new half of a supersede names the row it replaced
    return ChangeEvent(
        id=event.event_id,
        op=op,
        user_id=event.user_id,
        memory_id=event.memory_id,
        related_id=event.related_id,
        persona=event.persona,
        kind=event.kind,
        actor=event.actor,
        at=event.at,
    )


def changes_of(events: Iterable[MemoryEvent]) -> list[ChangeEvent]:
    """The changes a run of audit events tells, in their order."""
    return [change for change in map(change_of, events) if change is not None]
