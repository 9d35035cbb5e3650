"""The observed-turn contract, on both backends: a turn reported after it happened is
stored once per (user, turn id), with its record in the same atomic write."""

from __future__ import annotations

from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.conversation import Conversation, NewMessage, Role
from chatmemory.domain.observed_turn import ObservedTurn
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import ALICE, BOB, concurrently
from tests.support import builders

FIRST = "a" * 64
OTHER = "b" * 64


def _exchange(said: str = "I adopted a cat named Miso.") -> list[NewMessage]:
    return [NewMessage(Role.USER, said, 8), NewMessage(Role.ASSISTANT, "Lovely name!", 3)]


def _observe(
    stores: Stores,
    clock: ManualClock,
    conversation: Conversation,
    *,
    turn_id: str = "turn-1",
    fingerprint: str = FIRST,
    create: bool = False,
    user: str = ALICE,
) -> tuple[ObservedTurn, bool]:
    return stores.conversations.append_observed(
        user,
        conversation.conversation_id,
        _exchange(),
        clock.now(),
        turn_id=turn_id,
        fingerprint=fingerprint,
        create=conversation if create else None,
    )


def test_an_observed_turn_is_stored_with_its_record(stores: Stores, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())

    turn, stored = _observe(stores, clock, conversation, create=True)

    assert stored
    messages = stores.conversations.list_messages(ALICE, conversation.conversation_id)
    assert [(m.seq, m.role) for m in messages] == [(1, Role.USER), (2, Role.ASSISTANT)]
    assert turn.message_ids == [m.message_id for m in messages]
    assert (turn.conversation_id, turn.fingerprint) == (conversation.conversation_id, FIRST)
    saved = stores.conversations.get_conversation(ALICE, conversation.conversation_id)
    assert saved is not None and saved.awaiting_extraction


def test_a_retried_turn_stores_nothing_twice(stores: Stores, clock: ManualClock) -> None:
    # Given a turn stored in a conversation it created
    conversation = builders.conversation(ALICE, clock.now())
    first, _ = _observe(stores, clock, conversation, create=True)
    clock.advance(timedelta(seconds=5))

    # When the client sends it again (into a conversation it would create anew, too)
    again = builders.conversation(ALICE, clock.now())
    retried, stored = _observe(stores, clock, again, create=True, fingerprint=OTHER)

    # Then nothing was written: the first record comes back, fingerprint and all
    assert not stored
    assert retried == first
    assert [c.conversation_id for c in stores.conversations.list_conversations(ALICE)] == [
        conversation.conversation_id
    ]
    assert len(stores.conversations.list_messages(ALICE, conversation.conversation_id)) == 2


def test_a_turn_id_is_the_users_own(stores: Stores, clock: ManualClock) -> None:
    _observe(stores, clock, builders.conversation(ALICE, clock.now()), create=True)

    bobs, stored = _observe(
        stores, clock, builders.conversation(BOB, clock.now()), create=True, user=BOB
    )

    assert stored and bobs.user_id == BOB
    assert len(stores.conversations.list_messages(BOB, bobs.conversation_id)) == 2


def test_turns_land_after_the_conversations_messages(stores: Stores, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    _observe(stores, clock, conversation, create=True, turn_id="t1")

    second, _ = _observe(stores, clock, conversation, turn_id="t2")

    assert (second.first_seq, second.count) == (3, 2)


def test_a_turn_record_expires_with_its_temporary_conversation(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a turn observed in a temporary chat
    temporary = builders.conversation(ALICE, clock.now(), temporary=True, ttl=timedelta(hours=24))
    first, _ = _observe(stores, clock, temporary, create=True)
    assert first.expires_at == temporary.expires_at

    # When the chat has expired and the same turn id comes again
    clock.advance(timedelta(hours=24, seconds=1))
    later = builders.conversation(ALICE, clock.now())
    turn, stored = _observe(stores, clock, later, create=True)

    # Then it is a new turn: nothing of the old one holds the id
    assert stored and turn.conversation_id == later.conversation_id


def test_the_same_turn_sent_at_once_is_stored_once(stores: Stores, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)
    outcomes: list[bool] = []

    def writer(_: str) -> None:
        outcomes.append(_observe(stores, clock, conversation)[1])

    errors = concurrently(writer)

    assert errors == []
    assert sorted(outcomes) == [False, False, True]
    assert len(stores.conversations.list_messages(ALICE, conversation.conversation_id)) == 2
