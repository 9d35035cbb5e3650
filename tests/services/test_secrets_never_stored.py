"""Secrets are never stored, on any path — and a fact said beside one is still kept.

Regression: a card written 4111.1111.1111.1111 or split by zero-width characters,
"I log in with sunflower123 as my password" and cloud keys were stored; and a message
holding a secret and a fact ("my PIN is 4821 and I'm allergic to peanuts") lost both.
"""

from __future__ import annotations

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import SecretRefused
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import NewMemory
from tests.support.product import ALICE, Product

SECRETS = ["4821", "sunflower123", "4111", "wJalrXUtnFEMI"]


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def everything_stored(product: Product) -> str:
    """Every memory, notice and summary the user has, as one text."""
    stores = product.stores
    parts = [m.text for m in stores.memories.iter_memories(ALICE, MemoryQuery(status=None))]
    parts += [n.text for n in stores.notices.list_notices(ALICE, include_undone=True)]
    parts += [c.summary for c in stores.conversations.list_conversations(ALICE)]
    profile = stores.user_state.get_profile(ALICE)
    return "\n".join([*parts, profile.text if profile else ""])


def test_a_fact_said_beside_a_secret_is_kept_and_the_secret_is_not(product: Product) -> None:
    turn = product.say("remember that my PIN is 4821 and I'm allergic to peanuts")
    product.say(
        "Also my PIN is 4821 and I work as a teacher at Oakridge School.", turn.conversation_id
    )

    product.go_quiet()

    texts = sorted(m.text for m in product.stores.memories.iter_memories(ALICE))
    assert texts == ["Is allergic to peanuts.", "Works as a teacher at Oakridge School."]
    assert "4821" not in everything_stored(product)
    assert "secret" in turn.reply


@pytest.mark.parametrize(
    "message",
    [
        "remember that I log in with sunflower123 as my password",
        "remember that my card is 4111.1111.1111.1111",
        "remember that my card is 4111\u200b1111\u200b1111\u200b1111",
        "remember that aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ],
)
def test_a_secret_asked_to_be_remembered_is_stored_by_no_path(
    product: Product, message: str
) -> None:
    turn = product.say(message)
    product.go_quiet()

    assert turn.saved == []
    assert list(product.stores.memories.iter_memories(ALICE, MemoryQuery(status=None))) == []
    with pytest.raises(SecretRefused):
        product.memories.create(ALICE, NewMemory(text=message.removeprefix("remember that ")))


def test_a_summary_never_keeps_a_secret_said_in_the_turns_it_folds(product: Product) -> None:
    conversation = product.say(
        "My wifi password is sunflower123, can you help me set up a router?"
    ).conversation_id
    for turn in range(14):
        product.say(
            f"Turn {turn}: tell me more about routers and mesh networks please.", conversation
        )
    product.jobs.run_pending()  # folds run off the request path; drain them here

    summary = product.stores.conversations.get_conversation(ALICE, conversation)
    assert summary is not None and summary.summary_upto_seq > 0 and summary.summary
    assert "sunflower123" not in summary.summary
