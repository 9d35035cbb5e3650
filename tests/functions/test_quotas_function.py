"""The per-user quota through the Lambdas (API Gateway's events): a turn past the minute's
limit is a 429 `rate_limited` with Retry-After, and nothing of it is stored."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.api.openapi import openapi_json
from chatmemory.config import Container, Settings, use_container
from tests.support.functions import Reply, Wired, invoke, load_handler, sample_event

DAN = "dan"


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    settings = Settings(
        state_dir=tmp_path,
        embedder="hashing",
        model="offline",
        quota_turns_per_minute=2,
        quota_observed_per_minute=3,
    )
    built = Wired(settings, clock)
    use_container(built)
    yield built
    use_container(None)


def chat(body: dict[str, Any]) -> Reply:
    return invoke(load_handler("chat"), sample_event("chat", "chat"), user=DAN, body=body)


def test_a_chat_turn_past_the_quota_is_a_429_with_retry_after_and_nothing_is_kept(
    container: Container, clock: ManualClock
) -> None:
    # Given Dan's two turns for this minute taken, 50 seconds into it
    clock.advance(timedelta(seconds=50))
    first = chat({"message": "hello"}).body
    chat({"message": "how are you?", "conversation_id": first["conversation_id"]})
    # When he sends a third
    refused = chat({"message": "remember that I am vegetarian"})
    # Then it is refused in the contract's shape, saying when to come back
    assert (refused.status, refused.error_code) == (429, "rate_limited")
    assert refused.headers["Retry-After"] == "10"
    assert "10 second" in refused.body["error"]["message"]
    # And nothing of it was stored: no message, no memory
    conversations = container.stores.conversations.list_conversations(DAN)
    assert [c.conversation_id for c in conversations] == [first["conversation_id"]]
    assert len(container.stores.conversations.list_messages(DAN, first["conversation_id"])) == 4
    assert list(container.stores.memories.iter_memories(DAN)) == []
    # And ten seconds later he may go on
    clock.advance(timedelta(seconds=10))
    assert chat({"message": "remember that I am vegetarian"}).status == 200


def test_a_users_room_turns_past_the_quota_are_a_429(container: Container) -> None:
    # Given Dan's own private chat with Warren, opened with his own token
    handler = load_handler("rooms")

    def as_dan(name: str, body: Any, room_id: str | None = None) -> Reply:
        event = copy.deepcopy(sample_event("rooms", name))
        claims = event["requestContext"]["authorizer"]["jwt"]["claims"]
        claims.pop("scope")
        claims.pop("client_id")
        ids = {"room_id": room_id} if room_id else None
        return invoke(handler, event, user=DAN, path_ids=ids, body=body)

    opened = as_dan("open_room", {"kind": "private", "personas": ["warren"], "members": [DAN]})
    room_id = opened.body["room_id"]
    lines = {"messages": [{"speaker": f"u:{DAN}", "text": "any news?"}]}
    assert as_dan("post_messages", lines, room_id).status == 201
    # When he asks for three turns in a minute
    statuses = [as_dan("room_turn", {}, room_id).status for _ in range(3)]
    # Then the third is refused, and only two replies were kept
    assert statuses == [200, 200, 429]
    assert len(container.stores.rooms.list_room_messages(room_id)) == 3


def test_observed_turns_past_their_quota_are_a_429_and_are_not_stored(
    container: Container, clock: ManualClock
) -> None:
    # Given an agent reporting Dan's turns, 30 seconds into a minute
    clock.advance(timedelta(seconds=30))

    def observe(n: int) -> Reply:
        turn = {"turn_id": f"t-{n}", "user": f"turn {n}", "assistant": "ok"}
        return invoke(load_handler("chat"), sample_event("chat", "observe"), user=DAN, body=turn)

    # When it reports four in the minute (his chat quota is separate and untouched)
    replies = [observe(n) for n in range(4)]

    # Then the fourth is refused, saying when to come back, and was not stored
    assert [reply.status for reply in replies] == [201, 201, 201, 429]
    assert (replies[3].error_code, replies[3].headers["Retry-After"]) == ("rate_limited", "30")
    stored = {
        message.content
        for conversation in container.stores.conversations.list_conversations(DAN)
        for message in container.stores.conversations.list_messages(
            DAN, conversation.conversation_id
        )
    }
    assert "turn 3" not in stored and {"turn 0", "turn 1", "turn 2"} <= stored
    assert chat({"message": "hello"}).status == 200
    # And in the next minute it goes on
    clock.advance(timedelta(seconds=30))
    assert observe(3).status == 201


def test_the_openapi_document_names_the_429_and_its_retry_after() -> None:
    paths = json.loads(openapi_json())["paths"]
    for path in ("/v1/chat", "/v1/rooms/{room_id}/turn", "/v1/observe"):
        refused = paths[path]["post"]["responses"]["429"]
        assert "rate_limited" in refused["description"]
        assert refused["headers"]["Retry-After"]["schema"]["type"] == "integer"


def test_a_memory_typed_past_the_minutes_writes_is_a_429_and_at_the_ceiling_a_409(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given a deployment allowing two writes a minute and three memory versions in all
    settings = Settings(
        state_dir=tmp_path,
        embedder="hashing",
        model="offline",
        quota_writes_per_minute=2,
        ceiling_memory_rows=3,
    )
    use_container(Wired(settings, clock))
    memories = load_handler("memories")

    def create(text: str) -> Reply:
        return invoke(
            memories, sample_event("memories", "create_memory"), user=DAN, body={"text": text}
        )

    try:
        # When Dan types three memories in one minute
        answers = [create(f"Has visited city {n}.") for n in range(3)]
        # Then the third is a 429 with Retry-After, and not stored
        assert [a.status for a in answers] == [201, 201, 429]
        assert answers[2].body["error"]["code"] == "rate_limited"
        assert answers[2].headers["Retry-After"].isdigit()
        # And once at the ceiling (a third memory the next minute), the next is a 409
        clock.advance(timedelta(minutes=1))
        assert create("Has visited city 2.").status == 201
        clock.advance(timedelta(minutes=1))
        full = create("Has visited city 3.")
        assert (full.status, full.body["error"]["code"]) == (409, "storage_full")
        assert "delete memories or conversations to make room" in full.body["error"]["message"]
    finally:
        use_container(None)
