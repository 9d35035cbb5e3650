"""Which beliefs an ending closes (domain/endings.py): what it names, what the verb fits,
and never an event, a story in progress, a negation or someone else's row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chatmemory.domain.endings import ending_of, ends
from chatmemory.domain.memory import Kind, Memory
from tests.support import builders

NOW = datetime(2026, 12, 1, 9, tzinfo=UTC)


def _row(text: str, **fields: object) -> Memory:
    return builders.memory("alice", text, NOW, **fields)


def _closes(ending: str, belief: str, **fields: object) -> bool:
    said = ending_of(ending)
    assert said is not None, ending
    return ends(said, _row(ending, kind=Kind.EVENT), _row(belief, **fields))


@pytest.mark.parametrize(
    ("ending", "belief"),
    [
        ("Sold their flat in Xuhui.", "Owns a flat in Xuhui."),
        ("Sold their Tesla shares in July 2026.", "Owns Tesla shares."),
        ("Quit their job at Acme.", "Works as a nurse at Acme."),
        ("Left their job.", "Works as a teacher at Oakridge School."),
        ("Broke up with their boyfriend Sam.", "Is dating Sam."),
        ("Split up with Sam.", "Their boyfriend is called Sam."),
        ("Cancelled their trip to Japan.", "Is travelling to Japan in March."),
        ("Called off the wedding.", "Is planning a wedding for June."),
        ("Is no longer vegetarian.", "Is vegetarian."),
        ("No longer works at Acme.", "Works as a designer at Acme."),
        ("Stopped running.", "Goes running every morning."),
        ("Left Paris.", "Lives in Paris."),
        ("Has sold their car.", "Owns a car."),
    ],
)
def test_an_ending_closes_the_belief_it_names(ending: str, belief: str) -> None:
    assert _closes(ending, belief)


@pytest.mark.parametrize(
    ("ending", "belief"),
    [
        ("Sold their car.", "Owns a flat in Xuhui."),  # names something else
        ("Quit their job at Acme.", "Works as a nurse at Globex."),  # another employer
        ("Sold their flat in Xuhui.", "Their sister lives in a flat in Xuhui."),  # not owned
        ("Cancelled their trip to Japan.", "Speaks Japanese and loves Japan."),  # not a plan
        ("Broke up with Sam.", "Works with Sam at Acme."),  # a colleague, not a partner
        ("Gave up meat.", "Doesn't eat meat."),  # already said: agrees, ends nothing
    ],
)
def test_an_ending_leaves_alone_what_it_does_not_end(ending: str, belief: str) -> None:
    assert not _closes(ending, belief)


def test_a_past_event_a_story_and_another_ending_are_never_closed() -> None:
    assert not _closes("Sold their flat in Xuhui.", "Bought a flat in Xuhui.", kind=Kind.EVENT)
    assert not _closes("Quit their job at Acme.", "Is job-hunting at Acme.", kind=Kind.THREAD)
    assert not _closes("Sold their car.", "Sold their car.")


def test_only_the_same_persons_and_personas_rows_are_closed() -> None:
    assert not _closes("Sold their car.", "Owns a car.", persona="warren")
    assert not _closes("Sold their car.", "Owns a car.", subject="u:bob")


@pytest.mark.parametrize(
    "text",
    ["Lives in Lisbon.", "Is vegetarian.", "Left.", "Sold.", "Stopped in July 2026."],
)
def test_a_sentence_that_ends_nothing_nameable_is_no_ending(text: str) -> None:
    assert ending_of(text) is None
