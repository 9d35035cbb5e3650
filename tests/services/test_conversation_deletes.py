"""Deleting conversations and masking the secrets in old messages, end to end on real
local adapters, on both stores.

Regression (issue 45, defect 11): after "forget everything" a card number, an SSN and a
password typed in a private chat before masking stayed in its stored messages and came
back as recent turns in that conversation's next context; no route deleted a conversation.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import ConversationNotFound
from chatmemory.ports.conversation_erasure import ConversationErasure, MaskingProgress
from chatmemory.ports.stores import Stores
from chatmemory.services.context import ContextRequest
from chatmemory.services.conversation_deletes import ConversationDeletes
from chatmemory.services.memories import NewMemory
from chatmemory.services.message_masking import MaskingRun, StoredMessageMasking
from tests.support.product import ALICE, Product
from tests.support.raw_transcript import SQLITE_FILE, left_of, store_as_said

CARD, SSN, PASSWORD = "4111 1111 1111 1111", "078-05-1120", "sunflower123"
TYPED = (f"My card is {CARD}.", f"My SSN is {SSN}.", f"My bank password is {PASSWORD}.")


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def _typed_before_masking(product: Product, folder: Path) -> str:
    """A private chat whose stored messages hold the secrets as typed, the way every
    release before masking on write stored them."""
    conversation_id = None
    for said in TYPED:
        conversation_id = product.say(said, conversation_id).conversation_id
    assert conversation_id is not None
    for number, said in enumerate(TYPED):
        store_as_said(
            product.stores, folder, ALICE, conversation_id, seq=2 * number + 1, content=said
        )
    return conversation_id


def _recent(product: Product, conversation_id: str | None = None) -> str:
    built = product.context.build(
        ContextRequest(
            user_id=ALICE, message="What did I tell you?", conversation_id=conversation_id
        )
    )
    return built.rendered.text()


def test_deleting_a_conversation_takes_what_forget_everything_left_in_it(
    product: Product, tmp_path: Path
) -> None:
    # Given secrets typed in a private chat, and everything forgotten since: its recent
    # turns still carry them (forget everything covers memories, not conversations)
    conversation_id = _typed_before_masking(product, tmp_path)
    product.memories.forget_everything(ALICE)
    assert CARD in _recent(product, conversation_id)

    # When she deletes the conversation
    ConversationDeletes(product.stores).delete(ALICE, conversation_id)

    # Then the next context naming it is refused, a new one holds none of it, and
    # nothing of it is left in the store
    with pytest.raises(ConversationNotFound):
        _recent(product, conversation_id)
    fresh = _recent(product)
    assert not any(secret in fresh for secret in (CARD, SSN, PASSWORD))
    assert left_of(product.stores, tmp_path, ALICE, conversation_id) == []


def test_a_deleted_conversations_runs_go_with_it_and_its_memories_stay(
    product: Product, tmp_path: Path
) -> None:
    # Given a conversation the write pipeline read (its run quotes what was said)
    said = product.say("I live in Pune.")
    product.go_quiet()
    assert product.active() == ["Lives in Pune."]
    run_ids = _runs_of(product, tmp_path, said.conversation_id)
    assert run_ids

    # When it is deleted
    ConversationDeletes(product.stores).delete(ALICE, said.conversation_id)

    # Then the runs are gone with it, and what was learned stays hers
    assert left_of(product.stores, tmp_path, ALICE, said.conversation_id) == []
    assert all(product.stores.runs.get_extraction_run(ALICE, run) is None for run in run_ids)
    assert product.active() == ["Lives in Pune."]


def _runs_of(product: Product, folder: Path, conversation_id: str) -> list[str]:
    """The ids of the conversation's runs (RUN#… keys on DynamoDB, rows on SQLite)."""
    left = left_of(product.stores, folder, ALICE, conversation_id)
    if "extraction_runs row" in left:  # SQLite names the table; find the ids themselves
        with closing(sqlite3.connect(folder / SQLITE_FILE)) as database:
            rows = database.execute(
                "SELECT run_id FROM extraction_runs WHERE conversation_id = ?", (conversation_id,)
            )
            return [row[0] for row in rows]
    return [sk.removeprefix("RUN#") for sk in left if sk.startswith("RUN#")]


def test_another_users_or_an_unknown_conversation_is_not_found(product: Product) -> None:
    # Given alice's conversation
    hers = product.say("I live in Pune.").conversation_id
    deletes = ConversationDeletes(product.stores)

    # When bob names it, or an id nobody has, or no id at all: not found, each alike
    for conversation_id in (hers, "conv_" + "0" * 32, "../etc"):
        with pytest.raises(ConversationNotFound):
            deletes.delete("bob", conversation_id)

    # Then hers is as it was
    assert len(product.stores.conversations.list_messages(ALICE, hers)) == 2


