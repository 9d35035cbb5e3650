"""A secret said in a message is masked in every stored copy at write time, on both
stores, and the rest of the sentence is kept: a chat's messages (the reply too), an
observed turn, a room's transcript — and so the evidence recall hands back. The turn in
flight still answers from the words as they were said.

Regression: a message with "4111 1111 1111 1111" made no memory, but the stored message
kept the number and `POST /v1/recall {"expand": 2}` returned it as a memory's evidence.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.domain.rooms import NewRoomMessage, RoomKind
from chatmemory.domain.secrets import WITHHELD
from chatmemory.ports.stores import Stores
from chatmemory.services.after_turn import AfterTurn
from chatmemory.services.context import ContextRequest
from chatmemory.services.idle import IdleDelays
from chatmemory.services.observe import ObserveRequest, ObserveService
from chatmemory.services.recall import RecallRequest, RecallService
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.room_service import NewRoom
from tests.support.product import ALICE, IDLE, Product

CARD = "4111 1111 1111 1111"


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def _stored_words(product: Product, conversation_id: str) -> list[str]:
    return [m.content for m in product.stores.conversations.list_messages(ALICE, conversation_id)]


def test_a_chat_message_is_stored_with_its_card_number_masked(product: Product) -> None:
    # When she says where she lives with her card number in the same message
    turn = product.say(f"I live in Pune. My card is {CARD}")

    # Then the stored message keeps the sentence and not the number; the reply that
    # echoed it is stored masked too
    said, reply = _stored_words(product, turn.conversation_id)
    assert said == f"I live in Pune. My card is {WITHHELD}"
    assert CARD in turn.reply  # the turn in flight answered from what was said
    assert CARD not in reply and WITHHELD in reply
    # and the next turn's recent messages carry the mask
    built = product.context.build(
        ContextRequest(user_id=ALICE, message="Thanks", conversation_id=turn.conversation_id)
    )
    assert CARD not in built.rendered.text()


def test_recall_evidence_never_hands_a_card_number_back(product: Product) -> None:
    # Given a fact learned from a message that also held a card number
    product.say(f"I live in Pune. My card is {CARD}")
    product.go_quiet()
    assert product.active() == ["Lives in Pune."]

    # When recall expands its hits with their evidence
    embedder = HashingEmbedder()
    recall = RecallService(
        product.stores,
        embedder,
        product.clock,
        RelevanceModel(embedder, params_for(embedder.name)),
        floor=0.05,
        related_floor=0.01,
    ).recall(RecallRequest(user_id=ALICE, query="where do I live in Pune?", expand=2))

    # Then the evidence quotes what was said, with the number masked
    [hit] = recall.hits
    [evidence] = hit.evidence
    assert evidence.text == f"I live in Pune. My card is {WITHHELD}"


def test_an_observed_turn_is_stored_masked(product: Product, stores: Stores) -> None:
    # When an agent reports a turn where the user gave a password and the reply repeated it
    service = ObserveService(
        stores, product.clock, AfterTurn(stores, product.jobs, IdleDelays(stores, warm=IDLE))
    )
    observed = service.observe(
        ObserveRequest(
            user_id=ALICE,
            turn_id="turn-1",
            user_message="My wifi password is sunflower123, I moved to Lyon.",
            assistant_message="Got it: sunflower123. Welcome to Lyon!",
        )
    )

    # Then both messages are kept without it
    said, reply = _stored_words(product, observed.conversation_id)
    assert said == f"My wifi password is {WITHHELD}, I moved to Lyon."
    assert reply == f"Got it: {WITHHELD}. Welcome to Lyon!"


def test_a_room_line_is_stored_masked(product: Product, stores: Stores) -> None:
    # When a line said in a room holds a door code
    room = product.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=["warren"], members=["dan"]))
    product.rooms.post(
        room.room_id, [NewRoomMessage("u:dan", "The door code is 4821, see you at the flat.")]
    )
    product.clock.advance(timedelta(seconds=5))

    # Then the transcript keeps the sentence and not the code
    [line] = stores.rooms.list_room_messages(room.room_id)
    assert line.text == f"The door code is {WITHHELD}, see you at the flat."
