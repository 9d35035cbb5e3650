"""POST /v1/recall through the chat Lambda, driven by events/chat/recall.json."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.services.memories import NewMemory
from tests.support import builders
from tests.support.functions import Wired, invoke, load_handler, sample_event

QUERY = "salmon dinner tonight"


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Wired(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("chat")


def remember(container: Container, text: str, user: str = "user-123", **fields: Any) -> str:
    return container.memories.create(user, NewMemory(text=text, **fields)).memory.memory_id


def recall(handler: Any, body: Any, user: str = "user-123") -> Any:
    return invoke(handler, sample_event("chat", "recall"), user=user, body=body)


def test_the_sample_recall_event_answers_with_items(handler: Any, container: Container) -> None:
    remember(container, "Eats no meat but does eat fish.", category="diet")

    reply = invoke(handler, sample_event("chat", "recall"))

    assert reply.status == 200
    assert set(reply.body) == {"items", "hidden"}


def test_hits_come_ranked_with_labels_and_only_the_first_n_expanded(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    # Given memories from a chat message, and others, of the same user
    conversation = builders.conversation("user-123", clock.now())
    [said] = container.stores.conversations.append_messages(
        "user-123",
        conversation.conversation_id,
        [NewMessage(Role.USER, "I want salmon for dinner tonight, nothing else.", 9)],
        clock.now(),
        create=conversation,
    )
    remember(
        container,
        "Wants salmon dinner tonight.",
        category="diet",
        source_message_id=said.message_id,
    )
    remember(container, "Grills salmon dinner tonight outside.", category="diet")
    remember(container, "Walks the dog tonight by the river.", category="pets")

    # When the user recalls with expand=1
    reply = recall(handler, {"query": QUERY, "expand": 1})

    # Then every item is ranked and labelled, and only the first carries why and what was said
    assert reply.status == 200, reply.body
    items = reply.body["items"]
    assert [item["rank"] for item in items] == list(range(1, len(items) + 1))
    assert items[0]["label"] == "Wants salmon dinner tonight"
    assert items[0]["reasoning"].startswith("You said it in a chat on 2026-11-30")
    assert items[0]["evidence"] == [
        {
            "message_id": said.message_id,
            "role": "user",
            "text": "I want salmon for dinner tonight, nothing else.",
            "created_at": "2026-11-30T09:00:00Z",
        }
    ]
    assert all(item["reasoning"] is None and item["evidence"] is None for item in items[1:])
    assert {"due_in", "retention", "score", "unasked", "kind", "persona", "category"} <= set(
        items[0]
    )
    assert set(items[0]["due_in"]) == {"seconds", "text", "on"}
    unasked = [item for item in items if item["unasked"]]
    assert [item["category"] for item in unasked] == ["pets"]


def test_another_users_memories_never_come_back(handler: Any, container: Container) -> None:
    remember(container, "Wants salmon dinner tonight.", user="alice")

    assert recall(handler, {"query": QUERY}, user="mallory").body == {"items": [], "hidden": 0}
    assert len(recall(handler, {"query": QUERY}, user="alice").body["items"]) == 1


def test_a_deleted_memory_never_comes_back(handler: Any, container: Container) -> None:
    memory_id = remember(container, "Wants salmon dinner tonight.")
    container.memories.delete("user-123", memory_id)

    assert recall(handler, {"query": QUERY}).body == {"items": [], "hidden": 0}


def test_with_memory_off_nothing_comes_back(handler: Any, container: Container) -> None:
    remember(container, "Wants salmon dinner tonight.")
    container.memory_settings.update("user-123", enabled=False)

    reply = recall(handler, {"query": QUERY})

    assert (reply.status, reply.body) == (200, {"items": [], "hidden": 0})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"query": "hi", "k": 0}, "k"),
        ({"query": "hi", "k": 51}, "k"),
        ({"query": "hi", "k": "15"}, "k"),
        ({"query": "hi", "k": 5, "expand": 6}, "expand"),
        ({"query": "hi", "expand": -1}, "expand"),
        ({"query": "hi", "expand": True}, "expand"),
        ({"query": "hi", "persona": "Not A Slug"}, "persona"),
        ({"query": "hi", "user_id": "alice"}, "user_id"),
    ],
)
def test_bad_bodies_are_a_400_naming_the_field(
    handler: Any, container: Container, body: dict[str, Any], field: str
) -> None:
    reply = recall(handler, body)

    assert (reply.status, reply.error_code) == (400, "validation_error")
    assert field in reply.body["error"]["message"]


def test_without_verified_claims_recall_is_401(handler: Any, container: Container) -> None:
    assert recall(handler, {"query": QUERY}, user=None).status == 401