def test_deleting_every_conversation_leaves_the_owner_in_control(
    product: Product, tmp_path: Path
) -> None:
    # Given two conversations and a temporary one
    kept = [product.say("I live in Pune.").conversation_id, product.say("Hello").conversation_id]
    temporary = product.say("Just between us", temporary=True).conversation_id

    # When she deletes them all
    assert ConversationDeletes(product.stores).delete_all(ALICE) == 3

    # Then none is left, and she can still list, export and forget everything
    assert product.stores.conversations.list_conversations(ALICE) == []
    for conversation_id in (*kept, temporary):
        assert left_of(product.stores, tmp_path, ALICE, conversation_id) == []
    product.memories.create(ALICE, NewMemory(text="Has a cat."))
    assert [m.text for m in product.memories.list_memories(ALICE).items] == ["Has a cat."]
    assert product.memories.forget_everything(ALICE) == 1


class StopsOnce(ConversationErasure):
    """The store's erasure, whose first purge stops part way (a timeout, a throttle)."""

    def __init__(self, inner: ConversationErasure) -> None:
        self.inner, self.stopped = inner, False

    def hide_conversations(
        self, user_id: str, conversation_ids: Sequence[str] | None = None
    ) -> list[str]:
        return self.inner.hide_conversations(user_id, conversation_ids)

    def purge_conversation(self, user_id: str, conversation_id: str) -> None:
        if not self.stopped:
            self.stopped = True
            raise TimeoutError("the function ran out of time")
        self.inner.purge_conversation(user_id, conversation_id)

    def hidden_conversations(self, *, limit: int = 100) -> list[tuple[str, str]]:
        return self.inner.hidden_conversations(limit=limit)

    def mask_stored_messages(self, *, batch: int = 50) -> MaskingProgress:
        return self.inner.mask_stored_messages(batch=batch)


def test_a_purge_that_stopped_is_finished_by_the_sweep(
    product: Product, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a delete whose purge stopped part way: the delete stands all the same
    conversation_id = _typed_before_masking(product, tmp_path)
    stopping = dataclasses.replace(
        product.stores, conversation_erasure=StopsOnce(product.stores.conversation_erasure)
    )
    with caplog.at_level(logging.WARNING):
        ConversationDeletes(stopping).delete(ALICE, conversation_id)
    assert "conversation purge not finished" in caplog.text
    assert product.stores.conversations.get_conversation(ALICE, conversation_id) is None
    with pytest.raises(ConversationNotFound):  # gone for her; a second delete finds nothing
        ConversationDeletes(product.stores).delete(ALICE, conversation_id)

    # When the daily sweep (or `chatmemory flush`) runs
    finished = ConversationDeletes(product.stores).finish()

    # Then nothing of it is left (SQLite had nothing left to finish: one transaction)
    assert finished in (0, 1)
    assert left_of(product.stores, tmp_path, ALICE, conversation_id) == []
    assert product.stores.conversation_erasure.hidden_conversations() == []


# ---- the masking of messages stored before masking ---------------------------------------


def test_the_masking_run_masks_old_messages_once(product: Product, tmp_path: Path) -> None:
    # Given secrets stored in a conversation before masking, and one more conversation
    conversation_id = _typed_before_masking(product, tmp_path)
    product.say("Hello")
    masking = StoredMessageMasking(product.stores)

    # When the masking runs (a server's start, a flush, the sweep)
    run = masking.run(batch=1)

    # Then no secret is stored any more, and the next context quotes none
    assert run == MaskingRun(conversations=2, rewritten=3, done=True)
    stored = " ".join(
        m.content for m in product.stores.conversations.list_messages(ALICE, conversation_id)
    )
    assert not any(secret in stored for secret in (CARD, SSN, PASSWORD))
    assert CARD not in _recent(product, conversation_id)
    # and it never runs twice
    assert masking.run() == MaskingRun(conversations=0, rewritten=0, done=True)


def test_the_sweeps_share_of_masking_stops_when_told_and_resumes(
    product: Product, tmp_path: Path
) -> None:
    # Given three conversations stored before masking
    for _ in range(3):
        _typed_before_masking(product, tmp_path)
    masking = StoredMessageMasking(product.stores)

    # When a run must stop after its first batch (its Lambda's time is up), then resumes
    first = masking.run(keep_going=lambda: False, batch=1)
    rest = masking.run(batch=1)

    # Then the first did one conversation, the second the rest, and all are masked
    assert (first.conversations, first.done) == (1, False)
    assert (rest.conversations, rest.done) == (2, True)
    assert first.rewritten + rest.rewritten == 9
