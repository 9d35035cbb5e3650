"""Newest wins, by when things were said: the rules code keeps over any routing decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chatmemory.domain.extraction import Candidate, Dropped
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.overtaken import SinceTheMessages, overtaken
from chatmemory.domain.routing import (
    Action,
    Resolved,
    Routed,
    RouteDecision,
    latest_per_key,
    numbered,
    resolve,
)
from chatmemory.domain.tombstone import Tombstone
from tests.support import builders

T0 = datetime(2026, 11, 1, 9, tzinfo=UTC)
SAID = T0 + timedelta(hours=1)
MESSAGE = "msg_" + "a" * 32 + "_1"


def candidate(text: str, key: str | None = "home_city", **fields: object) -> Candidate:
    values: dict[str, object] = {
        "text": text,
        "category": "location",
        "kind": Kind.FACT,
        "importance": 7,
        "stated_by": StatedBy.USER,
        "evidence": (MESSAGE,),
        "key": key,
    }
    values.update(fields)
    return Candidate(**values)  # type: ignore[arg-type]


def memory(text: str, at: datetime, **fields: object) -> Memory:
    values: dict[str, object] = {"key": "home_city", "category": "location", **fields}
    return builders.memory("alice", text, at, **values)


def test_a_message_never_overrules_a_belief_stated_after_it() -> None:
    mumbai = memory("Lives in Mumbai.", SAID + timedelta(minutes=5))
    neighbours = numbered([mumbai])

    resolved = resolve(
        RouteDecision(Action.UPDATE, "0"),
        neighbours,
        candidate("Lives in Pune."),
        said_at=SAID,
        stated_at={mumbai.memory_id: mumbai.created_at},
    )

    assert resolved.action is Action.NONE and "newer" in resolved.note


def test_a_belief_stated_before_the_message_is_updated() -> None:
    pune = memory("Lives in Pune.", T0)
    written_later = {pune.memory_id: T0}  # drawn from a message said at T0, written later

    resolved = resolve(
        RouteDecision(Action.UPDATE, "0"),
        numbered(
            [
                pune.with_changes(
                    created_at=SAID + timedelta(days=1), updated_at=SAID + timedelta(days=1)
                )
            ]
        ),
        candidate("Lives in Mumbai."),
        said_at=SAID,
        stated_at=written_later,
    )

    assert resolved.action is Action.UPDATE


def test_no_second_memory_for_a_key_a_newer_statement_holds() -> None:
    mumbai = memory("Lives in Mumbai.", SAID + timedelta(minutes=5))

    resolved = resolve(
        RouteDecision(Action.ADD),
        numbered([mumbai]),
        candidate("Lives in Pune."),
        said_at=SAID,
        stated_at={mumbai.memory_id: mumbai.created_at},
    )

    assert resolved.action is Action.NONE


def test_the_same_words_are_never_added_twice_whatever_the_model_says() -> None:
    vegan = memory("Is vegan.", T0, key="diet")

    resolved = resolve(
        RouteDecision(Action.ADD),
        numbered([vegan]),
        candidate("is vegan", key="diet"),
        said_at=SAID,
        stated_at={},
    )

    assert resolved == Resolved(Action.NONE, None, "kept: already remembered in these words")


def test_of_two_statements_about_one_key_only_the_later_acts() -> None:
    pune, mumbai, tea = (
        candidate("Lives in Pune."),
        candidate("Lives in Mumbai."),
        candidate("Likes tea.", key=None),
    )
    routed = [
        Routed(mumbai, SAID + timedelta(minutes=2), Resolved(Action.ADD, None)),
        Routed(pune, SAID, Resolved(Action.ADD, None)),
        Routed(tea, SAID, Resolved(Action.ADD, None)),
    ]

    actions = [resolved.action for resolved in latest_per_key(routed)]

    assert actions == [Action.ADD, Action.NONE, Action.ADD]


def test_a_memory_corrected_since_the_message_is_not_brought_back() -> None:
    vegetarian = memory(
        "Is vegetarian.", T0, key="diet", category="diet", source_message_id=MESSAGE
    ).superseded_by(memory("Is vegan.", SAID + timedelta(hours=2), key="diet"))
    since = SinceTheMessages.of([vegetarian], [], None)

    reworded = candidate("Follows a vegetarian diet.", key="diet", category="diet")

    assert overtaken(reworded, SAID, since) is Dropped.CORRECTED
    assert overtaken(candidate("Is vegetarian.", key=None), SAID, since) is Dropped.CORRECTED
    # said again after the correction: the new message is newer than the correction
    assert overtaken(reworded, SAID + timedelta(days=1), since) is None


def test_a_message_a_deleted_memory_came_from_yields_nothing_again() -> None:
    tombstone = Tombstone(
        user_id="alice", memory_id="mem_x", deleted_at=SAID, source_message_ids=(MESSAGE,)
    )
    since = SinceTheMessages.of([], [tombstone], None)

    assert overtaken(candidate("Lives in Pune."), SAID, since) is Dropped.DELETED


def test_forget_everything_reaches_messages_said_before_it() -> None:
    since = SinceTheMessages.of([], [], forgotten_before=SAID + timedelta(minutes=1))

    assert overtaken(candidate("Lives in Pune."), SAID, since) is Dropped.FORGOTTEN
    assert overtaken(candidate("Lives in Pune."), SAID + timedelta(minutes=2), since) is None


def test_history_from_before_the_message_does_not_drop_it() -> None:
    old = memory("Lives in Pune.", T0).closed(T0 + timedelta(minutes=1))
    assert old.status is Status.CLOSED

    assert (
        overtaken(candidate("Lives in Pune."), SAID, SinceTheMessages.of([old], [], None)) is None
    )
