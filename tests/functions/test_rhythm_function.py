"""Rhythm through the Lambdas (seed 003): the time zone setting at the door, and a rhythm
the chat function sampled listed by the memories function like any other memory."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from tests.support.functions import Wired, invoke, load_handler, sample_event

USER = "user-123"


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Wired(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def memories() -> Any:
    return load_handler("memories")


@pytest.fixture(scope="module")
def chat() -> Any:
    return load_handler("chat")


def put_settings(handler: Any, body: dict[str, Any]) -> Any:
    return invoke(handler, sample_event("memories", "put_settings"), user=USER, body=body)


def test_the_time_zone_is_set_and_shown_with_the_settings(
    memories: Any, container: Container
) -> None:
    shown = invoke(memories, sample_event("memories", "get_settings"), user=USER)
    assert shown.body["timezone"] == "UTC"

    reply = put_settings(memories, {"timezone": "Europe/Paris"})

    assert reply.status == 200 and reply.body["timezone"] == "Europe/Paris"
    assert container.stores.user_state.get_settings(USER).timezone == "Europe/Paris"
    # a change of something else keeps it
    assert put_settings(memories, {"note": "Call me Al."}).body["timezone"] == "Europe/Paris"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "utc", "../../etc/passwd", "", "x" * 80, 5])
def test_an_unknown_time_zone_is_a_validation_error_naming_it(
    memories: Any, container: Container, zone: object
) -> None:
    reply = put_settings(memories, {"timezone": zone})

    assert (reply.status, reply.error_code) == (400, "validation_error")
    assert "timezone" in reply.body["error"]["message"]
    assert container.stores.user_state.get_settings(USER).timezone == "UTC"


def test_a_rhythm_the_chat_sampled_is_listed_and_deletable(
    chat: Any, memories: Any, container: Container, clock: ManualClock
) -> None:
    # Given someone in Paris (UTC+1 in December) chatting at 22:xx local on three weekdays
    put_settings(memories, {"timezone": "Europe/Paris"})
    for day in range(3):
        clock.set(datetime(2026, 11, 30, 21, 10, tzinfo=UTC) + timedelta(days=day))
        said = invoke(chat, sample_event("chat", "chat"), user=USER, body={"message": "hello"})
        assert said.status == 200
    # When the memories are listed
    listed = invoke(memories, sample_event("memories", "list_memories"), user=USER)
    # Then the rhythm is among them, in their local hours
    [rhythm] = [m for m in listed.body["memories"] if m["category"] == "rhythm"]
    assert rhythm["text"] == "Usually chats late on weekday evenings (around 22:00)."
    # And it is deleted like any other memory
    ids = {"memory_id": rhythm["memory_id"]}
    assert (
        invoke(memories, sample_event("memories", "delete_memory"), user=USER, path_ids=ids).status
        == 204
    )
    listed = invoke(memories, sample_event("memories", "list_memories"), user=USER)
    assert [m for m in listed.body["memories"] if m["category"] == "rhythm"] == []
