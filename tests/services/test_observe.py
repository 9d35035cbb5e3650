"""A turn reported after it happened, on both stores with the offline model: stored as a
chat turn is, learned from once the conversation is quiet, stored once however often it is
sent, and never read with memory off, the persona muted or in a temporary chat."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.cadence import COLD_DELAY
from chatmemory.domain.conversation import Role
from chatmemory.domain.errors import ConcurrentChange, ConversationNotFound, InvalidField
from chatmemory.ports.stores import Stores
from chatmemory.services.after_turn import AfterTurn
from chatmemory.services.idle import IdleDelays
from chatmemory.services.observe import Observed, ObserveRequest, ObserveService
from tests.support.product import ALICE, IDLE, Product

BOB = "bob"
SAID = "I'm vegetarian and I live in Pune."
REPLY = "Noted! Pune has great vegetarian food."


class Observing(Product):
    """The product with observed turns, followed up exactly as its chat turns are."""

    def __init__(self, stores: Stores, clock: ManualClock) -> None:
        super().__init__(stores, clock)
        idle = IdleDelays(stores, warm=IDLE, cold=COLD_DELAY)
        self.observer = ObserveService(stores, clock, AfterTurn(stores, self.jobs, idle))

    def observe(self, turn_id: str = "t-1", user: str = SAID, **fields: object) -> Observed:
        request = ObserveRequest(
            user_id=str(fields.pop("user_id", ALICE)),
            turn_id=turn_id,
            user_message=user,
            assistant_message=str(fields.pop("assistant", REPLY)),
            **fields,  # type: ignore[arg-type]
        )
        return self.observer.observe(request)


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Observing:
    return Observing(stores, clock)


def test_an_observed_turn_is_learned_once_the_conversation_is_quiet(product: Observing) -> None:
    # Given a turn an agent ran with its own model, reported after it happened
    observed = product.observe()
    assert observed.stored and observed.learns

    # When the conversation goes quiet
    product.go_quiet()

    # Then memory learned from the user's words, linked to the message they came from
    assert product.active() == ["Is vegetarian.", "Lives in Pune."]
    messages = product.stores.conversations.list_messages(ALICE, observed.conversation_id)
    assert [(m.role, m.content) for m in messages] == [(Role.USER, SAID), (Role.ASSISTANT, REPLY)]
    assert observed.message_ids == [m.message_id for m in messages]
    sources = {m.source_message_id for m in product.stores.memories.iter_memories(ALICE)}
    assert sources == {observed.message_ids[0]}


def test_a_retried_turn_stores_nothing_twice(product: Observing) -> None:
    first = product.observe()

    again = product.observe()

    assert not again.stored
    assert (again.conversation_id, again.message_ids) == (first.conversation_id, first.message_ids)
    assert len(product.stores.conversations.list_conversations(ALICE)) == 1
    assert len(product.stores.conversations.list_messages(ALICE, first.conversation_id)) == 2


def test_a_turn_id_reused_for_another_turn_is_refused_and_writes_nothing(
    product: Observing,
) -> None:
    first = product.observe()

    with pytest.raises(ConcurrentChange, match="turn_id was already used"):
        product.observe(user="I moved to Bengaluru.")

    assert len(product.stores.conversations.list_messages(ALICE, first.conversation_id)) == 2


def test_turns_continue_the_conversation_they_name(product: Observing) -> None:
    first = product.observe("t-1", "I'm vegetarian.")

    second = product.observe("t-2", "I work as a teacher.", conversation_id=first.conversation_id)

    assert second.conversation_id == first.conversation_id
    assert [mid.rsplit("_", 1)[1] for mid in second.message_ids] == ["3", "4"]
    product.go_quiet()
    assert product.active() == ["Is vegetarian.", "Works as a teacher."]


def test_a_turn_with_memory_off_is_stored_and_never_learned(product: Observing) -> None:
    # Given memory switched off while the turn happened
    product.settings.update(ALICE, enabled=False)
    observed = product.observe()
    assert observed.stored and not observed.learns

    # When memory is back on and every timer and the sweep ran
    product.settings.update(ALICE, enabled=True)
    product.go_quiet()
    product.idle.sweep(now_or_never=True)

    # Then nothing said while it was off was read
    assert product.active() == []
    assert len(product.stores.conversations.list_messages(ALICE, observed.conversation_id)) == 2


def test_a_turn_with_a_muted_persona_is_never_learned(product: Observing) -> None:
    product.settings.update(ALICE, muted_personas=frozenset({"nolan"}))

    observed = product.observe(persona="nolan")
    product.settings.update(ALICE, muted_personas=frozenset())
    product.go_quiet()
    product.idle.sweep(now_or_never=True)

    assert not observed.learns
    assert product.active() == []


def test_a_temporary_turn_is_never_learned_and_expires(product: Observing) -> None:
    observed = product.observe(temporary=True)
    product.go_quiet()
    product.idle.sweep(now_or_never=True)

    assert not observed.learns and product.active() == []
    product.clock.advance(timedelta(hours=25))
    assert product.stores.conversations.get_conversation(ALICE, observed.conversation_id) is None


def test_a_temporary_turn_cannot_join_a_kept_conversation(product: Observing) -> None:
    kept = product.observe("t-1")

    with pytest.raises(InvalidField, match="temporary"):
        product.observe("t-2", conversation_id=kept.conversation_id, temporary=True)


def test_another_users_conversation_is_not_found(product: Observing) -> None:
    bobs = product.observe(user_id=BOB)

    with pytest.raises(ConversationNotFound):
        product.observe(conversation_id=bobs.conversation_id)

    assert product.stores.conversations.list_conversations(ALICE) == []


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)  # refused before any store
@pytest.mark.parametrize(
    ("turn_id", "user", "field"),
    [
        ("", SAID, "turn_id"),
        ("t 1", SAID, "turn_id"),
        ("t-1", "", "user"),
        ("t-1", "x" * 8001, "user"),
    ],
)
def test_a_bad_turn_is_refused_before_anything_is_written(
    product: Observing, turn_id: str, user: str, field: str
) -> None:
    with pytest.raises(InvalidField) as refused:
        product.observe(turn_id, user)

    assert refused.value.field == field
    assert product.stores.conversations.list_conversations(ALICE) == []
