""" "Memories used" is every memory whose words reached the prompt, on both stores: the
profile's, the threads', the recalled ones and a persona block's — on a context, a chat
turn (streamed or not) and a room turn. Each test renders the prompt the model got and
compares it with the list the person is shown."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.memory import Kind, Memory, subject_for_user
from chatmemory.domain.prompt import RenderedPrompt, one_line
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.model import ReplyDelta, ReplyDone, ToolRunner, ToolSpec
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatRequest, ChatResult
from chatmemory.services.context import ContextRequest
from chatmemory.services.memories import NewMemory
from tests.support import builders
from tests.support.product import ALICE, Product

MESSAGE = "Any ideas for a weekend away from Lisbon?"


class PromptRecorder(OfflineModel):
    """The offline model, keeping every prompt it was sent."""

    def __init__(self) -> None:
        self.prompts: list[RenderedPrompt] = []

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        self.prompts.append(prompt)
        yield from super().reply(prompt, tools, run_tool)


@pytest.fixture
def model() -> PromptRecorder:
    return PromptRecorder()


@pytest.fixture
def product(stores: Stores, clock: ManualClock, model: PromptRecorder) -> Product:
    return Product(stores, clock, model)


def _every_memory(stores: Stores, user_id: str) -> list[Memory]:
    return list(stores.memories.iter_memories(user_id, MemoryQuery(status=None)))


def _in_prompt(prompt: RenderedPrompt, memories: Sequence[Memory], message: str) -> set[str]:
    """The ids of the memories whose words the prompt holds (the new message aside)."""
    said = prompt.text().replace(message, "")
    return {m.memory_id for m in memories if one_line(m.text) in said}


def _alices_memories(product: Product) -> dict[str, str]:
    """Profile material, a followed thread, a fact recall finds for MESSAGE and one it
    does not; the profile built from them."""
    ids = {}
    for text, category in (
        ("Lives in Lisbon.", "location"),
        ("Plays the cello.", "hobbies"),
        ("Loves weekend trips to the coast.", "travel"),
        ("Has a dentist appointment in January.", "general"),
    ):
        created = product.memories.create(ALICE, NewMemory(text=text, category=category))
        ids[text] = created.memory.memory_id
    thread = builders.memory(
        ALICE,
        "Is job-hunting: second round at Acme on 2026-12-03.",
        product.clock.now(),
        kind=Kind.THREAD,
        category="work",
        meta={"cadence": "fast"},
    )
    assert product.stores.memories.add_memory(thread)
    ids[thread.text] = thread.memory_id
    product.pipeline.rebuild_profile(ALICE, "assistant")
    product.clock.advance(timedelta(days=4))
    return ids


def test_a_context_lists_every_memory_in_its_prompt_with_its_block(product: Product) -> None:
    # Given a profile, a thread and memories recall may find
    ids = _alices_memories(product)

    # When the context of a message is built
    built = product.context.build(ContextRequest(user_id=ALICE, message=MESSAGE))

    # Then "memories used" is exactly what the rendered prompt holds, each id once, the
    # recalled ones first, each with the block that carried it
    everything = _every_memory(product.stores, ALICE)
    assert set(built.memories_used) == _in_prompt(built.rendered, everything, MESSAGE)
    assert len(built.memories_used) == len(set(built.memories_used))
    blocks = {item.memory_id: item.block.value for item in built.used}
    assert blocks[ids["Lives in Lisbon."]] in ("profile", "memories")
    assert blocks[ids["Plays the cello."]] == "profile"
    assert blocks[ids["Is job-hunting: second round at Acme on 2026-12-03."]] == "threads"
    recalled = [line.memory_id for line in built.blocks.memories]
    assert recalled and built.memories_used[: len(recalled)] == recalled


@pytest.mark.parametrize("streamed", [False, True])
def test_a_chat_turn_lists_every_memory_the_model_read(
    product: Product, model: PromptRecorder, streamed: bool
) -> None:
    # Given a profile, a thread and memories recall may find
    _alices_memories(product)

    # When she chats (the reply streamed piece by piece, or taken whole)
    events = list(product.chat.turn(ChatRequest(user_id=ALICE, message=MESSAGE)))
    result = events[-1]
    assert isinstance(result, ChatResult)
    if streamed:
        assert any(isinstance(event, ReplyDelta) for event in events[:-1])

    # Then what she is shown as used is what the model was sent, with the blocks
    [prompt] = model.prompts
    everything = _every_memory(product.stores, ALICE)
    assert set(result.memories_used) == _in_prompt(prompt, everything, MESSAGE)
    assert [item.memory_id for item in result.used_in] == result.memories_used
    # and the stored reply remembers all of them (a delete withdraws it)
    [reply] = product.stores.conversations.list_messages(ALICE, result.conversation_id, after_seq=1)
    assert list(reply.memories_used) == result.memories_used


def test_deleting_a_profile_memory_withdraws_a_reply_whose_prompt_held_it(
    product: Product,
) -> None:
    # Given a reply written with the profile in its prompt
    ids = _alices_memories(product)
    first = product.say(MESSAGE)
    assert ids["Plays the cello."] in first.memories_used

    # When she deletes a memory the profile held
    product.memories.delete(ALICE, ids["Plays the cello."])

    # Then the next turn of that conversation does not hand the old reply back
    built = product.context.build(
        ContextRequest(user_id=ALICE, message="And then?", conversation_id=first.conversation_id)
    )
    assert first.reply not in [turn.content for turn in built.blocks.recent]
    assert "Plays the cello." not in built.rendered.text()


def test_a_room_turn_lists_every_memory_of_the_persona_block(
    product: Product, model: PromptRecorder
) -> None:
    # Given what Warren holds about Alice, and her private chat with him
    for text in ("Plays the cello.", "Lives in Lisbon.", "Is training for a half marathon."):
        row = builders.memory(
            ALICE,
            text,
            product.clock.now(),
            persona="warren",
            subject=subject_for_user(ALICE),
            witnessed=(ALICE,),
        )
        assert product.stores.memories.add_memory(row)
    room = Room(
        room_id=f"room_{uuid.uuid4().hex}",
        kind=RoomKind.PRIVATE,
        created_at=product.clock.now(),
        personas=frozenset({"warren"}),
        members=frozenset({ALICE}),
    )
    opened = product.room_blocks.open(room)
    product.rooms.post(opened.room_id, [NewRoomMessage(f"u:{ALICE}", "How was your day?")])

    # When Warren speaks
    turn = product.rooms.turn(opened.room_id, "warren")

    # Then the block's ids are exactly the memories in what the model was sent
    [prompt] = model.prompts
    assert turn.block is not None
    everything = _every_memory(product.stores, ALICE)
    assert set(turn.block.memory_ids) == _in_prompt(prompt, everything, "How was your day?")
    assert len(turn.block.memory_ids) == 3
