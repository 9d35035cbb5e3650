"""Beliefs with a shelf life: retention, due_in, archiving, the spacing effect, the cap."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain import fading
from chatmemory.domain.fading import Archived
from chatmemory.domain.memory import Kind, Status
from tests.support import builders

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def days(count: float) -> timedelta:
    return timedelta(days=count)


def test_facts_last_years_and_moods_last_days() -> None:
    # Given the reviewed table
    fact = builders.memory("alice", "Has two sisters.", NOW, category="family")
    mood = builders.memory("alice", "Feels low this week.", NOW, category="mood")
    # Then a family fact is years, a mood days
    assert fading.stability(fact) >= 365 * 3
    assert fading.stability(mood) <= 7


def test_a_state_kind_keeps_its_short_life_in_a_long_lived_category() -> None:
    appointment = builders.memory(
        "alice", "Has a dentist appointment on Friday.", NOW, category="family", kind=Kind.EVENT
    )
    assert fading.stability(appointment) == fading.KIND_STABILITY_DAYS[Kind.EVENT]


def test_retention_is_exp_minus_t_over_s() -> None:
    mood = builders.memory("alice", "Feels low.", NOW, category="mood")
    s = fading.stability(mood)
    assert fading.retention(mood, NOW) == 1.0
    assert fading.retention(mood, NOW + days(2)) == pytest.approx(math.exp(-2 / s))


def test_a_belief_falls_due_at_half_retention_and_archives_below_a_third() -> None:
    mood = builders.memory("alice", "Feels low.", NOW, category="mood")  # S = 3 days
    due = NOW + days(3 * math.log(2))
    assert fading.due_at(mood) == due
    # Due but still in use: overdue is what a reply may mention
    overdue = NOW + days(3)
    assert fading.describe_due(fading.due_in(mood, overdue)) == "overdue by a day"
    assert fading.archived(mood, overdue) is None
    # Below R = 0.3 it is archived
    faded = NOW + days(3 * math.log(1 / 0.3) + 0.01)
    assert fading.archived(mood, faded) is Archived.FADED
    assert not fading.in_use(mood, faded)


def test_valid_until_is_the_shelf_life_when_there_is_one() -> None:
    renewal = builders.memory(
        "alice", "Passport renewal is due.", NOW, valid_until=NOW + days(2), category="travel"
    )
    assert fading.due_in(renewal, NOW) == days(2)
    assert fading.describe_due(fading.due_in(renewal, NOW)) == "2 days left"


@pytest.mark.parametrize(
    ("left", "said"),
    [
        (timedelta(hours=5), "due today"),
        (days(2), "2 days left"),
        (days(8), "a week left"),
        (days(20), "3 weeks left"),
        (days(90), "3 months left"),
        (days(400), "a year left"),
        (days(900), "2 years left"),
        (days(4000), "years left"),
        (-days(7), "overdue by a week"),
        (-days(3), "overdue by 3 days"),
    ],
)
def test_a_shelf_life_reads_as_people_say_it(left: timedelta, said: str) -> None:
    assert fading.describe_due(left) == said


def test_repeating_what_was_just_heard_adds_little_and_what_was_fading_adds_a_lot() -> None:
    mood = builders.memory("alice", "Feels low.", NOW, category="mood")
    soon = fading.reinforced(mood, NOW + timedelta(minutes=5))
    late = fading.reinforced(mood, NOW + days(3))
    assert soon.stability_days is not None and late.stability_days is not None
    assert soon.stability_days < 3.01
    r = math.exp(-1)
    assert late.stability_days == pytest.approx(3 * (1 + fading.SPACING_GAIN * (1 - r)), 1e-3)
    assert late.reinforced_at == NOW + days(3)


def test_new_evidence_revives_an_archived_belief() -> None:
    mood = builders.memory("alice", "Feels low.", NOW, category="mood")
    later = NOW + days(10)
    assert fading.archived(mood, later) is Archived.FADED
    revived = fading.reinforced(mood, later)
    assert fading.archived(revived, later) is None
    capped = fading.set_aside(revived, later)
    assert fading.archived(capped, later) is Archived.CAPPED
    assert fading.archived(fading.reinforced(capped, later), later) is None


def test_a_memory_no_evidence_touched_for_a_year_archives() -> None:
    family = builders.memory("alice", "Has two sisters.", NOW, category="family")
    assert fading.archived(family, NOW + days(364)) is None
    assert fading.archived(family, NOW + days(366)) is Archived.UNUSED
    used = family.with_changes(last_used_at=NOW + days(200))
    assert fading.archived(used, NOW + days(366)) is None


@pytest.mark.parametrize("kind", [Kind.THREAD, Kind.PROMISE, Kind.OPEN_LOOP])
def test_what_is_kept_until_closed_and_history_never_archive_here(kind: Kind) -> None:
    # A thread, a promise, an open loop: overdue, perhaps, but never silently out of use
    open_item = builders.memory("alice", "Is job-hunting.", NOW, kind=kind)
    assert fading.archived(open_item, NOW + days(5000)) is None
    closed = builders.memory(
        "alice", "Lived in Delhi.", NOW, status=Status.CLOSED, valid_to=NOW, category="mood"
    )
    assert fading.archived(closed, NOW + days(50)) is None


def test_the_cap_sets_aside_the_weakest_by_retention_times_importance() -> None:
    strong = [
        builders.memory("alice", f"Fact {n}.", NOW, category="family", importance=8)
        for n in range(4)
    ]
    weak = builders.memory("alice", "Feels low.", NOW - days(2), category="mood", importance=3)
    weaker = builders.memory("alice", "Feels tired.", NOW - days(3), category="mood", importance=3)
    surplus = fading.over_cap([*strong, weak, weaker], NOW, cap=4)
    assert [m.text for m in surplus] == ["Feels tired.", "Feels low."]
    assert fading.over_cap(strong, NOW, cap=4) == []


@given(
    st.floats(min_value=0, max_value=3000), st.sampled_from(sorted(fading.CATEGORY_STABILITY_DAYS))
)
def test_retention_only_falls_with_time_and_stays_in_zero_one(
    elapsed: float, category: str
) -> None:
    memory = builders.memory("alice", "Something.", NOW, category=category)
    earlier = fading.retention(memory, NOW + days(elapsed))
    later = fading.retention(memory, NOW + days(elapsed + 1))
    assert 0.0 <= later <= earlier <= 1.0
