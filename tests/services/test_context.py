"""What a turn sends to the model, on both stores: the right memories, and never a deleted one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.opensearch_index import OpenSearchIndex
from chatmemory.domain.conversation import Role
from chatmemory.domain.errors import ConversationNotFound
from chatmemory.domain.ids import message_id_for
from chatmemory.domain.profile import Profile
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.recall_source import MemoryDigest
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorHit, VectorIndex
from chatmemory.services.context import ContextRequest, ContextService
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever
from tests.support import builders
from tests.support.opensearch_fake import FakeCollection

ALICE, BOB = "alice", "bob"


class Wiring:
    def __init__(
        self, stores: Stores, clock: ManualClock, index: VectorIndex | None = None
    ) -> None:
        embedder = HashingEmbedder()
        self.stores = stores
        self.index = index or ExactIndex(stores.recall)
        self.memories = MemoryService(stores, clock, MemoryIndexer(embedder, self.index))
        self.settings = SettingsService(stores, clock)
        # Hashing vectors know spelling only: these tests share words on purpose.
        relevance = RelevanceModel(embedder, params_for(embedder.name, threshold=0.25))
        self.context = ContextService(
            stores, clock, Retriever(stores, embedder, self.index, clock, relevance)
        )

    def remember(self, user: str, text: str, **fields: object) -> str:
        return self.memories.create(user, NewMemory(text=text, **fields)).memory.memory_id  # type: ignore[arg-type]

    def recalled(self, user: str, message: str, **request: object) -> list[str]:
        built = self.context.build(ContextRequest(user_id=user, message=message, **request))  # type: ignore[arg-type]
        return [line.text for line in built.blocks.memories]


def _index(kind: str, stores: Stores, clock: ManualClock) -> VectorIndex:
    if kind == "exact":
        return ExactIndex(stores.recall)
    opensearch = OpenSearchIndex(
        client=FakeCollection(refresh_on_write=True).client(),
        index_name="memories",
        dimensions=384,
        clock=clock,
    )
    opensearch.ensure_index()
    return opensearch


@pytest.fixture
def wiring(stores: Stores, clock: ManualClock) -> Wiring:
    return Wiring(stores, clock)


def test_a_relevant_memory_is_recalled_with_its_date(wiring: Wiring) -> None:
    wiring.remember(ALICE, "Is a vegetarian who loves spicy food.")
    wiring.remember(ALICE, "Plays chess on weekends.")

    built = wiring.context.build(
        ContextRequest(user_id=ALICE, message="Any spicy vegetarian food ideas?")
    )

    assert [line.text for line in built.blocks.memories] == [
        "Is a vegetarian who loves spicy food."
    ]
    assert built.blocks.memories[0].date == "2026-11-30"
    assert built.memories_used == [built.blocks.memories[0].memory_id]
    assert "(last mentioned 2026-11 · " in built.rendered.text()  # then its shelf life
    assert built.rendered.tokens > 0


def test_a_memory_saved_now_is_used_on_the_very_next_request(wiring: Wiring) -> None:
    assert wiring.recalled(ALICE, "spicy vegetarian food") == []
    wiring.remember(ALICE, "Is a vegetarian who loves spicy food.")

    assert wiring.recalled(ALICE, "spicy vegetarian food") == [
        "Is a vegetarian who loves spicy food."
    ]


@pytest.mark.parametrize("index_kind", ["exact", "opensearch"])
def test_deleted_superseded_and_expired_memories_never_reach_the_context(
    stores: Stores, clock: ManualClock, index_kind: str
) -> None:
    wiring = Wiring(stores, clock, index=_index(index_kind, stores, clock))
    deleted = wiring.remember(ALICE, "Owns a red bicycle called Rocket.")
    pune = wiring.remember(ALICE, "Lives in Pune near the old fort.")
    wiring.memories.correct(ALICE, pune, text="Lives in Bengaluru near the lake.")
    wiring.remember(
        ALICE,
        "Is visiting Lisbon this week for a conference.",
        valid_until=clock.now() + timedelta(days=2),
    )
    wiring.memories.delete(ALICE, deleted)
    clock.advance(timedelta(days=3))

    for probe in (
        "red bicycle Rocket",
        "Pune old fort",
        "Lisbon conference this week",
        "lives near",
    ):
        texts = wiring.recalled(ALICE, probe)
        assert "Owns a red bicycle called Rocket." not in texts
        assert "Lives in Pune near the old fort." not in texts
        assert "Is visiting Lisbon this week for a conference." not in texts
    assert wiring.recalled(ALICE, "lives near the lake in Bengaluru") == [
        "Lives in Bengaluru near the lake."
    ]


def test_another_users_memories_are_never_recalled(wiring: Wiring) -> None:
    wiring.remember(ALICE, "Is a vegetarian who loves spicy food.")

    assert wiring.recalled(BOB, "Is a vegetarian who loves spicy food.") == []


def test_memory_switched_off_reads_nothing(wiring: Wiring, clock: ManualClock) -> None:
    wiring.remember(ALICE, "Is a vegetarian who loves spicy food.")
    wiring.settings.update(ALICE, note="Call me Al.")
    wiring.stores.user_state.put_profile(
        Profile(
            user_id=ALICE, text="Vegetarian.", token_count=2, built_from=(), rebuilt_at=clock.now()
        )
    )
    wiring.settings.update(ALICE, enabled=False)

    built = wiring.context.build(ContextRequest(user_id=ALICE, message="spicy vegetarian food"))

    assert (built.blocks.memories, built.blocks.note, built.blocks.profile) == ((), "", "")
    assert not built.memory_on


def test_a_temporary_chat_reads_nothing(wiring: Wiring, clock: ManualClock) -> None:
    wiring.remember(ALICE, "Is a vegetarian who loves spicy food.")
    wiring.settings.update(ALICE, note="Call me Al.")
    wiring.stores.user_state.put_profile(
        Profile(
            user_id=ALICE, text="Vegetarian.", token_count=2, built_from=(), rebuilt_at=clock.now()
        )
    )

    built = wiring.context.build(
        ContextRequest(user_id=ALICE, message="spicy vegetarian food", temporary=True)
    )

    assert (built.blocks.memories, built.blocks.note, built.blocks.profile) == ((), "", "")


def test_profile_note_summary_and_recent_turns_are_in_the_blocks(
    wiring: Wiring, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    wiring.stores.conversations.create_conversation(conversation)
    for content, role in (
        ("first question", Role.USER),
        ("first answer", Role.ASSISTANT),
        ("second question", Role.USER),
        ("second answer", Role.ASSISTANT),
    ):
        wiring.stores.conversations.append_message(
            ALICE,
            conversation.conversation_id,
            role=role,
            content=content,
            tokens=2,
            at=clock.now(),
        )
    wiring.stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="They talked about tea.",
        upto_seq=2,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )
    wiring.stores.user_state.put_profile(
        Profile(
            user_id=ALICE, text="Vegetarian.", token_count=2, built_from=(), rebuilt_at=clock.now()
        )
    )
    wiring.settings.update(ALICE, note="Call me Al.")

    built = wiring.context.build(
        ContextRequest(user_id=ALICE, message="third", conversation_id=conversation.conversation_id)
    )

    assert built.blocks.summary == "They talked about tea."
    assert [t.content for t in built.blocks.recent] == ["second question", "second answer"]
    assert (built.blocks.profile, built.blocks.note) == ("Vegetarian.", "Call me Al.")


def test_a_profile_built_from_a_deleted_memory_is_withheld_until_rebuilt(
    wiring: Wiring, clock: ManualClock
) -> None:
    secret = wiring.remember(ALICE, "Is seeing a therapist on Tuesdays.")
    wiring.stores.user_state.put_profile(
        Profile(
            user_id=ALICE,
            text="Sees a therapist on Tuesdays.",
            token_count=6,
            built_from=(secret,),
            rebuilt_at=clock.now(),
        )
    )

    wiring.memories.delete(ALICE, secret)

    built = wiring.context.build(
        ContextRequest(user_id=ALICE, message="what should I do on Tuesday?")
    )
    assert "therapist" not in built.rendered.text()


def test_a_summary_that_folded_a_deleted_memory_is_withheld_until_rebuilt(
    wiring: Wiring, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    wiring.stores.conversations.create_conversation(conversation)
    said = wiring.stores.conversations.append_message(
        ALICE,
        conversation.conversation_id,
        role=Role.USER,
        content="remember I am seeing a therapist",
        tokens=6,
        at=clock.now(),
    )
    for turn in range(3):
        wiring.stores.conversations.append_message(
            ALICE,
            conversation.conversation_id,
            role=Role.USER,
            content=f"turn {turn}",
            tokens=2,
            at=clock.now(),
        )
    wiring.stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice sees a therapist.",
        upto_seq=2,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )
    memory_id = wiring.remember(
        ALICE,
        "Is seeing a therapist.",
        source_message_id=message_id_for(conversation.conversation_id, said.seq),
        room_id=conversation.conversation_id,
    )

    wiring.memories.delete(ALICE, memory_id)

    built = wiring.context.build(
        ContextRequest(user_id=ALICE, message="hi", conversation_id=conversation.conversation_id)
    )
    assert built.blocks.summary == ""


def test_a_failing_index_degrades_the_turn_instead_of_breaking_it(
    stores: Stores, clock: ManualClock
) -> None:
    class BrokenIndex(ExactIndex):
        def search(
            self,
            user_id: str,
            query: Vectors,
            *,
            k: int,
            persona: str | None = None,
            visible: Sequence[MemoryDigest] | None = None,
        ) -> list[VectorHit]:
            raise ConnectionError("index down")

    wiring = Wiring(stores, clock, index=BrokenIndex(stores))
    wiring.remember(ALICE, "Is a vegetarian who loves spicy food.")

    built = wiring.context.build(ContextRequest(user_id=ALICE, message="spicy vegetarian food"))

    assert built.degraded and built.blocks.memories == ()
    assert built.rendered.messages[-1].content == "spicy vegetarian food"


def test_someone_elses_or_an_unknown_conversation_is_not_found(
    wiring: Wiring, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    wiring.stores.conversations.create_conversation(conversation)

    for conversation_id in (conversation.conversation_id, "conv_" + "0" * 32, "not-an-id"):
        with pytest.raises(ConversationNotFound):
            wiring.context.build(
                ContextRequest(user_id=BOB, message="hi", conversation_id=conversation_id)
            )


def test_a_lagging_index_neither_hides_new_memories_nor_revives_deleted_ones(
    stores: Stores, clock: ManualClock
) -> None:
    # Given OpenSearch that only shows what existed at its last refresh (serverless: 10-60 s)
    collection = FakeCollection(refresh_on_write=False)
    index = OpenSearchIndex(
        client=collection.client(), index_name="memories", dimensions=384, clock=clock
    )
    index.ensure_index()
    wiring = Wiring(stores, clock, index=index)
    old = wiring.remember(ALICE, "Is a vegetarian who loves spicy food.")
    collection.refresh()

    # When a memory is saved and another deleted before the next refresh
    wiring.remember(ALICE, "Cooks spicy vegetarian curry every Friday.")
    wiring.memories.delete(ALICE, old)

    # Then the next request already sees the new one and never the deleted one
    recalled = wiring.recalled(ALICE, "spicy vegetarian food")
    assert recalled == ["Cooks spicy vegetarian curry every Friday."]
    # and after a refresh that may still hold a stale copy, the store's word stands
    collection.refresh()
    assert "Is a vegetarian who loves spicy food." not in wiring.recalled(
        ALICE, "spicy vegetarian food"
    )
