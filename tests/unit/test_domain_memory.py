"""The memory row refuses bad values with errors that name the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Kind, Memory, Status, versions_to_forget
from tests.support import builders

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_a_memory_about_the_user_gets_their_subject_by_default() -> None:
    memory = builders.memory("alice", "Is vegetarian.", NOW)

    assert memory.subject == "u:alice"
    assert memory.is_about_user()
    assert memory.persona == "assistant" and memory.kind is Kind.FACT


@pytest.mark.parametrize(
    ("fields", "field_named"),
    [
        ({"text": ""}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "x" * 501}, "text"),
        ({"text": "bell\x07"}, "text"),
        ({"importance": 0}, "importance"),
        ({"importance": 11}, "importance"),
        ({"kind": "rumour"}, "kind"),
        ({"status": "deleted"}, "status"),
        ({"stated_by": "model"}, "stated_by"),
        ({"category": "Diet Prefs"}, "category"),
        ({"category": "x" * 41}, "category"),
        ({"persona": "Warren!"}, "persona"),
        ({"subject": "dan"}, "subject"),
        ({"key": "Home City"}, "key"),
        ({"recall_count": -1}, "recall_count"),
        ({"meta": {"f": object()}}, "meta"),
        ({"meta": {"big": "x" * 3000}}, "meta"),
        ({"embedding": b"x" * 5000}, "embedding"),
        ({"created_at": datetime(2026, 1, 1)}, "created_at"),  # naive: refused, not guessed
        ({"evidence": ("has space",)}, "evidence"),
        ({"counterpart": "u:dan"}, "counterpart"),  # a row about alice is with no one
        ({"subject": "self", "counterpart": "dan"}, "counterpart"),
        ({"subject": "self", "counterpart": "u:"}, "counterpart"),
    ],
)
def test_bad_values_are_refused_naming_the_field(
    fields: dict[str, object], field_named: str
) -> None:
    with pytest.raises(InvalidField) as refused:
        builders.memory("alice", fields.pop("text", "Is vegetarian."), NOW, **fields)  # type: ignore[arg-type]
    assert refused.value.field == field_named


def test_history_rows_must_say_when_they_stopped() -> None:
    with pytest.raises(InvalidField) as refused:
        builders.memory("alice", "Lived in Pune.", NOW, status=Status.CLOSED)
    assert refused.value.field == "valid_to"
    with pytest.raises(InvalidField):
        builders.memory("alice", "Lives in Pune.", NOW, valid_to=NOW)


def test_superseding_ends_world_time_where_the_replacement_begins() -> None:
    pune = builders.memory("alice", "Lives in Pune.", NOW, valid_from=NOW - timedelta(days=400))
    moved_on = NOW + timedelta(days=10)
    bengaluru = builders.memory(
        "alice", "Lives in Bengaluru.", moved_on, valid_from=NOW + timedelta(days=2)
    )

    history = pune.superseded_by(bengaluru)

    assert history.status is Status.SUPERSEDED
    assert history.valid_to == NOW + timedelta(days=2)
    assert history.closed_by == bengaluru.memory_id
    assert history.updated_at == moved_on
    assert history.text == pune.text


def test_recall_reinforces_a_memory() -> None:
    memory = builders.memory("alice", "Is vegetarian.", NOW)
    later = NOW + timedelta(days=3)

    recalled = memory.recalled(later).recalled(later)

    assert recalled.recall_count == 2 and recalled.last_used_at == later


def test_a_memory_expires_at_its_shelf_life() -> None:
    trip = builders.memory("alice", "Travels next week.", NOW, valid_until=NOW + timedelta(days=7))

    assert not trip.is_expired(NOW + timedelta(days=6))
    assert trip.is_expired(NOW + timedelta(days=7))


def test_forgetting_a_belief_reaches_its_older_versions_but_not_newer_ones() -> None:
    pune = builders.memory("alice", "Lives in Pune.", NOW)
    goa = builders.memory("alice", "Lives in Goa.", NOW, supersedes=pune.memory_id)
    delhi = builders.memory("alice", "Lives in Delhi.", NOW, supersedes=goa.memory_id)
    rows: list[Memory] = [pune, goa, delhi]

    assert versions_to_forget(rows, delhi.memory_id) == [
        pune.memory_id,
        goa.memory_id,
        delhi.memory_id,
    ]
    assert versions_to_forget(rows, goa.memory_id) == [pune.memory_id, goa.memory_id]
    assert versions_to_forget(rows, "mem_unknown") == ["mem_unknown"]
