"""When a conversation is read (seed 003, "writes stay off the critical path"): a cold
profile after two minutes of quiet, a warm one after ten; at once, in deep mode, when the
user asks to remember the conversation; in deep mode when the daily sweep catches one up."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.domain.extraction import (
    DAILY_CAP,
    MAX_CANDIDATES,
    ExtractionRun,
    run_from_json,
    run_id_for,
    run_to_json,
)
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import NewMemory
from chatmemory.services.profile import PROFILE_DEBOUNCE
from tests.support import builders
from tests.support.product import ALICE, Product

COLD = timedelta(seconds=120)
WARM = timedelta(seconds=600)


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def said_at(product: Product, conversation_id: str) -> datetime:
    conversation = product.stores.conversations.get_conversation(ALICE, conversation_id)
    assert conversation is not None and conversation.last_user_message_at is not None
    return conversation.last_user_message_at


def know(product: Product, how_many: int, *, days_ago: int = 1) -> None:
    """Memories the user already has, written through their own controls (yesterday by
    default: today's would count against the day's cap on new memories)."""
    now = product.clock.now()
    product.clock.set(now - timedelta(days=days_ago))
    for number in range(how_many):
        product.memories.create(
            ALICE, NewMemory(text=f"Has been to city number {number}.", category="travel")
        )
    product.clock.advance(PROFILE_DEBOUNCE)
    product.jobs.run_due()  # the profile they asked for is rebuilt, as the worker would
    product.clock.set(now)


def read_upto(product: Product, conversation_id: str) -> int:
    conversation = product.stores.conversations.get_conversation(ALICE, conversation_id)
    assert conversation is not None
    return conversation.extracted_upto_seq


def last_run(product: Product, conversation_id: str) -> ExtractionRun | None:
    conversation = product.stores.conversations.get_conversation(ALICE, conversation_id)
    assert conversation is not None
    run_id = run_id_for(ALICE, conversation_id, conversation.last_seq)
    return product.stores.runs.get_extraction_run(ALICE, run_id)


def test_a_cold_users_conversation_is_read_two_minutes_after_their_last_message(
    product: Product,
) -> None:
    # Given a new user's first message
    conversation = product.say("I'm vegetarian and I live in Pune.").conversation_id
    said = said_at(product, conversation)

    # When 119 seconds have passed, nothing is read, and the check agrees it is too early
    product.clock.set(said + COLD - timedelta(seconds=1))
    assert product.jobs.run_due() == 0
    assert product.idle.check(ALICE, conversation) is False
    assert product.active() == []

    # Then at 120 seconds the timer fires and the facts land, in a normal run
    product.clock.set(said + COLD)
    assert product.jobs.run_due() == 1
    assert product.active() == ["Is vegetarian.", "Lives in Pune."]
    run = last_run(product, conversation)
    assert run is not None and run.deep is False


def test_a_warm_users_conversation_waits_ten_minutes(product: Product) -> None:
    # Given a user the assistant already knows twenty things about
    know(product, 20)
    conversation = product.say("I work as a nurse.").conversation_id
    said = said_at(product, conversation)

    # When two minutes, then 599 seconds, have passed: not yet
    product.clock.set(said + COLD)
    assert product.jobs.run_due() == 0
    assert product.idle.check(ALICE, conversation) is False
    product.clock.set(said + WARM - timedelta(seconds=1))
    assert product.jobs.run_due() == 0
    assert product.idle.check(ALICE, conversation) is False
    assert "Works as a nurse." not in product.active()

    # Then at ten minutes it is read
    product.clock.set(said + WARM)
    assert product.jobs.run_due() == 1
    assert "Works as a nurse." in product.active()


def test_nineteen_memories_are_still_a_cold_profile(product: Product) -> None:
    know(product, 19)
    conversation = product.say("I work as a nurse.").conversation_id

    product.clock.set(said_at(product, conversation) + COLD)

    assert product.jobs.run_due() == 1
    assert "Works as a nurse." in product.active()


def test_memories_written_after_the_message_never_hold_back_its_timer(
    product: Product,
) -> None:
    # Given a new user's message, its timer armed for the cold delay
    conversation = product.say("I'm vegetarian.").conversation_id
    said = said_at(product, conversation)

    # And twenty memories written a minute later (another conversation's run, the API)
    product.clock.set(said + timedelta(seconds=60))
    know(product, 20, days_ago=0)

    # When the timer fires, the check judges by what was known when the user spoke
    product.clock.set(said + COLD)
    assert product.jobs.run_due() == 1

    # Then the conversation is read, not left for the daily sweep
    assert read_upto(product, conversation) > 0


def test_an_earlier_check_of_a_warm_burst_does_not_read_it_early(product: Product) -> None:
    # Given a known user's two messages, 200 seconds apart (on AWS each leaves a check)
    know(product, 20)
    conversation = product.say("I work as a nurse.").conversation_id
    first = said_at(product, conversation)
    product.clock.set(first + timedelta(seconds=200))
    product.say("I live in Pune.", conversation)
    last = said_at(product, conversation)

    # When the first message's check arrives, ten minutes after it
    product.clock.set(first + WARM)

    # Then it starts nothing: the conversation is quiet for the cold delay, not the warm one
    assert product.idle.check(ALICE, conversation) is False
    # And the last message's check, ten minutes after the last message, reads both
    product.clock.set(last + WARM)
    assert product.idle.check(ALICE, conversation) is True
    assert {"Works as a nurse.", "Lives in Pune."} <= set(product.active())


def test_remember_this_conversation_reads_it_at_once_in_deep_mode(product: Product) -> None:
    # Given a known user (a warm profile would wait ten minutes)
    know(product, 20)
    conversation = product.say("I'm vegetarian and I live in Pune.").conversation_id

    # When they ask for the conversation to be remembered
    product.say("Please remember this conversation.", conversation)

    # Then its timer is due at once, and the run reads the whole conversation in deep mode
    assert product.jobs.run_due() == 1
    assert {"Is vegetarian.", "Lives in Pune."} <= set(product.active())
    run = last_run(product, conversation)
    assert run is not None and run.deep is True
    state = product.stores.conversations.get_conversation(ALICE, conversation)
    assert state is not None and state.extracted_upto_seq == state.last_seq
    # And the request itself was remembered as no fact
    assert not any("conversation" in text.lower() for text in product.active())


def test_a_second_check_while_the_asked_for_run_is_under_way_starts_nothing(
    product: Product,
) -> None:
    # Given a request to remember the conversation, whose run has extracted but not yet
    # routed (on AWS: an execution in flight; the cursor has not moved)
    conversation = product.say("I'm vegetarian and I live in Pune.").conversation_id
    product.say("Please remember this conversation.", conversation)
    state = product.stores.conversations.get_conversation(ALICE, conversation)
    assert state is not None
    assert product.pipeline.extract(ALICE, conversation, state.last_seq, True).candidates > 0

    # When an earlier message's check arrives meanwhile
    started = product.idle.check(ALICE, conversation)

    # Then it does not start the same slice again
    assert started is False


def test_a_question_about_the_past_is_no_request_to_read_now(product: Product) -> None:
    conversation = product.say("Do you remember this conversation?").conversation_id

    assert product.jobs.run_due() == 0
    assert last_run(product, conversation) is None


def test_the_daily_sweep_reads_what_the_timers_missed_in_deep_mode(product: Product) -> None:
    # Given a conversation whose idle timer was lost
    conversation = product.say("I'm vegetarian and I live in Pune.").conversation_id
    product.clock.advance(timedelta(hours=3))

    # When the scheduled sweep runs
    assert product.idle.sweep(deep=True) == 1

    # Then it read the conversation in deep mode
    run = last_run(product, conversation)
    assert run is not None and run.deep is True
    assert product.active() == ["Is vegetarian.", "Lives in Pune."]


def test_a_flush_reads_as_the_timers_would_have(product: Product) -> None:
    conversation = product.say("I'm vegetarian.").conversation_id

    assert product.idle.sweep(now_or_never=True) == 1

    run = last_run(product, conversation)
    assert run is not None and run.deep is False


def test_a_deep_read_keeps_more_than_a_normal_reads_cap(
    product: Product, clock: ManualClock
) -> None:
    # Given two conversations saying the same sixteen things worth keeping
    things = [
        "jazz", "hiking", "green tea", "chess", "the violin", "Spanish films", "old maps",
        "spicy food", "long walks", "board games", "kayaking", "poetry", "gardening",
        "astronomy", "pottery", "sourdough",
    ]  # fmt: skip
    slices = []
    for _ in range(2):
        conversation = builders.conversation(ALICE, clock.now())
        messages = []
        for thing in things:
            said = f"Remember that I love {thing}."
            messages += [
                NewMessage(Role.USER, said, estimate_tokens(said)),
                NewMessage(Role.ASSISTANT, "Noted.", 1),
            ]
        stored = product.stores.conversations.append_messages(
            ALICE, conversation.conversation_id, messages, clock.now(), create=conversation
        )
        slices.append((conversation.conversation_id, stored[-1].seq))

    # When one is read normally and the other in deep mode
    (normal_id, normal_upto), (deep_id, deep_upto) = slices
    normal = product.pipeline.extract(ALICE, normal_id, normal_upto)
    deep = product.pipeline.extract(ALICE, deep_id, deep_upto, True)

    # Then the normal read stops at its cap, the deep one keeps all sixteen
    assert normal.candidates == MAX_CANDIDATES == DAILY_CAP
    assert deep.candidates == len(things)


def test_a_run_keeps_whether_it_was_deep(stores: Stores, clock: ManualClock) -> None:
    now = clock.now()
    run = ExtractionRun(
        user_id=ALICE,
        run_id="run_deep1",
        conversation_id="conv_deep1",
        persona="assistant",
        from_seq=0,
        upto_seq=4,
        created_at=now,
        expires_at=now + timedelta(days=7),
        deep=True,
    )

    stores.runs.put_extraction_run(run)

    assert stores.runs.get_extraction_run(ALICE, "run_deep1") == run


def test_a_run_written_before_deep_mode_reads_as_not_deep(clock: ManualClock) -> None:
    now = clock.now()
    run = ExtractionRun(
        user_id=ALICE,
        run_id="run_old1",
        conversation_id="conv_old1",
        persona="assistant",
        from_seq=0,
        upto_seq=2,
        created_at=now,
        expires_at=now + timedelta(days=7),
    )
    stored = run_to_json(run)
    del stored["deep"]

    assert run_from_json(stored).deep is False
