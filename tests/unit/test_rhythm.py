"""Rhythm (seed 003): when someone chats, sampled into slots and promoted to a belief on the
third distinct day within ±1 hour — pure rules, no store."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmemory.domain import rules, write_filter
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.rhythm import (
    CONFIRM_WITHIN_DAYS,
    DayClass,
    Outcome,
    Pattern,
    Rhythm,
    Slot,
    as_record,
    belief_key,
    decline,
    describe,
    from_record,
    observe,
    promote,
    remembered,
    stale,
)

MONDAY = date(2026, 11, 30)  # a Monday
SATURDAY = date(2026, 12, 5)


def at(day: date, hour: int, minute: int = 0) -> datetime:
    """A local instant (the tests read everything in UTC unless they say otherwise)."""
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def observed(*instants: datetime, state: Rhythm | None = None) -> Rhythm:
    for instant in instants:
        state = observe(state or Rhythm(), instant)
    return state or Rhythm()


def evenings(first: date, days: int, hour: int = 22, minute: int = 10) -> list[datetime]:
    return [at(first + timedelta(days=n), hour, minute) for n in range(days)]


def promoted_keys(promotions: Iterable[object]) -> list[str]:
    return [p.pattern.key for p in promotions]  # type: ignore[attr-defined]


# ---- sampling -----------------------------------------------------------------------------


def test_two_messages_in_one_hour_are_one_sample() -> None:
    # Given a message at 22:10
    once = observed(at(MONDAY, 22, 10))
    # When another comes at 22:50 the same day
    again = observe(once, at(MONDAY, 22, 50))
    # Then the state is unchanged: one slot, counted once
    assert again is once
    assert once.observations == {Slot(MONDAY, 22)}
    assert once.counters[MONDAY.weekday()][22] == 1
    assert sum(map(sum, once.counters)) == 1


def test_counters_count_slots_by_weekday_and_local_hour() -> None:
    # Given samples on two Mondays at 22:00 and one Saturday at 08:00
    state = observed(at(MONDAY, 22), at(MONDAY + timedelta(days=7), 22), at(SATURDAY, 8))
    # Then each lands in its weekday and hour
    assert state.counters[0][22] == 2
    assert state.counters[5][8] == 1
    assert sum(map(sum, state.counters)) == 3


def test_samples_older_than_thirty_days_are_forgotten() -> None:
    # Given a sample on the first of the month
    state = observed(at(MONDAY, 22))
    # When the next comes 31 days later
    later = observe(state, at(MONDAY + timedelta(days=31), 22))
    # Then only the recent one is kept (the counters keep both)
    assert later.observations == {Slot(MONDAY + timedelta(days=31), 22)}
    assert later.counters[MONDAY.weekday()][22] + later.counters[3][22] == 2


# ---- promotion: the third distinct day, within ±1 hour ------------------------------------


def test_the_second_distinct_day_does_not_promote() -> None:
    # Given two evenings at 22:xx
    state = observed(*evenings(MONDAY, 2))
    # When promotion runs
    after, promotions = promote(state, MONDAY + timedelta(days=1))
    # Then nothing is believed and nothing is consumed
    assert promotions == []
    assert after.observations == state.observations


def test_the_third_distinct_day_promotes_a_weekday_evening() -> None:
    # Given three weekday evenings at 22:10, 22:30 and 22:40
    state = observed(at(MONDAY, 22, 10), at(MONDAY + timedelta(1), 22, 30))
    state = observed(at(MONDAY + timedelta(2), 22, 40), state=state)
    # When promotion runs on the third day
    after, promotions = promote(state, MONDAY + timedelta(days=2))
    # Then one new pattern is promoted, and its sentence says so
    assert len(promotions) == 1
    promotion = promotions[0]
    assert promotion.outcome is Outcome.NEW
    assert promotion.pattern.key == "weekdays_22"
    assert promotion.days == (MONDAY, MONDAY + timedelta(1), MONDAY + timedelta(2))
    assert describe(promotion.pattern) == "Usually chats late on weekday evenings (around 22:00)."
    assert after.pattern("weekdays_22") == Pattern(
        day_class=DayClass.WEEKDAYS, hour=22, confirmed_on=MONDAY + timedelta(days=2)
    )
    # And the samples it rests on are consumed
    assert after.observations == frozenset()
    assert after.consumed == state.observations


def test_samples_within_an_hour_of_the_centre_count_together() -> None:
    # Given evenings at 21:50, 22:10 and 23:05
    state = observed(at(MONDAY, 21, 50), at(MONDAY + timedelta(1), 22, 10))
    state = observed(at(MONDAY + timedelta(2), 23, 5), state=state)
    # When promotion runs
    _, promotions = promote(state, MONDAY + timedelta(days=2))
    # Then they make one pattern centred on 22:00
    assert promoted_keys(promotions) == ["weekdays_22"]


def test_samples_two_hours_apart_do_not_make_a_pattern() -> None:
    # Given evenings at 19:00, 21:00 and 23:00 (each two hours from the next)
    state = observed(at(MONDAY, 19), at(MONDAY + timedelta(1), 21), at(MONDAY + timedelta(2), 23))
    # Then no hour has three days within ±1 hour
    assert promote(state, MONDAY + timedelta(days=2))[1] == []


def test_two_samples_on_one_day_count_as_one_day() -> None:
    # Given Monday at 21:00 and 22:00, and Tuesday at 22:00
    state = observed(at(MONDAY, 21), at(MONDAY, 22), at(MONDAY + timedelta(1), 22))
    # Then that is two days, not three
    assert promote(state, MONDAY + timedelta(days=1))[1] == []


def test_one_late_night_across_midnight_counts_as_one_day() -> None:
    # Given Monday at 23:30 and the same night at 00:20, then Tuesday at 23:10
    state = observed(
        at(MONDAY, 23, 30), at(MONDAY + timedelta(1), 0, 20), at(MONDAY + timedelta(1), 23, 10)
    )
    # Then that is two nights: no pattern yet
    assert promote(state, MONDAY + timedelta(days=1))[1] == []
    # When a third night comes (Wednesday at 23:45)
    state = observe(state, at(MONDAY + timedelta(2), 23, 45))
    # Then the late-night pattern is promoted, one day per night
    _, promotions = promote(state, MONDAY + timedelta(days=2))
    assert [p.pattern.key for p in promotions] == ["weekdays_23"]
    assert promotions[0].days == (MONDAY, MONDAY + timedelta(1), MONDAY + timedelta(2))


def test_consumed_samples_never_promote_again() -> None:
    # Given a pattern promoted on the third evening
    state = observed(*evenings(MONDAY, 3))
    after, _ = promote(state, MONDAY + timedelta(days=2))
    # When promotion runs again, and a fourth evening comes, and another message that hour
    again, nothing = promote(after, MONDAY + timedelta(days=2))
    fourth = observe(again, at(MONDAY + timedelta(3), 22, 5))
    fourth = observe(fourth, at(MONDAY + timedelta(2), 22, 59))  # a consumed slot
    _, still_nothing = promote(fourth, MONDAY + timedelta(days=3))
    # Then nothing is promoted twice
    assert nothing == [] and still_nothing == []
    assert fourth.observations == {Slot(MONDAY + timedelta(3), 22)}


def test_three_more_days_reconfirm_the_known_pattern() -> None:
    # Given a promoted pattern whose belief was written
    state, _ = promote(observed(*evenings(MONDAY, 3)), MONDAY + timedelta(days=2))
    state = remembered(state, "weekdays_22", "mem_rhythm")
    # When three more weekday evenings come, one an hour later
    later = [
        at(MONDAY + timedelta(7), 22),
        at(MONDAY + timedelta(8), 23),
        at(MONDAY + timedelta(9), 23),
    ]
    state = observed(*later, state=state)
    after, promotions = promote(state, MONDAY + timedelta(days=9))
    # Then the known pattern is re-confirmed, its belief kept: no second one
    assert [(p.pattern.key, p.outcome) for p in promotions] == [("weekdays_22", Outcome.CONFIRMED)]
    pattern = after.pattern("weekdays_22")
    assert pattern is not None and pattern.memory_id == "mem_rhythm"
    assert pattern.confirmed_on == MONDAY + timedelta(days=9)
    assert [p.key for p in after.patterns] == ["weekdays_22"]


def test_weekend_mornings_and_every_day_are_told_apart() -> None:
    # Given Saturday and Sunday mornings over two weekends
    weekend = observed(at(SATURDAY, 8, 15), at(SATURDAY + timedelta(1), 8, 40))
    weekend = observe(weekend, at(SATURDAY + timedelta(7), 9, 5))
    # And evenings on Friday, Saturday and Sunday
    mixed = observed(*evenings(SATURDAY - timedelta(days=1), 3, hour=19))
    # Then the days decide the words
    weekend_pattern = promote(weekend, SATURDAY + timedelta(days=7))[1][0].pattern
    mixed_pattern = promote(mixed, SATURDAY + timedelta(days=1))[1][0].pattern
    assert weekend_pattern.key == "weekends_08"
    assert describe(weekend_pattern) == "Usually chats in the morning at weekends (around 08:00)."
    assert mixed_pattern.key == "daily_19"
    assert describe(mixed_pattern) == "Usually chats in the evening (around 19:00)."


def test_two_patterns_in_the_samples_are_both_promoted() -> None:
    # Given three mornings and three evenings
    state = observed(*evenings(MONDAY, 3, hour=7), *evenings(MONDAY, 3, hour=22))
    # Then each becomes its own pattern
    _, promotions = promote(state, MONDAY + timedelta(days=2))
    assert sorted(promoted_keys(promotions)) == ["weekdays_07", "weekdays_22"]


# ---- declined and stale -------------------------------------------------------------------


def test_a_declined_pattern_is_never_promoted_again() -> None:
    # Given a promoted pattern whose belief the user deleted
    state, _ = promote(observed(*evenings(MONDAY, 3)), MONDAY + timedelta(days=2))
    state = decline(remembered(state, "weekdays_22", "mem_rhythm"), "weekdays_22")
    # When the same hour comes back on other days (a weekend among them), an hour off
    state = observed(*evenings(SATURDAY, 3, hour=21), state=state)
    after, promotions = promote(state, SATURDAY + timedelta(days=2))
    # Then it stays declined: its samples are consumed, and nothing new is believed
    assert [p.outcome for p in promotions] == [Outcome.DECLINED]
    assert [(p.key, p.declined) for p in after.patterns] == [("weekdays_22", True)]
    assert after.observations == frozenset()


def test_a_pattern_unconfirmed_for_thirty_days_goes_stale() -> None:
    # Given a pattern confirmed on Wednesday
    confirmed = MONDAY + timedelta(days=2)
    state, _ = promote(observed(*evenings(MONDAY, 3)), confirmed)
    # Then it is kept for 30 days, and stale the day after
    assert stale(state, confirmed + timedelta(days=CONFIRM_WITHIN_DAYS)) == []
    assert stale(state, confirmed + timedelta(days=CONFIRM_WITHIN_DAYS + 1)) == ["weekdays_22"]


def test_a_declined_pattern_never_goes_stale() -> None:
    state, _ = promote(observed(*evenings(MONDAY, 3)), MONDAY)
    state = decline(state, "weekdays_22")
    assert stale(state, MONDAY + timedelta(days=365)) == []


# ---- the user's time zone -----------------------------------------------------------------


def test_the_time_zone_shifts_the_hour_and_the_weekday() -> None:
    # Given a message on Friday at 23:30 UTC from someone in Tokyo (UTC+9)
    friday_night_utc = datetime(2026, 12, 4, 23, 30, tzinfo=UTC)
    tokyo = MemorySettings(user_id="alice", timezone="Asia/Tokyo").zone
    # When it is sampled in their zone
    state = observe(Rhythm(), friday_night_utc.astimezone(tokyo))
    # Then it is Saturday morning for them
    assert state.observations == {Slot(SATURDAY, 8)}
    assert state.counters[5][8] == 1


def test_local_hours_hold_across_a_daylight_saving_change() -> None:
    # Given someone in London chatting at 22:30 local around the spring change (29 March)
    london = ZoneInfo("Europe/London")
    days = [date(2027, 3, 27), date(2027, 3, 28), date(2027, 3, 29)]
    local = [datetime(d.year, d.month, d.day, 22, 30, tzinfo=london) for d in days]
    instants = [moment.astimezone(UTC) for moment in local]
    assert {moment.hour for moment in instants} == {21, 22}  # the UTC hour moved
    # When each instant is sampled in their zone
    state = observed(*(instant.astimezone(london) for instant in instants))
    # Then the local hour stayed 22 and the pattern is promoted on the third day
    assert {slot.hour for slot in state.observations} == {22}
    _, promotions = promote(state, days[-1])
    assert [p.pattern.hour for p in promotions] == [22]


def test_an_unknown_time_zone_is_refused_by_name() -> None:
    for name in ("Mars/Olympus", "utc", "../etc/passwd", "/etc/localtime", "localtime", ""):
        with pytest.raises(InvalidField) as refused:
            MemorySettings(user_id="alice", timezone=name)
        assert refused.value.field == "timezone"
    assert MemorySettings(user_id="alice").timezone == "UTC"
    assert MemorySettings(user_id="alice", timezone="America/Argentina/Salta").zone is not None


# ---- the belief's words and the stored form -----------------------------------------------


def test_every_rhythm_sentence_is_a_storable_belief() -> None:
    for day_class in DayClass:
        for hour in range(24):
            pattern = Pattern(day_class=day_class, hour=hour, confirmed_on=MONDAY)
            sentence = describe(pattern)
            # standalone, third person, no name, and through the one write filter
            assert sentence.startswith("Usually chats ") and sentence.endswith(":00).")
            write_filter.check("text", sentence)
            rules.key(belief_key(pattern))


def test_the_state_round_trips_through_its_record() -> None:
    state, _ = promote(observed(*evenings(MONDAY, 4)), MONDAY + timedelta(days=3))
    state = remembered(state, "weekdays_22", "mem_rhythm")
    state = observe(state, at(SATURDAY, 9))
    assert from_record(as_record(state), version=state.version) == state


def test_a_record_that_is_not_a_rhythm_is_refused() -> None:
    with pytest.raises(InvalidField):
        from_record(
            {"counters": [[0] * 24] * 6, "observations": [], "consumed": [], "patterns": []}, 1
        )
    with pytest.raises(InvalidField):
        from_record(
            {
                "counters": [[0] * 24] * 7,
                "observations": ["2026-12-01T24"],
                "consumed": [],
                "patterns": [],
            },
            1,
        )


# ---- properties ---------------------------------------------------------------------------

_SAMPLES = st.lists(
    st.tuples(st.integers(0, 20), st.integers(0, 23), st.integers(0, 59)), max_size=60
)


@settings(max_examples=200, deadline=None)
@given(_SAMPLES)
def test_no_sample_is_ever_promoted_twice(samples: list[tuple[int, int, int]]) -> None:
    # Given any messages over three weeks, promoted as they come
    state = Rhythm()
    used: set[Slot] = set()
    for day, hour, minute in samples:
        today = MONDAY + timedelta(days=day)
        state = observe(state, at(today, hour, minute))
        before = state.observations
        state, promotions = promote(state, today)
        consumed = before - state.observations
        # Then each promotion rests on three distinct days, within its window
        for promotion in promotions:
            assert len(set(promotion.days)) >= 3
        # And a consumed sample was never consumed before, nor comes back
        assert not consumed & used
        used |= consumed
        assert not state.observations & used
    # And promoting again finds nothing new
    assert promote(state, MONDAY + timedelta(days=21))[1] == []
