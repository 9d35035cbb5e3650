"""Two-stage recall on both stores: 15 relevant + 3 unasked, the first N expanded, and only
what the user may see — never a deleted, archived, muted or another user's memory."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.domain import fading
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.ids import message_id_for
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.recall import Recall, RecallRequest, RecallService
from chatmemory.services.relevance import RelevanceModel, params_for
from tests.support import builders

ALICE, BOB = "alice", "bob"
QUERY = "salmon dinner tonight"


class Wiring:
    def __init__(self, stores: Stores, clock: ManualClock) -> None:
        embedder = HashingEmbedder()
        self.stores = stores
        self.clock = clock
        self.indexer = MemoryIndexer(embedder, ExactIndex(stores.recall))
        self.memories = MemoryService(stores, clock, self.indexer)
        self.settings = SettingsService(stores, clock)
        # Hashing vectors know spelling only: these tests share words on purpose. The
        # floors are set so "shares the query's words" is relevant and "shares one" related.
        relevance = RelevanceModel(embedder, params_for(embedder.name))
        self.service = RecallService(
            stores, embedder, clock, relevance, floor=0.45, related_floor=0.05
        )

    def remember(self, user: str, text: str, **fields: object) -> str:
        return self.memories.create(user, NewMemory(text=text, **fields)).memory.memory_id  # type: ignore[arg-type]

    def recall(self, user: str = ALICE, query: str = QUERY, **request: object) -> Recall:
        return self.service.recall(RecallRequest(user_id=user, query=query, **request))  # type: ignore[arg-type]

    def said(self, user: str, text: str) -> str:
        """A user message in a new conversation; its message id."""
        conversation = builders.conversation(user, self.clock.now())
        [message] = self.stores.conversations.append_messages(
            user,
            conversation.conversation_id,
            [NewMessage(Role.USER, text, 10)],
            self.clock.now(),
            create=conversation,
        )
        return message.message_id


@pytest.fixture
def wiring(stores: Stores, clock: ManualClock) -> Wiring:
    return Wiring(stores, clock)


def texts(recall: Recall) -> list[str]:
    return [hit.memory.text for hit in recall.hits]


def seed_many(wiring: Wiring, user: str = ALICE) -> None:
    """20 close matches in diet and health, and one weaker one in each of three others."""
    for n in range(10):
        wiring.remember(user, f"Cooks salmon dinner tonight, recipe {n}.", category="diet")
        wiring.remember(user, f"Salmon dinner tonight is heart healthy {n}.", category="health")
    wiring.remember(user, "Walks the dog along the salmon river.", category="pets")
    wiring.remember(user, "Flies to Seattle for the salmon festival.", category="travel")
    wiring.remember(user, "Presents the quarterly numbers at dinner.", category="work")
    wiring.remember(user, "Pays rent on the first of the month.", category="finance")


def test_fifteen_relevant_then_three_unasked_from_other_categories(wiring: Wiring) -> None:
    # Given more close matches than fit, in two categories, and weaker ones elsewhere
    seed_many(wiring)

    # When alice recalls with the default k
    found = wiring.recall()

    # Then 15 relevant come first, then 3 marked unasked, from categories none of the 15 is in
    relevant = [hit for hit in found.hits if not hit.unasked]
    unasked = [hit for hit in found.hits if hit.unasked]
    assert len(relevant) == 15 and len(unasked) == 3
    assert [hit.rank for hit in found.hits] == list(range(1, 19))
    assert all(hit.rank > 15 for hit in unasked)
    assert {hit.memory.category for hit in relevant} == {"diet", "health"}
    assert {hit.memory.category for hit in unasked} == {"pets", "travel", "work"}
    # And the 5 close matches left out are counted, not shown
    assert found.hidden == 5
    assert all(hit.label == hit.memory.text.removesuffix(".") for hit in found.hits)


def test_expand_gives_reasoning_and_evidence_on_exactly_the_first_n(wiring: Wiring) -> None:
    seed_many(wiring)

    found = wiring.recall(expand=4)

    assert [hit.reasoning is not None for hit in found.hits] == [True] * 4 + [False] * 14
    assert [hit.evidence is not None for hit in found.hits] == [True] * 4 + [False] * 14
    assert found.hits[0].reasoning == (
        f"You added it yourself on {wiring.clock.now().date().isoformat()}. "
        f"Kept as a fact under {found.hits[0].memory.category}."
    )


def test_the_evidence_is_the_users_original_sentence(wiring: Wiring) -> None:
    # Given a memory written from a chat message
    sentence = "Honestly I could eat salmon for dinner every night, tonight included!"
    source = wiring.said(ALICE, sentence)
    wiring.remember(
        ALICE,
        "Loves salmon dinner tonight and every night.",
        category="diet",
        source_message_id=source,
    )

    # When it is recalled and expanded
    [hit] = wiring.recall(expand=1).hits

    # Then its evidence is what she said, as she said it, and the reasoning says where
    assert hit.evidence is not None
    assert [(e.message_id, e.role, e.text) for e in hit.evidence] == [(source, Role.USER, sentence)]
    assert hit.reasoning is not None and hit.reasoning.startswith("You said it in a chat on ")


def test_evidence_from_a_room_keeps_only_the_lines_the_user_said(wiring: Wiring) -> None:
    # Given a room where alice and bob spoke, and a memory of alice's resting on both lines
    now = wiring.clock.now()
    room = Room(room_id="room_7", kind=RoomKind.GROUP, created_at=now, members=frozenset({ALICE}))
    wiring.stores.rooms.create_room(room)
    mine, theirs = wiring.stores.rooms.append_room_messages(
        room.room_id,
        [
            NewRoomMessage("u:alice", "Salmon for dinner tonight, my treat."),
            NewRoomMessage("u:bob", "Alice always picks salmon for dinner."),
        ],
        now,
    )
    memory = wiring.indexer.prepare(
        builders.memory(
            ALICE,
            "Treats friends to salmon dinner tonight.",
            now,
            room_id=room.room_id,
            source_message_id=mine.message_id,
            evidence=(mine.message_id, theirs.message_id),
            category="relationships",
        )
    )
    wiring.stores.memories.add_memory(memory)

    # When it is recalled and expanded
    [hit] = wiring.recall(expand=1).hits

    # Then only her own line is evidence
    assert hit.evidence is not None
    assert [e.text for e in hit.evidence] == ["Salmon for dinner tonight, my treat."]
    assert hit.reasoning is not None and "in a room" in hit.reasoning


def test_a_reply_that_used_a_deleted_memory_and_a_missing_message_are_left_out(
    wiring: Wiring,
) -> None:
    # Given a conversation whose reply used a memory deleted since
    deleted = wiring.remember(ALICE, "Keeps a diary of dreams.")
    conversation = builders.conversation(ALICE, wiring.clock.now())
    question, reply = wiring.stores.conversations.append_messages(
        ALICE,
        conversation.conversation_id,
        [
            NewMessage(Role.USER, "Salmon dinner tonight?", 5),
            NewMessage(Role.ASSISTANT, "Yes, and your dream diary says so too.", 8, (deleted,)),
        ],
        wiring.clock.now(),
        create=conversation,
    )
    wiring.memories.delete(ALICE, deleted)
    gone = message_id_for(conversation.conversation_id, 99)
    memory = builders.memory(
        ALICE,
        "Wants salmon dinner tonight.",
        wiring.clock.now(),
        source_message_id=question.message_id,
        evidence=(question.message_id, reply.message_id, gone),
    )
    wiring.stores.memories.add_memory(wiring.indexer.prepare(memory))

    # When it is expanded
    [hit] = wiring.recall(expand=1).hits

    # Then the question is there; the withdrawn reply and the missing message are not
    assert hit.evidence is not None
    assert [e.message_id for e in hit.evidence] == [question.message_id]


def test_of_two_near_matches_the_fresher_belief_comes_first(wiring: Wiring) -> None:
    # Given a plan heard ten days ago (plans last two weeks), and a fresh belief whose words
    # match the query a little less closely
    older = wiring.remember(ALICE, "Cooks salmon dinner tonight.", category="plans")
    wiring.clock.advance(timedelta(days=10))
    fresh = wiring.remember(ALICE, "Cooks the salmon dinner tonight.", category="diet")

    # When alice recalls
    found = wiring.recall()

    # Then retention orders them, as on the read path, and the score says so
    assert [hit.memory.memory_id for hit in found.hits] == [fresh, older]
    assert found.hits[0].score > found.hits[1].score


def test_a_deleted_memory_never_appears(wiring: Wiring) -> None:
    kept = wiring.remember(ALICE, "Cooks salmon dinner tonight.")
    deleted = wiring.remember(ALICE, "Grills salmon dinner tonight.")
    wiring.memories.delete(ALICE, deleted)

    assert [hit.memory.memory_id for hit in wiring.recall().hits] == [kept]


def test_another_users_memories_never_appear(wiring: Wiring) -> None:
    wiring.remember(BOB, "Cooks salmon dinner tonight.", category="diet")
    wiring.remember(BOB, "Walks the dog along the salmon river.", category="pets")

    assert wiring.recall(ALICE).hits == ()
    assert len(wiring.recall(BOB).hits) == 2


def test_an_archived_memory_never_appears(wiring: Wiring) -> None:
    # Given one memory set aside by the cap, and one that faded (a mood lasts days)
    capped = wiring.remember(ALICE, "Cooks salmon dinner tonight.")
    wiring.remember(ALICE, "Feels like a salmon dinner tonight.", category="mood")
    row = wiring.stores.memories.get_memory(ALICE, capped)
    assert row is not None
    wiring.stores.memories.set_fading(ALICE, [fading.set_aside(row, wiring.clock.now())])
    wiring.clock.advance(timedelta(days=10))
    kept = wiring.remember(ALICE, "Grills salmon dinner tonight.")

    # When alice recalls
    found = wiring.recall()

    # Then only the one in use comes back, and the archived ones are not counted as hidden
    assert [hit.memory.memory_id for hit in found.hits] == [kept]
    assert found.hidden == 0


def test_with_memory_off_or_the_persona_muted_nothing_comes_back(wiring: Wiring) -> None:
    wiring.remember(ALICE, "Cooks salmon dinner tonight.")
    wiring.remember(ALICE, "Grills salmon dinner tonight.", persona="nolan")

    wiring.settings.update(ALICE, muted_personas=frozenset({"nolan"}))
    assert len(wiring.recall().hits) == 1
    assert wiring.recall(persona="nolan").hits == ()

    wiring.settings.update(ALICE, enabled=False)
    off = wiring.recall()
    assert off.hits == () and off.hidden == 0 and not off.memory_on


def test_the_persona_filters_like_the_read_path(wiring: Wiring) -> None:
    wiring.remember(ALICE, "Cooks salmon dinner tonight.")
    wiring.remember(ALICE, "Grills salmon dinner tonight.", persona="nolan")

    assert texts(wiring.recall()) == ["Cooks salmon dinner tonight."]
    assert texts(wiring.recall(persona="nolan")) == ["Grills salmon dinner tonight."]


def test_a_recall_records_no_use(wiring: Wiring) -> None:
    memory_id = wiring.remember(ALICE, "Cooks salmon dinner tonight.")

    wiring.recall(expand=1)

    row = wiring.stores.memories.get_memory(ALICE, memory_id)
    assert row is not None and row.recall_count == 0 and row.last_used_at is None


def test_an_explicit_query_is_not_gated_by_the_personal_context_gate(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a relevance model whose gate refuses every message
    wiring = Wiring(stores, clock)
    embedder = HashingEmbedder()
    params = params_for(embedder.name)
    closed = RelevanceModel(
        embedder,
        type(params)(threshold=params.threshold, gate_floor=99.0, own_uses_weight=0.0),
    )
    service = RecallService(stores, embedder, clock, closed, floor=0.45, related_floor=0.05)
    wiring.remember(ALICE, "Cooks salmon dinner tonight.")

    # When alice asks
    found = service.recall(RecallRequest(user_id=ALICE, query=QUERY))

    # Then she is answered anyway: she asked
    assert texts(found) == ["Cooks salmon dinner tonight."]


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"query": " "}, "query"),
        ({"k": 0}, "k"),
        ({"k": 51}, "k"),
        ({"k": 5, "expand": 6}, "expand"),
        ({"expand": -1}, "expand"),
        ({"persona": "Not A Slug"}, "persona"),
    ],
)
def test_bad_requests_name_the_field(
    wiring: Wiring, request_fields: dict[str, object], field: str
) -> None:
    fields: dict[str, object] = {"user_id": ALICE, "query": QUERY, **request_fields}
    with pytest.raises(InvalidField) as raised:
        wiring.service.recall(RecallRequest(**fields))  # type: ignore[arg-type]

    assert raised.value.field == field
