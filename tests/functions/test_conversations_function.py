"""Deleting conversations through the memories Lambda, driven by the sample events in
events/memories/ (API Gateway's shape).

Regression (issue 45, defect 11): after `DELETE /v1/memories` a card number, an SSN and a
password typed in a private chat (stored before messages were masked) stayed in its
messages and came back as recent turns in that conversation's next context, and the
person had no way to delete the conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from tests.support.functions import invoke, load_handler, sample_event
from tests.support.raw_transcript import left_of, store_as_said

CARD, SSN, PASSWORD = "4111 1111 1111 1111", "078-05-1120", "sunflower123"
TYPED_BEFORE_MASKING = (
    f"My card is {CARD}.",
    f"My SSN is {SSN}.",
    f"My bank password is {PASSWORD}.",
)


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def memories() -> Any:
    return load_handler("memories")


@pytest.fixture(scope="module")
def chat() -> Any:
    return load_handler("chat")


def _private_chat(chat: Any, container: Container, tmp_path: Path, user: str) -> str:
    """A private chat of three turns whose stored messages hold the secrets as typed (as
    every release before masking on write stored them)."""
    conversation_id = None
    for said in TYPED_BEFORE_MASKING:
        body: dict[str, Any] = {"message": said}
        if conversation_id:
            body["conversation_id"] = conversation_id
        reply = invoke(chat, sample_event("chat", "chat"), user=user, body=body)
        assert reply.status == 200, reply.body
        conversation_id = reply.body["conversation_id"]
    assert conversation_id is not None
    stores = container.stores
    for message in stores.conversations.list_messages(user, conversation_id):
        if message.role.value == "user":
            said = TYPED_BEFORE_MASKING[(message.seq - 1) // 2]
            store_as_said(stores, tmp_path, user, conversation_id, seq=message.seq, content=said)
    return conversation_id


def _context(chat: Any, user: str, conversation_id: str) -> Any:
    return invoke(
        chat,
        sample_event("chat", "context"),
        user=user,
        body={"message": "What did I tell you?", "conversation_id": conversation_id},
    )


def test_a_deleted_conversation_takes_what_forget_everything_left(
    memories: Any, chat: Any, container: Container, tmp_path: Path
) -> None:
    # Given a private chat holding a card number, an SSN and a password, and everything
    # forgotten since: the recent turns still carry them (forget-everything is memories)
    conversation_id = _private_chat(chat, container, tmp_path, "alice")
    forgot = invoke(memories, sample_event("memories", "forget_everything"), user="alice")
    assert forgot.status == 204
    recent = _context(chat, "alice", conversation_id).body["blocks"]["recent"]
    assert any(CARD in turn["content"] for turn in recent)

    # When she deletes the conversation
    deleted = invoke(
        memories,
        sample_event("memories", "delete_conversation"),
        user="alice",
        path_ids={"conversation_id": conversation_id},
    )

    # Then it is gone from the very next request, and nothing of it is stored
    assert (deleted.status, deleted.body) == (204, None)
    gone = _context(chat, "alice", conversation_id)
    assert (gone.status, gone.error_code) == (404, "not_found")
    fresh = invoke(chat, sample_event("chat", "context"), user="alice", body={"message": "Hi"})
    for secret in (CARD, SSN, PASSWORD):
        assert secret not in str(fresh.body)
    assert left_of(container.stores, tmp_path, "alice", conversation_id) == []
    # And she can still list, export and forget everything
    _still_in_control(memories, "alice")


def test_another_users_conversation_is_not_found_exactly_like_an_unknown_one(
    memories: Any, chat: Any, container: Container, tmp_path: Path
) -> None:
    # Given alice's conversation
    hers = _private_chat(chat, container, tmp_path, "alice")
    event = sample_event("memories", "delete_conversation")

    # When bob deletes it, and an id nobody has, and one that is no id at all
    answers = [
        invoke(memories, event, user="bob", path_ids={"conversation_id": cid})
        for cid in (hers, "conv_" + "0" * 32, "not-a-conversation")
    ]

    # Then each is the same 404, and hers is as it was
    assert [(a.status, a.body) for a in answers] == [(404, answers[0].body)] * 3
    assert answers[0].error_code == "not_found"
    assert len(container.stores.conversations.list_messages("alice", hers)) == 6


def test_deleting_every_conversation_leaves_others_alone(
    memories: Any, chat: Any, container: Container, tmp_path: Path
) -> None:
    # Given two conversations of alice's and one of bob's
    hers = [_private_chat(chat, container, tmp_path, "alice") for _ in range(2)]
    his = _private_chat(chat, container, tmp_path, "bob")

    # When she deletes all of hers
    deleted = invoke(memories, sample_event("memories", "delete_conversations"), user="alice")

    # Then none of hers is left, each is 404 from the next request on, and bob's stays
    assert deleted.status == 204
    for conversation_id in hers:
        assert _context(chat, "alice", conversation_id).status == 404
        assert left_of(container.stores, tmp_path, "alice", conversation_id) == []
    assert _context(chat, "bob", his).status == 200
    # and with nothing left, deleting all again is still 204
    again = invoke(memories, sample_event("memories", "delete_conversations"), user="alice")
    assert again.status == 204
    _still_in_control(memories, "alice")


def test_memories_learned_from_a_deleted_conversation_stay(
    memories: Any, chat: Any, container: Container
) -> None:
    # Given a memory learned from a conversation, recalled with that message as evidence
    said = invoke(
        chat, sample_event("chat", "chat"), user="alice", body={"message": "I live in Pune."}
    )
    clock = container.clock
    assert isinstance(clock, ManualClock)
    clock.advance(timedelta(seconds=container.settings.idle_seconds + 1))
    assert container.idle.sweep(now_or_never=True) == 1  # what `chatmemory flush` does
    assert _listed(memories) == ["Lives in Pune."]
    assert _evidence(chat) == [["I live in Pune."]]

    # When the conversation is deleted
    invoke(
        memories,
        sample_event("memories", "delete_conversation"),
        user="alice",
        path_ids={"conversation_id": said.body["conversation_id"]},
    )

    # Then the memory is still hers (to delete on its own); its evidence is quoted no more
    assert _listed(memories) == ["Lives in Pune."]
    assert _evidence(chat) == [[]]


def _listed(memories: Any) -> list[str]:
    listed = invoke(memories, sample_event("memories", "list_memories"), user="alice")
    return [memory["text"] for memory in listed.body["memories"]]


def _evidence(chat: Any) -> list[list[str]]:
    recalled = invoke(
        chat,
        sample_event("chat", "recall"),
        user="alice",
        body={"query": "I live in Pune", "expand": 1},
    )
    assert recalled.status == 200, recalled.body
    return [[quote["text"] for quote in item["evidence"]] for item in recalled.body["items"]]


def _still_in_control(memories: Any, user: str) -> None:
    """The owner can still list, export and forget everything."""
    listed = invoke(memories, sample_event("memories", "list_memories"), user=user)
    exported = invoke(memories, sample_event("memories", "export_memories"), user=user)
    forgot = invoke(memories, sample_event("memories", "forget_everything"), user=user)
    assert (listed.status, exported.status, forgot.status) == (200, 200, 204)
