"""Isolation, on both backends: another user never sees a row of Alice's through any port."""

from __future__ import annotations

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.conversation import Role
from chatmemory.domain.errors import (
    ConversationNotFound,
    MemoryNotFound,
)
from chatmemory.domain.events import Op
from chatmemory.domain.ids import new_notice_id
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.notice import Notice
from chatmemory.domain.profile import Profile
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from tests.contract.stores.common import (
    ALICE,
    BOB,
    EVERY_STATUS,
    all_ids,
)
from tests.support import builders

# ---- user isolation ---------------------------------------------------------------------


def test_another_user_never_sees_alices_rows_through_any_method(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Alice has one of everything
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    stores.memories.add_memory(
        memory, events=[builders.event(ALICE, memory.memory_id, Op.ADD, clock.now())]
    )
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)
    stores.conversations.append_message(
        ALICE,
        conversation.conversation_id,
        role=Role.USER,
        content="I'm vegetarian",
        tokens=4,
        at=clock.now(),
    )
    stores.user_state.put_profile(
        Profile(
            user_id=ALICE,
            text="Vegetarian.",
            token_count=3,
            built_from=(memory.memory_id,),
            rebuilt_at=clock.now(),
        )
    )
    stores.user_state.put_settings(MemorySettings(user_id=ALICE, enabled=False, note="Call me Al."))
    notice = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: is vegetarian",
        memory_ids=(memory.memory_id,),
        created_at=clock.now(),
    )
    stores.notices.add_notice(notice)
    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id="mem_gone", deleted_at=clock.now())]
    )

    # Then Bob, asking with Alice's ids, gets nothing
    assert stores.memories.get_memory(BOB, memory.memory_id) is None
    assert all_ids(stores, BOB, EVERY_STATUS) == []
    assert stores.events.list_events(BOB, memory.memory_id) == []
    assert stores.conversations.get_conversation(BOB, conversation.conversation_id) is None
    assert stores.conversations.list_conversations(BOB) == []
    assert stores.conversations.list_messages(BOB, conversation.conversation_id) == []
    assert stores.user_state.get_profile(BOB) is None
    assert stores.user_state.get_settings(BOB) == MemorySettings(user_id=BOB)
    assert stores.notices.get_notice(BOB, notice.notice_id) is None
    assert stores.notices.list_notices(BOB) == []
    assert stores.notices.mark_notice_undone(BOB, notice.notice_id, clock.now()) is False
    assert stores.tombstones.get_tombstone(BOB, "mem_gone") is None
    assert stores.tombstones.list_tombstones(BOB) == []
    assert not stores.conversations.update_summary(
        BOB,
        conversation.conversation_id,
        summary="x",
        upto_seq=1,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )
    assert not stores.conversations.advance_extraction(
        BOB, conversation.conversation_id, upto_seq=1, expected_upto_seq=0
    )
    # and Bob's writes aimed at Alice's ids change nothing of hers
    with pytest.raises(MemoryNotFound):
        stores.memories.close_memory(BOB, memory.memory_id, clock.now())
    with pytest.raises(MemoryNotFound):
        stores.memories.supersede_memory(
            BOB,
            memory.memory_id,
            builders.memory(BOB, "Eats meat.", clock.now(), supersedes=memory.memory_id),
        )
    with pytest.raises(ConversationNotFound):
        stores.conversations.append_message(
            BOB,
            conversation.conversation_id,
            role=Role.USER,
            content="hi",
            tokens=1,
            at=clock.now(),
        )
    stores.memories.record_use(BOB, [memory.memory_id], clock.now())
    Deletions(stores).tombstone_memories(
        BOB, [Tombstone(user_id=BOB, memory_id=memory.memory_id, deleted_at=clock.now())]
    )
    stores.visibility.purge_memories(BOB, [memory.memory_id])
    stores.notices.delete_notices(BOB, [notice.notice_id])
    stores.user_state.delete_profiles(BOB)
    Deletions(stores).forget_everything(BOB, clock.now())
    assert stores.memories.get_memory(ALICE, memory.memory_id) == memory
    assert stores.notices.get_notice(ALICE, notice.notice_id) == notice
    assert stores.user_state.get_profile(ALICE) is not None
    assert stores.conversations.get_conversation(ALICE, conversation.conversation_id) is not None
    assert len(stores.conversations.list_messages(ALICE, conversation.conversation_id)) == 1
