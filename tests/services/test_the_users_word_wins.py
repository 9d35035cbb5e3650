"""What the user did since a message was said is never undone by background learning.

Regression (issue: "background learning reverts a user's correction"): chat "remember that
I am vegetarian", correct the memory to "Is vegan.", let the conversation go quiet — the
pipeline re-read the old message and made "Is vegetarian." active again, and undoing its
notice then deleted the whole version chain. Each test runs on both stores.
"""

from __future__ import annotations

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.events import Actor, Op
from chatmemory.domain.memory import Status
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from tests.support.product import ALICE, Product


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def texts(product: Product, status: Status | None = Status.ACTIVE) -> list[str]:
    return sorted(
        m.text for m in product.stores.memories.iter_memories(ALICE, MemoryQuery(status=status))
    )


def test_background_learning_never_reverts_a_users_correction(product: Product) -> None:
    [saved] = product.say("remember that I am vegetarian").saved
    vegan = product.memories.correct(ALICE, saved, text="Is vegan.")

    product.go_quiet()

    assert texts(product) == ["Is vegan."]
    assert product.notices.pending(ALICE) == []
    assert all(
        e.actor is Actor.USER for e in product.stores.events.list_events(ALICE, vegan.memory_id)
    )


def test_a_memory_the_user_deleted_is_not_learned_again_from_its_message(
    product: Product,
) -> None:
    [saved] = product.say("remember that I am vegetarian").saved
    product.memories.delete(ALICE, saved)

    product.go_quiet()

    assert texts(product, status=None) == []
    assert product.notices.pending(ALICE) == []


def test_forget_everything_reaches_what_was_not_learned_yet(product: Product) -> None:
    product.say("I'm vegetarian and I live in Pune.")
    product.memories.forget_everything(ALICE)

    product.go_quiet()

    assert texts(product, status=None) == []


def test_an_older_message_never_overrules_a_newer_statement(product: Product) -> None:
    conversation = product.say("I live in Pune.").conversation_id
    product.say("remember that I live in Mumbai", conversation)

    product.go_quiet()

    assert texts(product) == ["Lives in Mumbai."]
    assert texts(product, status=Status.SUPERSEDED) == []


def test_of_two_moves_told_in_one_conversation_the_later_one_holds(product: Product) -> None:
    product.say("I live in Delhi.")
    product.go_quiet()
    conversation = product.say("I moved to Pune.").conversation_id
    product.say("Update: I moved to Mumbai.", conversation)

    product.go_quiet()

    assert texts(product) == ["Lives in Mumbai."]
    assert texts(product, status=Status.SUPERSEDED) == ["Lives in Delhi."]


def test_saying_it_again_after_the_correction_is_newer_than_the_correction(
    product: Product,
) -> None:
    [saved] = product.say("remember that I am vegetarian").saved
    product.memories.correct(ALICE, saved, text="Is vegan.")

    product.say("Actually these days I'm vegetarian again.")
    product.go_quiet()

    assert texts(product) == ["Is vegetarian."]


def test_undoing_a_background_correction_restores_exactly_the_version_before(
    product: Product,
) -> None:
    product.say("I live in Pune.")
    product.go_quiet()
    product.say("Big news: I moved to Bengaluru!")
    [before] = product.stores.memories.iter_memories(ALICE)  # as it was right before the correction
    product.go_quiet()
    notice = next(n for n in product.notices.pending(ALICE) if "Bengaluru" in n.text)

    undone = product.notices.undo(ALICE, notice.notice_id)

    assert list(product.stores.memories.iter_memories(ALICE)) == [
        before.with_changes(updated_at=product.clock.now())
    ]
    assert texts(product, status=None) == ["Lives in Pune."]
    assert [product.stores.tombstones.get_tombstone(ALICE, m) is not None for m in undone] == [True]
    assert product.stores.tombstones.get_tombstone(ALICE, before.memory_id) is None
    assert [e.op for e in product.memories.history(ALICE, before.memory_id)] == [
        Op.ADD,
        Op.UPDATE,
        Op.RESTORE,
    ]
    assert product.notices.undo(ALICE, notice.notice_id) == []  # twice changes nothing


def test_undoing_a_background_addition_deletes_just_that_memory(product: Product) -> None:
    product.say("I live in Pune.")
    product.go_quiet()
    [notice] = product.notices.pending(ALICE)

    product.notices.undo(ALICE, notice.notice_id)

    assert texts(product, status=None) == []


def test_undo_leaves_alone_what_the_user_corrected_since(product: Product) -> None:
    product.say("I live in Pune.")
    product.go_quiet()
    [notice] = product.notices.pending(ALICE)
    [pune] = product.stores.memories.iter_memories(ALICE)
    product.memories.correct(ALICE, pune.memory_id, text="Lives in Pune, near the station.")

    assert product.notices.undo(ALICE, notice.notice_id) == []

    assert texts(product) == ["Lives in Pune, near the station."]
