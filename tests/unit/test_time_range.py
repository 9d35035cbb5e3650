"""The one range every instant the product keeps lies in (domain/time.py): what is refused,
naming the field, and what the edges read as."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from chatmemory.domain.errors import InvalidField
from chatmemory.domain.events import Op
from chatmemory.domain.threads import ThreadMeta
from chatmemory.domain.time import (
    EARLIEST,
    EARLIEST_WORLD,
    LATEST,
    as_of_instant,
    from_storage,
    to_storage,
)
from tests.support import builders

LAST = LATEST - timedelta(microseconds=1)


def test_the_edges_are_stored_at_fixed_width_and_read_back() -> None:
    assert to_storage(EARLIEST_WORLD) == "1900-01-01T00:00:00.000000Z"
    assert to_storage(EARLIEST) == "1970-01-01T00:00:00.000000Z"
    assert to_storage(LAST) == "2199-12-31T23:59:59.999999Z"
    assert [from_storage(to_storage(at)) for at in (EARLIEST_WORLD, LAST)] == [EARLIEST_WORLD, LAST]


@pytest.mark.parametrize(
    "at",
    [
        datetime(1, 1, 1, tzinfo=UTC),
        EARLIEST_WORLD - timedelta(microseconds=1),
        LATEST,
        datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
    ],
)
def test_no_store_is_handed_an_instant_out_of_range(at: datetime) -> None:
    with pytest.raises(InvalidField, match="must be from 1900-01-01T00:00:00Z"):
        to_storage(at)


def test_text_that_is_no_stored_instant_is_refused_naming_its_field() -> None:
    with pytest.raises(InvalidField) as refused:
        from_storage("1-01-01T00:00:00.000000Z", "at")

    assert (refused.value.field, refused.value.reason) == ("at", "is not a stored instant")


@pytest.mark.parametrize(
    ("field", "at"),
    [
        ("created_at", datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("last_used_at", datetime(1, 1, 1, tzinfo=UTC)),
        ("reinforced_at", datetime(9999, 12, 31, tzinfo=UTC)),
        ("archived_at", LATEST),
        ("valid_from", datetime(1899, 12, 31, tzinfo=UTC)),
        ("valid_until", datetime(9999, 12, 31, 23, 0, tzinfo=timezone(-timedelta(hours=5)))),
    ],
)
def test_a_memory_refuses_a_time_out_of_its_range_naming_it(field: str, at: datetime) -> None:
    learned = datetime(2026, 11, 30, tzinfo=UTC)
    fields = {"created_at": at, "updated_at": at} if field == "created_at" else {field: at}

    with pytest.raises(InvalidField) as refused:
        builders.memory("alice", "Lives in Pune.", learned, **fields)

    assert refused.value.field == field


def test_a_life_before_the_epoch_is_a_world_time_the_memory_keeps() -> None:
    memory = builders.memory(
        "alice",
        "Has been married since 1965.",
        datetime(2026, 11, 30, tzinfo=UTC),
        valid_from=datetime(1965, 6, 12, tzinfo=UTC),
    )

    assert memory.valid_from == datetime(1965, 6, 12, tzinfo=UTC)


def test_an_event_of_year_one_is_refused() -> None:
    with pytest.raises(InvalidField) as refused:
        builders.event("alice", "mem_1", Op.ADD, datetime(1, 1, 1, tzinfo=UTC))

    assert refused.value.field == "at"


@pytest.mark.parametrize("name", ["asked", "sleeps_until", "event_on"])
def test_a_threads_day_out_of_range_is_refused_naming_it(name: str) -> None:
    with pytest.raises(InvalidField) as refused:
        ThreadMeta(**{name: date(9999, 12, 31)})  # type: ignore[arg-type]

    assert refused.value.field == f"meta.{name}"


@pytest.mark.parametrize("text", ["0001-01-01", "1969-12-31", "2200-01-01", "9999-12-31"])
def test_an_as_of_out_of_range_is_refused(text: str) -> None:
    with pytest.raises(InvalidField) as refused:
        as_of_instant(text)

    assert refused.value.field == "as_of"


def test_an_as_of_on_the_last_day_is_its_last_moment() -> None:
    assert as_of_instant("2199-12-31") == LAST
    assert as_of_instant("1970-01-01T00:00:00Z") == EARLIEST
