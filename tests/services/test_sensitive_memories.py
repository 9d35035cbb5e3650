"""A sensitive fact is used only when directly relevant (seed 002, "Unwanted recall"), on
both stores: never in the always-on profile, a persona's block, the threads or the return
cue; recalled when a message is about it."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Kind, subject_for_user
from chatmemory.domain.rooms import Room, RoomKind
from chatmemory.ports.stores import Stores
from chatmemory.services.context import ContextRequest
from chatmemory.services.memories import NewMemory
from tests.support import builders
from tests.support.product import ALICE, Product


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def _profile(product: Product, message: str = "What is the capital of France?") -> str:
    built = product.context.build(ContextRequest(user_id=ALICE, message=message))
    return built.blocks.profile


def test_a_health_fact_asked_to_be_remembered_stays_out_of_the_profile(
    product: Product,
) -> None:
    # Given she asked to remember a health fact, beside an ordinary one, and the profile
    # was rebuilt from what she has
    product.say("Please remember that I have diabetes")
    product.say("Please remember that I live in Lisbon")
    product.pipeline.rebuild_profile(ALICE, "assistant")
    assert sorted(product.active()) == ["Has diabetes.", "Lives in Lisbon."]

    # When she asks something that has nothing to do with it
    profile = _profile(product)

    # Then the profile holds the city and not the diagnosis
    assert "Lives in Lisbon." in profile
    assert "diabetes" not in profile.lower()


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Is Catholic and goes to mass.", "religion"),
        ("Is bisexual.", "general"),
        ("Votes for the Green Party.", "politics"),
        ("Takes antidepressants.", "medical"),
        ("Has a criminal record from 2019.", "general"),
        ("Is in debt after the divorce.", "finance"),
    ],
)
def test_no_sensitive_category_or_wording_rides_in_the_profile(
    product: Product, text: str, category: str
) -> None:
    # Given a sensitive memory she typed herself (by its category, or by its words
    # whatever it was filed under), and an ordinary one
    product.memories.create(ALICE, NewMemory(text=text, category=category))
    product.memories.create(ALICE, NewMemory(text="Plays the cello.", category="hobbies"))

    # When the profile is rebuilt
    product.pipeline.rebuild_profile(ALICE, "assistant")

    # Then only the ordinary one is in it
    assert _profile(product) == "- Plays the cello."


def test_a_sensitive_fact_still_reaches_a_prompt_when_the_message_is_about_it(
    product: Product,
) -> None:
    # Given her health fact, out of the profile
    product.say("Please remember that I have diabetes")
    product.pipeline.rebuild_profile(ALICE, "assistant")

    # When she asks about it
    built = product.context.build(
        ContextRequest(user_id=ALICE, message="What snacks are fine with my diabetes?")
    )

    # Then per-turn recall brings it, and the list of memories used says so
    assert [line.text for line in built.blocks.memories] == ["Has diabetes."]
    assert [(u.memory_id, u.block.value) for u in built.used] == [
        (built.blocks.memories[0].memory_id, "memories")
    ]


def test_a_sensitive_thread_is_neither_followed_nor_cued_on_return(product: Product) -> None:
    # Given a thread about an operation and one about a job hunt, both ripe
    now = product.clock.now()
    for text, category in (
        ("Has knee surgery scheduled on 2026-12-10.", "health"),
        ("Is job-hunting: second round at Acme on 2026-12-03.", "work"),
    ):
        row = builders.memory(
            ALICE, text, now, kind=Kind.THREAD, category=category, meta={"cadence": "fast"}
        )
        assert product.stores.memories.add_memory(row)
    product.say("Hello there")
    product.clock.advance(timedelta(days=8))

    # When she comes back a week later
    built = product.context.build(ContextRequest(user_id=ALICE, message="Hi again"))

    # Then the job hunt is followed, the operation is not in the threads nor the cue
    shown = [thread.text for thread in built.blocks.threads]
    assert shown == ["Is job-hunting: second round at Acme on 2026-12-03."]
    assert "surgery" not in built.rendered.text().lower()


def test_a_persona_block_in_a_private_room_leaves_out_a_sensitive_fact(
    product: Product,
) -> None:
    # Given what Warren knows about Alice: a hobby and a diagnosis
    for text, category in (("Plays the cello.", "hobbies"), ("Has asthma.", "health")):
        row = builders.memory(
            ALICE,
            text,
            product.clock.now(),
            category=category,
            persona="warren",
            subject=subject_for_user(ALICE),
            witnessed=(ALICE,),
        )
        assert product.stores.memories.add_memory(row)

    # When Alice opens a private chat with Warren
    room = Room(
        room_id=f"room_{uuid.uuid4().hex}",
        kind=RoomKind.PRIVATE,
        created_at=product.clock.now(),
        personas=frozenset({"warren"}),
        members=frozenset({ALICE}),
    )
    opened = product.room_blocks.open(room)
    block = product.room_blocks.block(opened.room_id, "warren")

    # Then his always-in block holds the hobby and not the diagnosis
    assert "Plays the cello." in block.text
    assert "asthma" not in block.text.lower()
