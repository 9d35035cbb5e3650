"""The quota rule: fixed one-minute windows, the seconds left in one, what a take costs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.quotas import (
    Quota,
    seconds_to_window_end,
    window_end,
    window_key,
    window_start,
    would_allow,
)

AT = datetime(2026, 11, 30, 9, 15, 42, 250_000, tzinfo=UTC)
# the instants a clock of this service reads (keys are four-digit years)
INSTANTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(9000, 1, 1), timezones=st.just(UTC)
)


def test_a_window_is_the_minute_an_instant_falls_in() -> None:
    assert window_start(AT) == datetime(2026, 11, 30, 9, 15, tzinfo=UTC)
    assert window_end(AT) == datetime(2026, 11, 30, 9, 16, tzinfo=UTC)
    assert window_key(AT) == "2026-11-30T09:15Z"


def test_the_wait_is_the_whole_seconds_left_rounded_up() -> None:
    assert seconds_to_window_end(AT) == 18  # 17.75 s left
    assert seconds_to_window_end(window_start(AT)) == 60
    assert seconds_to_window_end(AT.replace(second=59, microsecond=999_999)) == 1


@given(INSTANTS)
def test_waiting_as_told_always_lands_in_the_next_window(now: datetime) -> None:
    wait = seconds_to_window_end(now)
    assert 1 <= wait <= 60
    later = now + timedelta(seconds=wait)
    assert window_start(later) == window_end(now)


@given(INSTANTS, INSTANTS)
def test_window_keys_sort_as_their_windows_do(a: datetime, b: datetime) -> None:
    if window_start(a) < window_start(b):
        assert window_key(a) < window_key(b)


def test_a_take_fits_only_within_the_limit() -> None:
    three = Quota("model_turns", per_minute=3)
    assert would_allow(2, 1, three) and not would_allow(3, 1, three)
    assert not would_allow(0, 4, three)
    assert would_allow(10_000, 1, Quota("model_turns", per_minute=0))  # off


def test_a_costly_take_never_costs_more_than_the_whole_limit() -> None:
    assert Quota("model_turns", per_minute=3).cost_of(5) == 3
    assert Quota("model_turns", per_minute=30).cost_of(5) == 5
    assert Quota("model_turns", per_minute=30).cost_of(0) == 1


@pytest.mark.parametrize(("name", "limit"), [("", 3), ("a#b", 3), ("model_turns", -1)])
def test_a_quota_is_a_plain_name_and_a_limit_of_zero_or_more(name: str, limit: int) -> None:
    with pytest.raises(ValueError, match="quota"):
        Quota(name, per_minute=limit)
