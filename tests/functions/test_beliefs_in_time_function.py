"""Beliefs with time through the HTTP contract (docs/api.md): due_in and retention on every
memory, the archived listing, and `as_of` on the listing and on /v1/context."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from tests.support.functions import invoke, load_handler, sample_event


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def memories() -> Any:
    return load_handler("memories")


@pytest.fixture(scope="module")
def chat() -> Any:
    return load_handler("chat")


def remember(handler: Any, text: str, **fields: Any) -> dict[str, Any]:
    reply = invoke(
        handler, sample_event("memories", "create_memory"), body={"text": text, **fields}
    )
    assert reply.status in (200, 201), reply.body
    body: dict[str, Any] = reply.body
    return body


def listing(handler: Any, **query: str) -> list[dict[str, Any]]:
    reply = invoke(handler, sample_event("memories", "list_memories"), query=query)
    assert reply.status == 200, reply.body
    found: list[dict[str, Any]] = reply.body["memories"]
    return found


def test_every_memory_says_how_long_it_is_still_good_for(
    memories: Any, container: Container, clock: ManualClock
) -> None:
    # Given a renewal with a date and a family fact
    renewal = remember(
        memories,
        "Passport renewal is due.",
        category="travel",
        valid_until=(clock.now() + timedelta(days=2)).isoformat(),
    )
    sisters = remember(memories, "Has two sisters.", category="family")
    # Then each carries its shelf life, in words and seconds, and its retention
    assert renewal["due_in"]["text"] == "2 days left"
    assert renewal["due_in"]["seconds"] == 2 * 86_400
    assert sisters["due_in"]["text"] == "years left"
    assert sisters["retention"] == 1.0 and sisters["stability_days"] >= 1000
    assert renewal["archived"] is None


def test_an_archived_memory_is_listed_under_archived_and_revived_by_stating_it(
    memories: Any, container: Container, clock: ManualClock
) -> None:
    mood = remember(memories, "Feels anxious about the move.", category="mood")
    clock.advance(timedelta(days=7))
    # A week later the mood has faded out of use
    assert listing(memories) == []
    (archived,) = listing(memories, status="archived")
    assert archived["memory_id"] == mood["memory_id"]
    assert archived["status"] == "archived" and archived["archived"] == "faded"
    assert archived["retention"] < 0.3
    # Stating it again answers 200 with the same record, back in use
    again = invoke(
        memories,
        sample_event("memories", "create_memory"),
        body={"text": "Feels anxious about the move.", "category": "mood"},
    )
    assert again.status == 200 and again.body["memory_id"] == mood["memory_id"]
    assert again.body["status"] == "active" and again.body["retention"] == 1.0
    assert [m["memory_id"] for m in listing(memories)] == [mood["memory_id"]]


def test_as_of_lists_what_was_believed_that_day(
    memories: Any, container: Container, clock: ManualClock
) -> None:
    pune = remember(memories, "Lives in Pune.", category="location")
    day = clock.now().date().isoformat()
    clock.advance(timedelta(days=3))
    corrected = invoke(
        memories,
        sample_event("memories", "correct_memory"),
        path_ids={"memory_id": pune["memory_id"]},
        body={"text": "Lives in Bengaluru."},
    )
    assert corrected.status == 200
    # As of the first day: Pune, as it stood (active then)
    (then,) = listing(memories, as_of=day)
    assert then["text"] == "Lives in Pune." and then["status"] == "active"
    # As of now: Bengaluru only
    assert [m["text"] for m in listing(memories, as_of=clock.now().isoformat())] == [
        "Lives in Bengaluru."
    ]
    # Bad or future dates are a 400 naming the field; so is as_of with another status
    for bad in ("yesterday", (clock.now() + timedelta(days=1)).date().isoformat()):
        reply = invoke(memories, sample_event("memories", "list_memories"), query={"as_of": bad})
        assert reply.status == 400 and "as_of" in reply.body["error"]["message"]
    reply = invoke(
        memories,
        sample_event("memories", "list_memories"),
        query={"as_of": day, "status": "superseded"},
    )
    assert reply.status == 400


def test_the_context_as_of_a_day_recalls_what_was_believed_then(
    memories: Any, chat: Any, container: Container, clock: ManualClock
) -> None:
    pune = remember(memories, "Lives in Pune.", category="location")
    day = clock.now().date().isoformat()
    clock.advance(timedelta(days=3))
    invoke(
        memories,
        sample_event("memories", "correct_memory"),
        path_ids={"memory_id": pune["memory_id"]},
        body={"text": "Lives in Bengaluru."},
    )
    asked = {"message": "Which city do I live in now, Pune or Bengaluru?"}
    then = invoke(chat, sample_event("chat", "context"), body={**asked, "as_of": day})
    now = invoke(chat, sample_event("chat", "context"), body=asked)
    assert then.status == 200 and now.status == 200
    assert [m["text"] for m in then.body["blocks"]["memories"]] == ["Lives in Pune."]
    assert [m["text"] for m in now.body["blocks"]["memories"]] == ["Lives in Bengaluru."]
    assert now.body["blocks"]["memories"][0]["due"] == "2 years left"
