"""The rhythm store's contract (seed 003), on both backends: one state per user, written
by compare-and-set on its version; and the time zone setting the rhythm is read in."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import ConcurrentChange
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.rhythm import Rhythm, Slot, observe, promote, remembered
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import ALICE, BOB, concurrently

MONDAY = date(2026, 11, 30)


def evenings(days: int, state: Rhythm | None = None) -> Rhythm:
    """A state sampled at 22:10 on `days` evenings from Monday."""
    state = state or Rhythm()
    for n in range(days):
        day = MONDAY + timedelta(days=n)
        state = observe(state, datetime(day.year, day.month, day.day, 22, 10, tzinfo=UTC))
    return state


def test_a_user_with_no_rhythm_reads_none(stores: Stores) -> None:
    assert stores.rhythm.get_rhythm(ALICE) is None


def test_a_rhythm_reads_back_whole_with_its_version(stores: Stores) -> None:
    # Given a state with counters, samples, a consumed slot and a promoted pattern
    state, _ = promote(evenings(3), MONDAY + timedelta(days=2))
    state = remembered(state, "weekdays_22", "mem_rhythm")
    state = observe(state, datetime(2026, 12, 5, 8, 30, tzinfo=UTC))
    # When it is stored for the first time
    stored = stores.rhythm.put_rhythm(ALICE, state)
    # Then it reads back exactly, at version 1
    assert stored == dataclasses.replace(state, version=1)
    assert stores.rhythm.get_rhythm(ALICE) == stored


def test_a_write_from_a_version_that_moved_on_is_refused(stores: Stores) -> None:
    # Given a state stored once
    first = stores.rhythm.put_rhythm(ALICE, evenings(1))
    # When one writer stores its change and another writes from the version both read
    second = stores.rhythm.put_rhythm(ALICE, evenings(2, Rhythm(version=first.version)))
    with pytest.raises(ConcurrentChange):
        stores.rhythm.put_rhythm(ALICE, dataclasses.replace(evenings(3), version=first.version))
    # Then the first write stands and the late one wrote nothing
    assert second.version == 2
    assert stores.rhythm.get_rhythm(ALICE) == second


def test_a_first_write_loses_to_a_state_already_there(stores: Stores) -> None:
    stores.rhythm.put_rhythm(ALICE, evenings(1))
    with pytest.raises(ConcurrentChange):
        stores.rhythm.put_rhythm(ALICE, evenings(2))  # version 0: "none stored yet"
    stored = stores.rhythm.get_rhythm(ALICE)
    assert stored is not None and stored.observations == {Slot(MONDAY, 22)}


def test_concurrent_samplers_never_lose_each_others_sample(stores: Stores) -> None:
    # Given three turns sampling different hours at once, each re-reading when it loses
    hours = {"w0": 20, "w1": 21, "w2": 22}

    def sample(name: str) -> None:
        instant = datetime(2026, 11, 30, hours[name], 5, tzinfo=UTC)
        for _ in range(50):
            current = stores.rhythm.get_rhythm(ALICE) or Rhythm()
            try:
                stores.rhythm.put_rhythm(ALICE, observe(current, instant))
                return
            except ConcurrentChange:
                continue
        raise AssertionError("never won a write")

    # When they run together
    errors = concurrently(sample)
    # Then every sample landed
    assert errors == []
    stored = stores.rhythm.get_rhythm(ALICE)
    assert stored is not None
    assert {slot.hour for slot in stored.observations} == {20, 21, 22}
    assert sum(map(sum, stored.counters)) == 3


def test_delete_forgets_the_rhythm_and_the_next_starts_afresh(stores: Stores) -> None:
    # Given Alice's and Bob's rhythms
    stores.rhythm.put_rhythm(ALICE, evenings(2))
    bobs = stores.rhythm.put_rhythm(BOB, evenings(1))
    # When Alice's is deleted (twice: a second delete finds nothing and is fine)
    stores.rhythm.delete_rhythm(ALICE)
    stores.rhythm.delete_rhythm(ALICE)
    # Then hers is gone, Bob's is untouched, and a new one of hers starts at version 1
    assert stores.rhythm.get_rhythm(ALICE) is None
    assert stores.rhythm.get_rhythm(BOB) == bobs
    assert stores.rhythm.put_rhythm(ALICE, evenings(1)).version == 1


def test_a_write_from_before_a_delete_is_refused(stores: Stores) -> None:
    # Given a state read at version 1, then deleted ("forget everything")
    read = stores.rhythm.put_rhythm(ALICE, evenings(1))
    stores.rhythm.delete_rhythm(ALICE)
    # Then a write from what was read cannot bring it back
    with pytest.raises(ConcurrentChange):
        stores.rhythm.put_rhythm(ALICE, evenings(2, read))
    assert stores.rhythm.get_rhythm(ALICE) is None


# ---- the time zone a rhythm is read in ----------------------------------------------------


def test_the_time_zone_defaults_to_utc_and_round_trips(stores: Stores, clock: ManualClock) -> None:
    assert stores.user_state.get_settings(ALICE).timezone == "UTC"
    saved = MemorySettings(
        user_id=ALICE,
        note="Prefers short answers.",
        timezone="America/Argentina/Salta",
        updated_at=clock.now(),
    )

    stores.user_state.put_settings(saved)

    assert stores.user_state.get_settings(ALICE) == saved
    assert stores.user_state.get_settings(BOB).timezone == "UTC"
