"""The change an audit event tells (domain/change_events.py): which ops are changes, a
correction told once, and a record that holds ids, names and times only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.change_events import SCHEMA, SILENT_OPS, ChangeOp, change_of, changes_of
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.memory import Kind

AT = datetime(2026, 11, 30, 9, 15, 0, 250_000, tzinfo=UTC)


def audit(op: Op, *, related: str | None = None, event_id: str = "evt_1") -> MemoryEvent:
    return MemoryEvent(
        user_id="user-123",
        memory_id="mem_new",
        event_id=event_id,
        op=op,
        actor=Actor.USER,
        at=AT,
        related_id=related,
        persona="coach",
        kind=Kind.PREFERENCE,
    )


@pytest.mark.parametrize(
    ("op", "related", "told"),
    [
        (Op.ADD, None, ChangeOp.ADDED),
        (Op.ADD, "mem_old", ChangeOp.CORRECTED),  # the new half of a correction
        (Op.CLOSE, None, ChangeOp.CLOSED),
        (Op.CLOSE, "mem_fact", ChangeOp.CLOSED),  # closed under the fact that concluded it
        (Op.DELETE, None, ChangeOp.DELETED),
        (Op.PURGE, None, ChangeOp.PURGED),
        (Op.RESTORE, "mem_undone", ChangeOp.RESTORED),
        (Op.DORMANT, None, ChangeOp.DORMANT),
        (Op.REOPENED, None, ChangeOp.REOPENED),
        (Op.RESOLVED, None, ChangeOp.RESOLVED),
    ],
)
def test_each_op_that_changes_a_memory_is_told_as_its_change(
    op: Op, related: str | None, told: ChangeOp
) -> None:
    change = change_of(audit(op, related=related))

    assert change is not None
    assert change.op is told
    assert (change.memory_id, change.related_id) == ("mem_new", related)


@pytest.mark.parametrize("op", [Op.USE, Op.UPDATE, Op.ASKED, Op.DEFLECTED])
def test_uses_a_corrections_history_half_and_a_threads_manners_tell_nothing(op: Op) -> None:
    assert change_of(audit(op, related="mem_other")) is None
    assert op in SILENT_OPS


def test_every_op_is_either_told_or_silent() -> None:
    told = {op for op in Op if change_of(audit(op)) is not None}

    assert told | SILENT_OPS == set(Op)
    assert not told & SILENT_OPS


def test_a_correction_is_one_change_told_by_the_new_version() -> None:
    # Given a correction's two audit events, as MemoryService writes them
    history_half = audit(Op.UPDATE, related="mem_new", event_id="evt_1")
    new_half = audit(Op.ADD, related="mem_old", event_id="evt_2")

    # Then the run of them tells one change: the new version, naming the one it replaced
    (change,) = changes_of([history_half, new_half])
    assert (change.op, change.id, change.related_id) == (ChangeOp.CORRECTED, "evt_2", "mem_old")


def test_the_record_is_the_documented_schema() -> None:
    change = change_of(audit(Op.ADD))
    assert change is not None

    assert change.as_record() == {
        "schema": SCHEMA,
        "id": "evt_1",
        "op": "added",
        "user_id": "user-123",
        "memory_id": "mem_new",
        "related_id": None,
        "persona": "coach",
        "kind": "preference",
        "actor": "user",
        "at": "2026-11-30T09:15:00Z",
    }


def test_an_event_from_before_persona_and_kind_were_recorded_still_tells_its_change() -> None:
    older = MemoryEvent(
        user_id="user-123",
        memory_id="mem_1",
        event_id="evt_1",
        op=Op.DELETE,
        actor=Actor.USER,
        at=AT,
    )

    change = change_of(older)

    assert change is not None
    assert (change.as_record()["persona"], change.as_record()["kind"]) == (None, None)


_ids = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)


@given(
    op=st.sampled_from(sorted(set(Op) - SILENT_OPS)),
    actor=st.sampled_from(list(Actor)),
    kind=st.none() | st.sampled_from(list(Kind)),
    related=st.none() | _ids,
    memory_id=_ids,
    event_id=_ids,
)
def test_a_record_holds_only_ids_names_and_times(
    *, op: Op, actor: Actor, kind: Kind | None, related: str | None, memory_id: str, event_id: str
) -> None:
    # Given any audit event that tells a change
    event = MemoryEvent(
        user_id="user-123",
        memory_id=memory_id,
        event_id=event_id,
        op=op,
        actor=actor,
        at=AT,
        related_id=related,
        persona="assistant",
        kind=kind,
    )

    # When it is told
    change = change_of(event)
    assert change is not None
    record = change.as_record()

    # Then each field is the event's own id, name or time: nothing else can reach it
    assert record["id"] == event_id and record["memory_id"] == memory_id
    assert record["related_id"] == related
    assert record["op"] in {value.value for value in ChangeOp}
    assert record["actor"] == actor.value
    assert record["kind"] == (None if kind is None else kind.value)
    assert set(record) == {
        "schema",
        "id",
        "op",
        "user_id",
        "memory_id",
        "related_id",
        "persona",
        "kind",
        "actor",
        "at",
    }
