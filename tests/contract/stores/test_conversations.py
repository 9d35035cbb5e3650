"""The conversation store contract, on both backends: sequence numbers, exchanges, windows,
expiry, folds, the extraction cursor and the sweep's listing."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.domain.errors import (
    ConcurrentChange,
    ConversationNotFound,
)
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import (
    ALICE,
    BOB,
    concurrently,
    eight_turns,
)
from tests.support import builders

# ---- conversations and messages ---------------------------------------------------------


def test_a_conversation_reads_back_and_cannot_be_created_twice(
    stores: Stores, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)

    assert (
        stores.conversations.get_conversation(ALICE, conversation.conversation_id) == conversation
    )
    with pytest.raises(ConcurrentChange):
        stores.conversations.create_conversation(conversation)


def test_messages_get_consecutive_sequence_numbers(stores: Stores, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)

    user_turn = stores.conversations.append_message(
        ALICE,
        conversation.conversation_id,
        role=Role.USER,
        content="Hallo 👋 ich bin Vegetarier",
        tokens=7,
        at=clock.now(),
    )
    reply_at = clock.advance(timedelta(seconds=2))
    reply = stores.conversations.append_message(
        ALICE,
        conversation.conversation_id,
        role=Role.ASSISTANT,
        content="Schön!",
        tokens=2,
        at=reply_at,
        memories_used=("mem_a",),
    )

    assert (user_turn.seq, reply.seq) == (1, 2)
    assert stores.conversations.list_messages(ALICE, conversation.conversation_id) == [
        user_turn,
        reply,
    ]
    state = stores.conversations.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None
    assert state.last_seq == 2
    assert state.updated_at == reply_at
    assert state.last_user_message_at == conversation.created_at


def test_an_exchange_is_stored_whole_with_its_new_conversation(
    stores: Stores, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    exchange = [
        NewMessage(Role.USER, "remember that I'm vegetarian", 6),
        NewMessage(Role.ASSISTANT, "Noted.", 2, ("mem_a",)),
    ]

    stored = stores.conversations.append_messages(
        ALICE, conversation.conversation_id, exchange, clock.now(), create=conversation
    )

    assert [(m.seq, m.role, m.memories_used) for m in stored] == [
        (1, Role.USER, ()),
        (2, Role.ASSISTANT, ("mem_a",)),
    ]
    assert stores.conversations.list_messages(ALICE, conversation.conversation_id) == stored
    state = stores.conversations.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None and state.last_seq == 2
    assert state.last_user_message_at == clock.now()
    with pytest.raises(ConcurrentChange):
        stores.conversations.append_messages(
            ALICE, conversation.conversation_id, exchange, clock.now(), create=conversation
        )
    assert len(stores.conversations.list_messages(ALICE, conversation.conversation_id)) == 2


def test_an_exchange_continues_the_sequence(stores: Stores, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)
    stores.conversations.append_message(
        ALICE, conversation.conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
    )

    stored = stores.conversations.append_messages(
        ALICE,
        conversation.conversation_id,
        [NewMessage(Role.ASSISTANT, "hello", 1), NewMessage(Role.USER, "again", 1)],
        clock.now(),
    )

    assert [m.seq for m in stored] == [2, 3]
    with pytest.raises(ConversationNotFound):
        stores.conversations.append_messages(
            BOB, conversation.conversation_id, [NewMessage(Role.USER, "x", 1)], clock.now()
        )


def test_message_windows(stores: Stores, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)
    for turn in range(1, 13):
        role = Role.USER if turn % 2 else Role.ASSISTANT
        stores.conversations.append_message(
            ALICE,
            conversation.conversation_id,
            role=role,
            content=f"turn {turn}",
            tokens=2,
            at=clock.now(),
        )

    def seqs(**window: int) -> list[int]:
        return [
            m.seq
            for m in stores.conversations.list_messages(
                ALICE, conversation.conversation_id, **window
            )
        ]

    assert seqs() == list(range(1, 13))
    assert seqs(after_seq=8) == [9, 10, 11, 12]
    assert seqs(after_seq=2, upto_seq=6) == [3, 4, 5, 6]
    assert seqs(last=4) == [9, 10, 11, 12]
    assert seqs(upto_seq=6, last=2) == [5, 6]


def test_concurrent_appends_never_share_a_sequence_number(
    stores: Stores, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)

    def writer(name: str) -> None:
        for index in range(8):
            stores.conversations.append_message(
                ALICE,
                conversation.conversation_id,
                role=Role.USER,
                content=f"{name} {index}",
                tokens=2,
                at=clock.now(),
            )

    errors = concurrently(writer)

    assert errors == []
    messages = stores.conversations.list_messages(ALICE, conversation.conversation_id)
    assert [m.seq for m in messages] == list(range(1, 25))


def test_a_temporary_chat_and_its_messages_expire(stores: Stores, clock: ManualClock) -> None:
    temporary = builders.conversation(ALICE, clock.now(), temporary=True, ttl=timedelta(hours=24))
    stores.conversations.create_conversation(temporary)
    message = stores.conversations.append_message(
        ALICE,
        temporary.conversation_id,
        role=Role.USER,
        content="secret-ish",
        tokens=2,
        at=clock.now(),
    )
    assert message.expires_at == temporary.expires_at

    clock.advance(timedelta(hours=24, seconds=1))

    assert stores.conversations.get_conversation(ALICE, temporary.conversation_id) is None
    assert stores.conversations.list_conversations(ALICE) == []
    assert stores.conversations.list_messages(ALICE, temporary.conversation_id) == []
    with pytest.raises(ConversationNotFound):
        stores.conversations.append_message(
            ALICE, temporary.conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
        )


def test_conversations_list_most_recently_updated_first(stores: Stores, clock: ManualClock) -> None:
    first = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(first)
    clock.advance(timedelta(minutes=1))
    second = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(second)
    clock.advance(timedelta(minutes=1))
    stores.conversations.append_message(
        ALICE, first.conversation_id, role=Role.USER, content="back again", tokens=2, at=clock.now()
    )

    assert [c.conversation_id for c in stores.conversations.list_conversations(ALICE)] == [
        first.conversation_id,
        second.conversation_id,
    ]


def test_last_seen_is_the_latest_conversation_with_that_persona_that_has_messages(
    stores: Stores, clock: ManualClock
) -> None:
    conversations = stores.conversations

    def said(conversation_id: str) -> None:
        conversations.append_message(
            ALICE, conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
        )

    # Given no conversation yet: a first meeting
    assert conversations.last_seen(ALICE, "assistant") is None

    # Given an older and a newer conversation with the assistant, one with another persona
    # later still, a temporary chat, an empty one, and Bob's
    older = builders.conversation(ALICE, clock.now())
    conversations.create_conversation(older)
    said(older.conversation_id)
    clock.advance(timedelta(days=1))
    newer = builders.conversation(ALICE, clock.now())
    conversations.create_conversation(newer)
    said(newer.conversation_id)
    seen = clock.now()
    clock.advance(timedelta(days=1))
    warren = dataclasses.replace(builders.conversation(ALICE, clock.now()), persona="warren")
    conversations.create_conversation(warren)
    said(warren.conversation_id)
    temporary = builders.conversation(ALICE, clock.now(), temporary=True)
    conversations.create_conversation(temporary)
    said(temporary.conversation_id)
    conversations.create_conversation(builders.conversation(ALICE, clock.now()))  # empty
    bobs = builders.conversation(BOB, clock.now())
    conversations.create_conversation(bobs)
    conversations.append_message(
        BOB, bobs.conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
    )

    # Then each persona's last meeting is its own latest conversation with messages
    assert conversations.last_seen(ALICE, "assistant") == seen
    assert conversations.last_seen(ALICE, "warren") == clock.now()
    assert conversations.last_seen(ALICE, "war") is None

    # And the older one written again (a reply) is the last meeting now
    clock.advance(timedelta(hours=1))
    said(older.conversation_id)
    assert conversations.last_seen(ALICE, "assistant") == clock.now()


def test_two_folds_from_the_same_state_cannot_both_win(stores: Stores, clock: ManualClock) -> None:
    conversation = eight_turns(stores, clock)

    first = stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice is vegetarian.",
        upto_seq=4,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )
    second = stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice likes Goa.",
        upto_seq=4,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )

    assert (first, second) == (True, False)
    state = stores.conversations.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None
    assert (state.summary, state.summary_upto_seq, state.fold_count) == (
        "Alice is vegetarian.",
        4,
        1,
    )
    # a fold past the last message is refused too
    assert not stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="x",
        upto_seq=99,
        expected_upto_seq=4,
        fold_count=2,
        at=clock.now(),
    )


def test_a_rewrite_of_the_summary_beats_a_fold_that_read_it_before(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a folded conversation
    conversation = eight_turns(stores, clock)
    assert stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice is vegetarian. Alice likes Goa.",
        upto_seq=4,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )

    # When a purge rewrites the summary in place (same upto_seq, next fold_count)
    rewritten = stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice likes Goa.",
        upto_seq=4,
        expected_upto_seq=4,
        fold_count=2,
        expected_fold_count=1,
        at=clock.now(),
    )
    # and a fold that read the summary before the rewrite tries to apply
    stale_fold = stores.conversations.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice is vegetarian. Alice likes Goa. Turns 5-8.",
        upto_seq=8,
        expected_upto_seq=4,
        fold_count=2,
        expected_fold_count=1,
        at=clock.now(),
    )

    # Then the rewrite stands and the stale fold is refused
    assert (rewritten, stale_fold) == (True, False)
    state = stores.conversations.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None
    assert (state.summary, state.summary_upto_seq, state.fold_count) == ("Alice likes Goa.", 4, 2)


def test_the_extraction_cursor_moves_only_from_where_it_was_read(
    stores: Stores, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)
    for turn in range(3):
        stores.conversations.append_message(
            ALICE,
            conversation.conversation_id,
            role=Role.USER,
            content=f"turn {turn}",
            tokens=2,
            at=clock.now(),
        )

    assert stores.conversations.advance_extraction(
        ALICE, conversation.conversation_id, upto_seq=3, expected_upto_seq=0
    )
    assert not stores.conversations.advance_extraction(
        ALICE, conversation.conversation_id, upto_seq=3, expected_upto_seq=0
    )
    state = stores.conversations.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None and state.extracted_upto_seq == 3


# ---- the write pipeline ----------------------------------------------------------------


def test_the_sweep_finds_conversations_whose_new_messages_are_unread(
    stores: Stores, clock: ManualClock
) -> None:
    # Given conversations: unread (alice, bob), temporary, caught up, and one said too late
    unread = builders.conversation(ALICE, clock.now())
    bobs = builders.conversation(BOB, clock.now())
    temporary = builders.conversation(ALICE, clock.now(), temporary=True)
    caught_up = builders.conversation(ALICE, clock.now())
    for conversation in (unread, bobs, temporary, caught_up):
        stores.conversations.create_conversation(conversation)
        stores.conversations.append_message(
            conversation.user_id,
            conversation.conversation_id,
            role=Role.USER,
            content="I live in Pune",
            tokens=4,
            at=clock.now(),
        )
    assert stores.conversations.advance_extraction(
        ALICE, caught_up.conversation_id, upto_seq=1, expected_upto_seq=0
    )
    clock.advance(timedelta(minutes=5))
    recent = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(recent)
    stores.conversations.append_message(
        ALICE, recent.conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
    )

    # When the sweep asks for what went quiet before now
    pending = stores.conversations.pending_extractions(
        said_before=clock.now() - timedelta(minutes=1)
    )

    # Then only the quiet, unread, non-temporary ones come back, oldest first
    assert set(pending) == {(ALICE, unread.conversation_id), (BOB, bobs.conversation_id)}
    # and a conversation leaves the list once read, and returns with a new user message
    stores.conversations.advance_extraction(
        ALICE, unread.conversation_id, upto_seq=1, expected_upto_seq=0
    )
    assert (ALICE, unread.conversation_id) not in stores.conversations.pending_extractions(
        said_before=clock.now()
    )
    stores.conversations.append_message(
        ALICE, unread.conversation_id, role=Role.USER, content="I moved", tokens=2, at=clock.now()
    )
    clock.advance(timedelta(minutes=1))
    assert (ALICE, unread.conversation_id) in stores.conversations.pending_extractions(
        said_before=clock.now()
    )
