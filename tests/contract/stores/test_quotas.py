"""The quota store's contract, on both backends: a count per user, quota and minute that
never lets more through than the limit, even when takes race."""

from __future__ import annotations

import threading
from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.domain.memory import Status
from chatmemory.domain.quotas import Quota, QuotaDecision
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import ALICE, BOB, concurrently
from tests.support import builders

TURNS = Quota("model_turns", per_minute=3)


def takes(stores: Stores, clock: ManualClock, times: int, quota: Quota = TURNS) -> list[bool]:
    return [stores.quotas.take(ALICE, quota, clock.now()).allowed for _ in range(times)]


def test_takes_under_the_limit_are_allowed(stores: Stores, clock: ManualClock) -> None:
    assert takes(stores, clock, 3) == [True, True, True]


def test_the_take_past_the_limit_is_refused_until_the_minute_ends(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a user who used their three turns 20 seconds into the minute
    clock.advance(timedelta(seconds=20))
    takes(stores, clock, 3)
    # When they take a fourth, and again 30.5 seconds later
    refused = stores.quotas.take(ALICE, TURNS, clock.now())
    clock.advance(timedelta(seconds=30, milliseconds=500))
    later = stores.quotas.take(ALICE, TURNS, clock.now())
    # Then both are refused, each told the whole seconds left in the minute
    assert refused == QuotaDecision(allowed=False, retry_after=40)
    assert later == QuotaDecision(allowed=False, retry_after=10)


def test_the_next_minute_starts_from_nothing(stores: Stores, clock: ManualClock) -> None:
    # Given a minute used up in its last second
    clock.advance(timedelta(seconds=59))
    takes(stores, clock, 4)
    # When the next minute begins
    clock.advance(timedelta(seconds=1))
    # Then its three turns are there again
    assert takes(stores, clock, 4) == [True, True, True, False]


def test_a_refused_take_counts_nothing(stores: Stores, clock: ManualClock) -> None:
    # Given a five-unit quota with three units taken
    five = Quota("model_turns", per_minute=5)
    assert stores.quotas.take(ALICE, five, clock.now(), cost=3).allowed
    # When a three-unit take is refused
    assert not stores.quotas.take(ALICE, five, clock.now(), cost=3).allowed
    # Then the two units left may still be taken, and no more
    assert stores.quotas.take(ALICE, five, clock.now(), cost=2).allowed
    assert not stores.quotas.take(ALICE, five, clock.now()).allowed


def test_a_take_costlier_than_the_whole_limit_fits_an_empty_minute(
    stores: Stores, clock: ManualClock
) -> None:
    assert stores.quotas.take(ALICE, TURNS, clock.now(), cost=5).allowed
    assert not stores.quotas.take(ALICE, TURNS, clock.now()).allowed


def test_users_and_quotas_count_apart(stores: Stores, clock: ManualClock) -> None:
    # Given Alice's turns used up
    takes(stores, clock, 3)
    # Then Bob's are untouched, and so is another quota of Alice's
    assert stores.quotas.take(BOB, TURNS, clock.now()).allowed
    assert stores.quotas.take(ALICE, Quota("reads", per_minute=1), clock.now()).allowed
    assert not stores.quotas.take(ALICE, TURNS, clock.now()).allowed


def test_a_quota_switched_off_never_refuses(stores: Stores, clock: ManualClock) -> None:
    assert all(takes(stores, clock, 50, Quota("model_turns", per_minute=0)))
    # and it counted nothing: a limited take afterwards still has its whole minute
    assert takes(stores, clock, 3) == [True, True, True]


def test_concurrent_takes_never_let_more_through_than_the_limit(
    stores: Stores, clock: ManualClock
) -> None:
    # Given five takes of one user racing for a limit of three
    outcomes: list[bool] = []
    lock = threading.Lock()

    def take(_: str) -> None:
        decision = stores.quotas.take(ALICE, TURNS, clock.now())
        with lock:
            outcomes.append(decision.allowed)

    # When they all run at once
    errors = concurrently(take, writers=5)
    # Then exactly three were allowed, and the others refused without an error
    assert errors == []
    assert sorted(outcomes) == [False] * 2 + [True] * 3


def test_what_a_user_has_stored_counts_every_memory_version_and_message(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Alice's two memories (one corrected, so three versions) and a conversation of
    # two messages; and Bob's one memory
    now = clock.now()
    pune = builders.memory(ALICE, "Lives in Pune.", now)
    assert stores.memories.add_memory(pune)
    assert stores.memories.add_memory(builders.memory(ALICE, "Plays chess.", now))
    lisbon = builders.memory(ALICE, "Lives in Lisbon.", now, supersedes=pune.memory_id)
    stores.memories.supersede_memory(ALICE, pune.memory_id, lisbon)
    assert stores.memories.get_memory(ALICE, pune.memory_id).status is Status.SUPERSEDED  # type: ignore[union-attr]
    assert stores.memories.add_memory(builders.memory(BOB, "Has a dog.", now))
    conversation = builders.conversation(ALICE, now)
    stores.conversations.append_messages(
        ALICE,
        conversation.conversation_id,
        [NewMessage(Role.USER, "hi", 1), NewMessage(Role.ASSISTANT, "hello", 1)],
        now,
        create=conversation,
    )

    # Then her count holds every version and message, and only hers
    stored = stores.quotas.stored(ALICE)
    assert (stored.memory_rows, stored.messages) == (3, 2)
    assert (stores.quotas.stored(BOB).memory_rows, stores.quotas.stored(BOB).messages) == (1, 0)
