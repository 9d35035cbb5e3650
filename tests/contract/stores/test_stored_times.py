"""Every instant the product accepts reads back from each store exactly as it was written,
and in time order: the stored form round-trips the whole accepted range, its edges too
(domain/time.py; docs/api.md "Conventions")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.time import EARLIEST, EARLIEST_WORLD, LATEST
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import ALICE, EVERY_STATUS, all_ids
from tests.support import builders

_TICK = timedelta(microseconds=1)
LAST = LATEST - _TICK
# Reads show a row only while its shelf life lasts, so the clock stands at the first
# instant any time may name: every `valid_until` after it is still to come.
BEFORE_EVERYTHING = EARLIEST_WORLD


def _instants(earliest: datetime) -> st.SearchStrategy[datetime]:
    return st.datetimes(
        min_value=earliest.replace(tzinfo=None),
        max_value=LAST.replace(tzinfo=None),
        timezones=st.just(UTC),
    )


OWN = _instants(EARLIEST)  # learned, changed, used, reinforced, set aside
WORLD = _instants(EARLIEST_WORLD)  # when it was true
SHELF_LIFE = _instants(EARLIEST_WORLD + _TICK)  # one already past is never read


@st.composite
def rows(draw: st.DrawFn) -> Memory:
    """A memory with every time field drawn from the range the product accepts: active, or
    history (closed, with a world time it stopped being true)."""
    created = draw(OWN)
    updated = max(created, draw(OWN))
    valid_from = draw(st.none() | WORLD)
    closed = draw(st.booleans())
    stopped = draw(WORLD) if closed else None
    if closed and valid_from is not None and stopped is not None:
        stopped = max(stopped, valid_from)
    return builders.memory(
        ALICE,
        "Lives in Pune.",
        created,
        updated_at=updated,
        valid_from=valid_from,
        valid_until=draw(st.none() | SHELF_LIFE),
        valid_to=stopped,
        status=Status.CLOSED if closed else Status.ACTIVE,
        last_used_at=draw(st.none() | OWN),
        reinforced_at=draw(st.none() | OWN),
        archived_at=draw(st.none() | OWN),
    )


def _at_the_edges(at: datetime, world: datetime, shelf_life: datetime) -> Memory:
    return builders.memory(
        ALICE,
        "Lives in Pune.",
        at,
        valid_from=world,
        valid_until=shelf_life,
        last_used_at=at,
        reinforced_at=at,
        archived_at=at,
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(memory=rows())
@example(memory=_at_the_edges(EARLIEST, EARLIEST_WORLD, EARLIEST_WORLD + _TICK))
@example(memory=_at_the_edges(LAST, LAST, LAST))
@example(memory=_at_the_edges(EARLIEST, LAST, LAST))
def test_every_accepted_instant_reads_back_as_it_was_written(
    stores: Stores, clock: ManualClock, memory: Memory
) -> None:
    # Given the clock before every instant the product accepts
    clock.set(BEFORE_EVERYTHING)

    # When a memory with its times anywhere in the accepted range is stored
    assert stores.memories.add_memory(memory)

    # Then it reads back the same, by id and in a listing of every status
    assert stores.memories.get_memory(ALICE, memory.memory_id) == memory
    listed = {m.memory_id: m for m in stores.memories.iter_memories(ALICE, EVERY_STATUS)}
    assert listed[memory.memory_id] == memory


TIME_FIELDS = (
    "created_at",
    "updated_at",
    "valid_from",
    "valid_until",
    "valid_to",
    "last_used_at",
    "reinforced_at",
    "archived_at",
)
# Any instant at all, in any offset: the year 1 and 9999 included.
ANY_INSTANT = st.datetimes(
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=14)), timezone(-timedelta(hours=12))])
)


def _with_time(field: str, at: datetime) -> Memory:
    """A memory whose `field` is `at` (InvalidField if the domain refuses it)."""
    if field == "created_at":
        return builders.memory(ALICE, "Lives in Pune.", at)
    if field == "updated_at":
        return builders.memory(ALICE, "Lives in Pune.", EARLIEST, updated_at=at)
    closed = {"status": Status.CLOSED} if field == "valid_to" else {}
    learned = datetime(2026, 11, 30, tzinfo=UTC)
    return builders.memory(ALICE, "Lives in Pune.", learned, **{field: at}, **closed)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(field=st.sampled_from(TIME_FIELDS), at=ANY_INSTANT | WORLD)
@example(field="created_at", at=datetime(1, 1, 1, tzinfo=UTC))
@example(field="valid_from", at=datetime(1, 1, 1, tzinfo=UTC))
@example(field="reinforced_at", at=datetime(9999, 12, 31, tzinfo=UTC))
def test_an_instant_is_refused_or_reads_back_as_it_was_written(
    stores: Stores, clock: ManualClock, field: str, at: datetime
) -> None:
    # Given the clock before every instant the product accepts
    clock.set(BEFORE_EVERYTHING)

    # When a memory with that instant in one of its time fields is made and stored
    try:
        memory = _with_time(field, at)
    except InvalidField as refused:
        # Then either the domain refuses it, naming the field, and no store sees it
        assert refused.field == field
        return
    assert stores.memories.add_memory(memory)

    # Or the store reads it back exactly
    assert stores.memories.get_memory(ALICE, memory.memory_id) == memory


def test_the_first_and_last_instants_list_in_time_order(stores: Stores, clock: ManualClock) -> None:
    # Given memories learned at the first instant, a tick later, and the last instant
    clock.set(BEFORE_EVERYTHING)
    learned = [EARLIEST, EARLIEST + _TICK, datetime(2026, 11, 30, tzinfo=UTC), LAST]
    ids = []
    for at in learned:
        memory = builders.memory(ALICE, f"Fact learned at {at.isoformat()}.", at)
        assert stores.memories.add_memory(memory)
        ids.append(memory.memory_id)

    # When they are listed, newest first
    listed = all_ids(stores, ALICE)

    # Then the order is the order in time
    assert listed == list(reversed(ids))
