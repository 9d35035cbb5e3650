"""The conversation-erasure contract, on both backends: a deleted conversation reads as
missing from the very next read, its purge leaves nothing of it (however often it runs,
wherever it stopped), and the secrets in messages stored before masking are masked once.

Regression (issue 45, defect 11): nothing could delete a conversation, so a card number,
an SSN and a password typed in a private chat before masking stayed in its messages after
"forget everything" and came back as recent turns.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.sqlite.conversation_erasure import SqliteConversationErasure
from chatmemory.domain.conversation import Conversation, NewMessage, Role
from chatmemory.domain.errors import ConversationNotFound
from chatmemory.domain.secrets import WITHHELD
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import ALICE, BOB
from tests.support import builders
from tests.support.raw_transcript import left_of, store_as_said, summary_as_folded

CARD = "4111 1111 1111 1111"
SSN = "078-05-1120"


def _chatted(stores: Stores, clock: ManualClock, user: str = ALICE, turns: int = 2) -> str:
    """A conversation of `user` with `turns` exchanges, a summary and an observed turn."""
    conversation = builders.conversation(user, clock.now())
    conversations = stores.conversations
    conversations.create_conversation(conversation)
    cid = conversation.conversation_id
    for turn in range(turns):
        conversations.append_messages(
            user,
            cid,
            [
                NewMessage(Role.USER, f"I live in Pune ({turn}).", 5),
                NewMessage(Role.ASSISTANT, "Ok", 1),
            ],
            clock.now(),
        )
        clock.advance(timedelta(seconds=20))
    conversations.append_observed(
        user,
        cid,
        [NewMessage(Role.USER, "My dog is Rex.", 4), NewMessage(Role.ASSISTANT, "Hi Rex", 2)],
        clock.now(),
        turn_id=f"turn-{cid}",
        fingerprint="f" * 64,
    )
    assert conversations.update_summary(
        user,
        cid,
        summary="Lives in Pune.",
        upto_seq=2,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )
    clock.advance(timedelta(minutes=5))
    return cid


# ---- hidden at once -------------------------------------------------------------------


def test_a_deleted_conversation_reads_as_missing_from_the_very_next_read(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Alice's conversation with messages, a summary, an observed turn, unread by
    # the pipeline (so on the sweep's list), and her last meeting with the assistant
    cid = _chatted(stores, clock)
    conversations = stores.conversations
    assert (ALICE, cid) in conversations.pending_extractions(said_before=clock.now())
    assert conversations.last_seen(ALICE, "assistant") is not None

    # When she deletes it
    assert stores.conversation_erasure.hide_conversations(ALICE, [cid]) == [cid]

    # Then every read treats it as missing, before any purge ran
    assert conversations.get_conversation(ALICE, cid) is None
    assert conversations.list_conversations(ALICE) == []
    assert conversations.list_messages(ALICE, cid) == []
    assert conversations.last_seen(ALICE, "assistant") is None
    assert (ALICE, cid) not in conversations.pending_extractions(said_before=clock.now())
    # and no write reaches it any more
    with pytest.raises(ConversationNotFound):
        conversations.append_message(
            ALICE, cid, role=Role.USER, content="hi", tokens=1, at=clock.now()
        )
    assert not conversations.update_summary(
        ALICE, cid, summary="x", upto_seq=4, expected_upto_seq=2, fold_count=2, at=clock.now()
    )
    assert not conversations.advance_extraction(ALICE, cid, upto_seq=2, expected_upto_seq=0)
    # and its observed turn's id is free: the same turn reported again is a new one
    fresh = builders.conversation(ALICE, clock.now())
    turn, stored = conversations.append_observed(
        ALICE,
        fresh.conversation_id,
        [NewMessage(Role.USER, "My dog is Rex.", 4)],
        clock.now(),
        turn_id=f"turn-{cid}",
        fingerprint="f" * 64,
        create=fresh,
    )
    assert stored and turn.conversation_id == fresh.conversation_id


def test_only_the_users_own_visible_conversations_are_deleted(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Bob's conversation, an expired temporary one of Alice's, and one she deleted
    bobs = _chatted(stores, clock, user=BOB)
    expired = builders.conversation(ALICE, clock.now(), temporary=True, ttl=timedelta(minutes=1))
    stores.conversations.create_conversation(expired)
    gone = _chatted(stores, clock)
    erasure = stores.conversation_erasure
    erasure.hide_conversations(ALICE, [gone])

    # When Alice names them, and an id nobody has
    hidden = erasure.hide_conversations(
        ALICE,
        [
            bobs,
            expired.conversation_id,
            gone,
            builders.conversation(ALICE, clock.now()).conversation_id,
        ],
    )

    # Then none of them is hidden now, and Bob's conversation is as it was
    assert hidden == []
    assert stores.conversations.get_conversation(BOB, bobs) is not None
    assert len(stores.conversations.list_messages(BOB, bobs)) == 6


def test_deleting_every_conversation_takes_expired_ones_and_no_one_elses(
    stores: Stores, clock: ManualClock, tmp_path: Path
) -> None:
    # Given two conversations of Alice's, an expired temporary one, and Bob's
    first, second = _chatted(stores, clock), _chatted(stores, clock)
    expired = builders.conversation(ALICE, clock.now(), temporary=True, ttl=timedelta(minutes=1))
    stores.conversations.append_messages(
        ALICE,
        expired.conversation_id,
        [NewMessage(Role.USER, "I live in Pune.", 4)],
        clock.now(),
        create=expired,
    )
    clock.advance(timedelta(minutes=2))
    bobs = _chatted(stores, clock, user=BOB)

    # When she deletes them all
    hidden = stores.conversation_erasure.hide_conversations(ALICE)

    # Then all three are hidden, and Bob's is untouched
    assert set(hidden) == {first, second, expired.conversation_id}
    assert stores.conversations.list_conversations(ALICE) == []
    assert [c.conversation_id for c in stores.conversations.list_conversations(BOB)] == [bobs]
    # and once purged nothing of any of them is left
    for cid in hidden:
        stores.conversation_erasure.purge_conversation(ALICE, cid)
        assert left_of(stores, tmp_path, ALICE, cid) == []
    assert left_of(stores, tmp_path, BOB, bobs) != []


# ---- purged for good ---------------------------------------------------------------------


def test_a_purge_leaves_nothing_of_the_conversation_and_can_run_again(
    stores: Stores, clock: ManualClock, tmp_path: Path
) -> None:
    # Given a deleted conversation of 60 exchanges (more than one batch of deletes)
    cid = _chatted(stores, clock, turns=60)
    erasure = stores.conversation_erasure
    erasure.hide_conversations(ALICE, [cid])
    assert set(erasure.hidden_conversations()) <= {(ALICE, cid)}  # a purge to finish, if any

    # When its purge runs, and runs again
    erasure.purge_conversation(ALICE, cid)
    erasure.purge_conversation(ALICE, cid)

    # Then nothing of it is stored, and nothing is left to finish
    assert left_of(stores, tmp_path, ALICE, cid) == []
    assert erasure.hidden_conversations() == []


def test_a_purge_leaves_a_conversation_that_was_not_deleted_alone(
    stores: Stores, clock: ManualClock
) -> None:
    cid = _chatted(stores, clock)

    stores.conversation_erasure.purge_conversation(ALICE, cid)

    assert stores.conversations.get_conversation(ALICE, cid) is not None
    assert len(stores.conversations.list_messages(ALICE, cid)) == 6


def test_a_purge_stopped_part_way_is_listed_then_finished(
    stores: Stores, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if isinstance(stores.conversation_erasure, SqliteConversationErasure):
        pytest.skip("SQLite deletes a conversation in the one write that hides it")
    # Given a deleted conversation whose purge stopped after its first batch of deletes
    cid = _chatted(stores, clock, turns=120)
    erasure = stores.conversation_erasure
    erasure.hide_conversations(ALICE, [cid])
    table = erasure._table  # type: ignore[attr-defined]
    batches = 0
    delete_all = table.delete_all

    def stops_after_one(items: list[object]) -> None:
        nonlocal batches
        batches += 1
        if batches > 1:
            raise TimeoutError("the function ran out of time")
        delete_all(items)

    monkeypatch.setattr(table, "delete_all", stops_after_one)
    with pytest.raises(TimeoutError):
        erasure.purge_conversation(ALICE, cid)
    monkeypatch.undo()
    assert 0 < len(left_of(stores, tmp_path, ALICE, cid)) < 242

    # Then it still reads as missing, and the sweep's listing has it
    assert stores.conversations.list_messages(ALICE, cid) == []
    assert erasure.hidden_conversations() == [(ALICE, cid)]

    # And the purge run again finishes it
    erasure.purge_conversation(ALICE, cid)
    assert left_of(stores, tmp_path, ALICE, cid) == []
    assert erasure.hidden_conversations() == []


# ---- secrets stored before masking -------------------------------------------------------


SAID = (
    (f"My card is {CARD} and I live in Pune.", "Noted, Pune it is."),
    (f"My SSN is {SSN}.", "Thanks."),
    ("My wifi password is sunflower123", "Got it: sunflower123"),
)


def _stored_before_masking(stores: Stores, clock: ManualClock, folder: Path) -> Conversation:
    """A conversation whose messages and summary hold a card number, an SSN and a password
    the way releases before masking stored them."""
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)
    cid = conversation.conversation_id
    for user, reply in SAID:
        stored = stores.conversations.append_messages(
            ALICE,
            cid,
            [NewMessage(Role.USER, "…", 1), NewMessage(Role.ASSISTANT, "…", 1)],
            clock.now(),
        )
        store_as_said(stores, folder, ALICE, cid, seq=stored[0].seq, content=user)
        store_as_said(stores, folder, ALICE, cid, seq=stored[1].seq, content=reply)
        clock.advance(timedelta(seconds=20))
    summary_as_folded(stores, folder, ALICE, cid, f"Lives in Pune; card {CARD}; SSN {SSN}.")
    return conversation


def _as_stored_today(stores: Stores, clock: ManualClock) -> list[str]:
    """The same exchanges said today: what a write stores of them now (masked)."""
    today = builders.conversation(BOB, clock.now())
    stores.conversations.create_conversation(today)
    for user, reply in SAID:
        stores.conversations.append_messages(
            BOB,
            today.conversation_id,
            [NewMessage(Role.USER, user, 8), NewMessage(Role.ASSISTANT, reply, 4)],
            clock.now(),
        )
    return [m.content for m in stores.conversations.list_messages(BOB, today.conversation_id)]


def test_secrets_stored_before_masking_are_masked_and_the_rest_kept(
    stores: Stores, clock: ManualClock, tmp_path: Path
) -> None:
    # Given messages stored before masking, holding a card number, an SSN and a password
    cid = _stored_before_masking(stores, clock, tmp_path).conversation_id
    assert CARD in stores.conversations.list_messages(ALICE, cid)[0].content

    # When the masking runs through the store
    progress = stores.conversation_erasure.mask_stored_messages(batch=10)

    # Then every stored copy is what the same words said today are stored as: the
    # sentence kept, each secret masked, the bare repeat of the password too
    assert progress.done and progress.conversations == 1
    masked = [m.content for m in stores.conversations.list_messages(ALICE, cid)]
    assert masked == _as_stored_today(stores, clock)
    assert masked[0].startswith("My card is ") and masked[0].endswith(" and I live in Pune.")
    assert masked[5] == f"Got it: {WITHHELD}"
    for secret in (CARD, SSN, "sunflower123"):
        assert not any(secret in text for text in masked)
    conversation = stores.conversations.get_conversation(ALICE, cid)
    assert conversation is not None
    assert CARD not in conversation.summary and SSN not in conversation.summary
    assert conversation.summary.startswith("Lives in Pune; card ")
    assert progress.rewritten == 5  # three messages, the repeat and the summary


def test_the_masking_resumes_batch_by_batch_and_never_runs_twice(
    stores: Stores, clock: ManualClock, tmp_path: Path
) -> None:
    # Given five conversations stored before masking, of two users
    stored = [_stored_before_masking(stores, clock, tmp_path) for _ in range(4)]
    bobs = builders.conversation(BOB, clock.now())
    stores.conversations.append_messages(
        BOB, bobs.conversation_id, [NewMessage(Role.USER, "…", 1)], clock.now(), create=bobs
    )
    store_as_said(stores, tmp_path, BOB, bobs.conversation_id, seq=1, content=f"Card {CARD}")

    # When it runs two conversations at a time, as a run cut short and resumed would
    runs = []
    while not (runs and runs[-1].done):
        runs.append(stores.conversation_erasure.mask_stored_messages(batch=2))
        assert len(runs) <= 4

    # Then every conversation was read once, and no secret is left anywhere
    assert sum(run.conversations for run in runs) == 5
    for conversation in [*stored, bobs]:
        for message in stores.conversations.list_messages(
            conversation.user_id, conversation.conversation_id
        ):
            assert CARD not in message.content and SSN not in message.content
    # And once done it is recorded: a later run reads nothing and changes nothing
    store_as_said(stores, tmp_path, BOB, bobs.conversation_id, seq=1, content=f"Card {CARD} again")
    assert stores.conversation_erasure.mask_stored_messages(batch=2) == runs[-1].__class__(
        conversations=0, rewritten=0, done=True
    )
    [message] = stores.conversations.list_messages(BOB, bobs.conversation_id)
    assert message.content == f"Card {CARD} again"  # written past the product, after it ran


def test_masking_leaves_clean_messages_as_they_are(stores: Stores, clock: ManualClock) -> None:
    cid = _chatted(stores, clock)
    before = stores.conversations.list_messages(ALICE, cid)

    progress = stores.conversation_erasure.mask_stored_messages()

    assert (progress.rewritten, progress.done) == (0, True)
    assert stores.conversations.list_messages(ALICE, cid) == before
