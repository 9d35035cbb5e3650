"""The chat Lambda, driven by the sample events in events/chat/ (API Gateway's shape)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import LABEL
from chatmemory.config import Container, Settings, use_container
from tests.support.functions import BrokenModel, Wired, invoke, load_handler, sample_event


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Wired(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("chat")


def test_a_chat_turn_answers_with_what_it_used_and_saved(
    handler: Any, container: Container
) -> None:
    reply = invoke(
        handler, sample_event("chat", "chat"), body={"message": "remember that I am vegetarian"}
    )

    assert reply.status == 200
    assert reply.body["reply"].startswith(LABEL) and reply.body["model"] == "offline"
    assert reply.body["conversation_id"].startswith("conv_") and len(reply.body["saved"]) == 1
    assert reply.body["memories_used"] == []


def test_the_sample_context_event_returns_blocks(handler: Any, container: Container) -> None:
    reply = invoke(handler, sample_event("chat", "context"))

    assert reply.status == 200
    assert set(reply.body["blocks"]) == {
        "system",
        "profile",
        "note",
        "summary",
        "recent",
        "memories",
        "threads",
        "kickoff",
    }
    assert reply.body["prompt_tokens"] > 0 and reply.body["conversation_id"] is None


def test_a_failing_model_is_a_502_and_nothing_is_kept(
    handler: Any, tmp_path: Path, clock: ManualClock
) -> None:
    broken = Wired(Settings(state_dir=tmp_path, embedder="hashing"), clock, BrokenModel())
    use_container(broken)
    try:
        reply = invoke(
            handler, sample_event("chat", "chat"), body={"message": "remember that I am vegetarian"}
        )
    finally:
        use_container(None)

    assert (reply.status, reply.error_code) == (502, "model_unavailable")
    assert broken.stores.conversations.list_conversations("user-123") == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": ""}, "message"),
        ({"message": "x" * 8001}, "message"),
        ({"message": "hi", "temporary": "yes"}, "temporary"),
        ({}, "message"),
    ],
)
def test_bad_chat_input_is_a_400_naming_the_field(
    handler: Any, container: Container, body: dict[str, Any], field: str
) -> None:
    reply = invoke(handler, sample_event("chat", "chat"), body=body)

    assert (reply.status, reply.error_code) == (400, "validation_error")
    assert field in reply.body["error"]["message"]
    assert container.stores.conversations.list_conversations("user-123") == []


def test_someone_elses_conversation_is_a_404(handler: Any, container: Container) -> None:
    theirs = invoke(
        handler, sample_event("chat", "chat"), user="alice", body={"message": "hello"}
    ).body

    mine = invoke(
        handler,
        sample_event("chat", "chat"),
        user="mallory",
        body={"message": "hi", "conversation_id": theirs["conversation_id"]},
    )

    assert (mine.status, mine.error_code) == (404, "not_found")


def test_without_verified_claims_chat_is_401(handler: Any, container: Container) -> None:
    assert invoke(handler, sample_event("chat", "chat"), user=None).status == 401
