"""POST /v1/observe through the chat Lambda, driven by events/chat/observe.json."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from tests.support.functions import Wired, invoke, load_handler, sample_event

USER = "user-123"
TURN = {"turn_id": "t-1", "user": "I'm vegetarian.", "assistant": "Noted."}


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Wired(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("chat")


def observe(handler: Any, body: Any = ..., raw: str | None = None) -> Any:
    return invoke(handler, sample_event("chat", "observe"), body=body, raw_body=raw)


def test_the_sample_event_stores_the_turn(handler: Any, container: Container) -> None:
    reply = observe(handler)

    assert reply.status == 201, reply.body
    assert set(reply.body) == {"conversation_id", "message_ids", "stored", "learns"}
    assert reply.body["stored"] is True and reply.body["learns"] is True
    messages = container.stores.conversations.list_messages(USER, reply.body["conversation_id"])
    assert [m.message_id for m in messages] == reply.body["message_ids"]
    assert messages[0].content == "We finally adopted a cat, her name is Miso."


def test_a_retry_answers_200_with_the_same_ids_and_stores_nothing(
    handler: Any, container: Container
) -> None:
    first = observe(handler, TURN)

    again = observe(handler, TURN)

    assert again.status == 200
    assert again.body == {**first.body, "stored": False}
    assert len(container.stores.conversations.list_conversations(USER)) == 1


def test_the_same_turn_id_for_a_different_turn_is_a_conflict(
    handler: Any, container: Container
) -> None:
    observe(handler, TURN)

    reply = observe(handler, {**TURN, "user": "I moved to Pune."})

    assert reply.status == 409 and reply.error_code == "conflict"
    assert "turn_id" in reply.body["error"]["message"]


def test_a_conversation_that_is_not_yours_is_not_found(handler: Any, container: Container) -> None:
    reply = observe(handler, {**TURN, "conversation_id": "conv_" + "0" * 32})

    assert reply.status == 404 and reply.error_code == "not_found"


def test_with_memory_off_the_turn_is_stored_but_not_learned(
    handler: Any, container: Container
) -> None:
    container.memory_settings.update(USER, enabled=False)

    reply = observe(handler, TURN)

    assert reply.status == 201 and reply.body["learns"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user": "Hi."}, "turn_id"),
        ({**TURN, "turn_id": "has spaces"}, "turn_id"),
        ({**TURN, "turn_id": "x" * 129}, "turn_id"),
        ({**TURN, "user": ""}, "user"),
        ({**TURN, "user": "   "}, "user"),
        ({**TURN, "user": "x" * 8001}, "user"),
        ({**TURN, "assistant": 42}, "assistant"),
        ({**TURN, "temporary": "yes"}, "temporary"),
        ({**TURN, "persona": "Not A Persona"}, "persona"),
        ({**TURN, "message": "chat's field, not this one"}, "message"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(
    handler: Any, container: Container, body: dict[str, Any], field: str
) -> None:
    reply = observe(handler, body)

    assert reply.status == 400 and reply.error_code == "validation_error"
    assert f"'{field}'" in reply.body["error"]["message"]
    assert container.stores.conversations.list_conversations(USER) == []


def test_a_body_that_is_not_json_is_malformed(handler: Any, container: Container) -> None:
    reply = observe(handler, raw="{not json")

    assert reply.status == 400 and reply.error_code == "malformed_json"


def test_the_longest_turn_the_contract_allows_is_stored(handler: Any, container: Container) -> None:
    reply = observe(handler, {"turn_id": "t" * 128, "user": "u" * 8000, "assistant": "a" * 32000})

    assert reply.status == 201, reply.body
    over = observe(handler, {"turn_id": "t-2", "user": "u", "assistant": "a" * 32001})
    assert over.status == 400 and "'assistant'" in over.body["error"]["message"]
