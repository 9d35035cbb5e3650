"""A chat turn, on both stores, with the offline model: stored whole, remembered, corrected,
folded — and nothing kept when the model fails."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.local_jobs import QueuedJobs
from chatmemory.adapters.offline_model import LABEL, OfflineModel
from chatmemory.domain.conversation import Role
from chatmemory.domain.errors import ModelUnavailable
from chatmemory.domain.ids import parse_message_id
from chatmemory.domain.memory import StatedBy, Status
from chatmemory.domain.prompt import RenderedPrompt
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.model import Model, ReplyDelta, ReplyDone, ToolRunner, ToolSpec, Usage
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatRequest, ChatResult, ChatService
from chatmemory.services.context import ContextRequest, ContextService
from chatmemory.services.folding import Folder
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever
from tests.support.fast_moto import quick_transactions

ALICE = "alice"


class Product:
    """The chat path wired as config wires it, with the hashing embedder and a queue."""

    def __init__(self, stores: Stores, clock: ManualClock, model: Model | None = None) -> None:
        embedder = HashingEmbedder()
        index = ExactIndex(stores.recall)
        self.stores = stores
        self.clock = clock
        self.model = model or OfflineModel()
        self.memories = MemoryService(stores, clock, MemoryIndexer(embedder, index))
        self.settings = SettingsService(stores, clock)
        relevance = RelevanceModel(embedder, params_for(embedder.name, threshold=0.25))
        self.context = context = ContextService(
            stores, clock, Retriever(stores, embedder, index, clock, relevance)
        )
        self.jobs = QueuedJobs()
        self.folder = Folder(stores, clock, self.model)
        self.jobs.bind(lambda job: self.folder.fold(job.user_id, job.conversation_id))
        self.chat = ChatService(
            stores, clock, context=context, model=self.model, memories=self.memories, jobs=self.jobs
        )

    def say(self, message: str, **request: object) -> ChatResult:
        events = list(self.chat.turn(ChatRequest(user_id=ALICE, message=message, **request)))  # type: ignore[arg-type]
        assert all(isinstance(e, ReplyDelta) for e in events[:-1])
        result = events[-1]
        assert isinstance(result, ChatResult)
        self.clock.advance(timedelta(seconds=30))
        return result

    def active(self) -> list[str]:
        return [m.text for m in self.stores.memories.iter_memories(ALICE)]


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def test_a_first_message_starts_a_conversation_and_stores_the_exchange(product: Product) -> None:
    result = product.say("hi there, what's new?")

    messages = product.stores.conversations.list_messages(ALICE, result.conversation_id)
    assert [(m.seq, m.role) for m in messages] == [(1, Role.USER), (2, Role.ASSISTANT)]
    assert messages[0].content == "hi there, what's new?" and messages[0].tokens > 0
    assert messages[1].content == result.reply and result.message_id == messages[1].message_id
    assert result.reply.startswith(LABEL) and result.model == "offline"


def test_the_next_message_continues_the_same_conversation(product: Product) -> None:
    first = product.say("hello")

    second = product.say("and again", conversation_id=first.conversation_id)

    assert second.conversation_id == first.conversation_id
    assert [
        m.seq for m in product.stores.conversations.list_messages(ALICE, first.conversation_id)
    ] == [
        1,
        2,
        3,
        4,
    ]


def test_remember_that_is_saved_on_that_turn_and_used_on_the_next(product: Product) -> None:
    saving = product.say("remember that I am a vegetarian who loves spicy food")

    [memory_id] = saving.saved
    memory = product.stores.memories.get_memory(ALICE, memory_id)
    assert memory is not None
    assert memory.text == "Is a vegetarian who loves spicy food."
    assert memory.stated_by is StatedBy.USER and memory.category == "diet"
    assert parse_message_id(memory.source_message_id or "") == (saving.conversation_id, 1)
    assert memory.room_id == saving.conversation_id
    # a new conversation already knows it
    later = product.say("any spicy vegetarian food ideas for tonight?")
    assert later.memories_used == [memory_id]
    assert "Is a vegetarian who loves spicy food" in later.reply
    used = product.stores.memories.get_memory(ALICE, memory_id)
    assert used is not None and used.recall_count == 1
    assert product.stores.conversations.list_messages(ALICE, later.conversation_id)[
        1
    ].memories_used == (memory_id,)


def test_an_in_chat_correction_supersedes_the_memory_on_that_turn(product: Product) -> None:
    pune = product.memories.create(
        ALICE, NewMemory(text="Lives in Pune.", category="location", key="home_city")
    ).memory
    conversation = product.say("hello").conversation_id

    corrected = product.say("no, I moved to Bengaluru", conversation_id=conversation)

    [new_id] = corrected.saved
    assert product.active() == ["Moved to Bengaluru."]
    old = product.stores.memories.list_memories(ALICE, MemoryQuery(status=Status.SUPERSEDED)).items
    assert [(m.memory_id, m.closed_by) for m in old] == [(pune.memory_id, new_id)]


def test_a_temporary_chat_reads_and_writes_no_memory_and_expires(product: Product) -> None:
    product.memories.create(ALICE, NewMemory(text="Is a vegetarian who loves spicy food."))

    result = product.say(
        "remember that I am allergic to peanuts; any spicy vegetarian ideas?", temporary=True
    )

    assert result.saved == [] and result.memories_used == []
    assert product.active() == ["Is a vegetarian who loves spicy food."]
    conversation = product.stores.conversations.get_conversation(ALICE, result.conversation_id)
    assert conversation is not None and conversation.temporary
    product.clock.advance(timedelta(hours=25))
    assert product.stores.conversations.list_messages(ALICE, result.conversation_id) == []


def test_memory_switched_off_saves_nothing(product: Product) -> None:
    product.settings.update(ALICE, enabled=False)

    result = product.say("remember that I am vegetarian")

    assert result.saved == [] and product.active() == []


def test_a_secret_the_model_tries_to_save_is_refused(product: Product) -> None:
    result = product.say("remember that my card is 4111 1111 1111 1111")

    assert result.saved == [] and product.active() == []
    assert "secret" in result.reply


class FailingModel(OfflineModel):
    """Answers half a reply, asks to save a memory, then breaks."""

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        yield ReplyDelta("Sure, I will rem")
        from chatmemory.ports.model import ToolCall  # noqa: PLC0415

        run_tool(ToolCall("save_memory", {"text": "Is vegetarian.", "category": "diet"}))
        raise ModelUnavailable("overloaded")


def test_when_the_model_fails_nothing_of_the_turn_is_kept(
    stores: Stores, clock: ManualClock
) -> None:
    product = Product(stores, clock, FailingModel())

    with pytest.raises(ModelUnavailable):
        list(product.chat.turn(ChatRequest(user_id=ALICE, message="remember that I am vegetarian")))

    assert stores.conversations.list_conversations(ALICE) == []
    assert product.active() == []


def test_a_long_conversation_is_folded_and_stays_within_the_prompt_budget(product: Product) -> None:
    # Given 100 scripted turns with facts early on
    conversation = product.say(
        "I just moved to Bengaluru and I'm preparing for GATE in February."
    ).conversation_id
    prompts: dict[int, int] = {}
    # (moto's rollback copy of the whole table per transaction is skipped where every
    # condition holds: 200 messages made that quadratic)
    with quick_transactions():
        for turn in range(2, 101):
            message = (
                f"Turn {turn}: let's keep planning my study schedule for topic {turn}, in detail."
            )
            if turn in (10, 60, 100):  # the prompt this turn sends
                request = ContextRequest(
                    user_id=ALICE, message=message, conversation_id=conversation
                )
                prompts[turn] = product.context.build(request).rendered.tokens
            product.say(message, conversation_id=conversation)
            product.jobs.run_pending()  # folds run off the request path; drain them here

    state = product.stores.conversations.get_conversation(ALICE, conversation)
    assert state is not None
    # Then the summary was folded (not truncated) and rebuilt from raw messages on fold 10
    assert state.fold_count >= 20
    assert "Bengaluru" in state.summary and "GATE" in state.summary  # the earliest facts survive
    unsummarized = product.stores.conversations.list_messages(
        ALICE, conversation, after_seq=state.summary_upto_seq
    )
    assert len(unsummarized) < 24  # the verbatim window stays under 12 turns
    assert (
        len(product.stores.conversations.list_messages(ALICE, conversation)) == 200
    )  # raw messages are kept
    print(f"prompt tokens at turns 10/60/100: {prompts}")  # shown with -s
    assert prompts[100] <= 5200
    assert prompts[100] < prompts[60] * 1.2  # flat, not growing with the conversation


class RefusingModel(OfflineModel):
    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        yield ReplyDelta("I can't help with that.")
        yield ReplyDone(text="I can't help with that.", usage=Usage(), stop_reason="refusal")


def test_a_refused_turn_is_answered_but_not_kept(stores: Stores, clock: ManualClock) -> None:
    product = Product(stores, clock, RefusingModel())

    result = product.say("remember that I am vegetarian")

    assert result.reply == "I can't help with that." and result.message_id == ""
    assert stores.conversations.list_conversations(ALICE) == [] and product.active() == []
