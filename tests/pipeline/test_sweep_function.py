"""The sweep Lambda: once a day, start the write pipeline wherever the cursor fell behind."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.rooms import NewRoomMessage, RoomKind
from chatmemory.local.server import LocalLambdaContext
from chatmemory.ports.memories import MemoryQuery
from chatmemory.services.memories import NewMemory
from chatmemory.services.room_service import NewRoom
from tests.pipeline.conftest import REGION, USER, Pipeline, say
from tests.support.functions import load_handler

# What EventBridge sends for `rate(1 day)`; the handler needs none of it.
SCHEDULED_EVENT = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-12-01T09:00:00Z",
    "region": REGION,
    "resources": [f"arn:aws:events:{REGION}:123456789012:rule/chatmemory-SweepFunctionDaily"],
    "detail": {},
}


@pytest.fixture
def container(
    tmp_path: Path, clock: ManualClock, pipeline: Pipeline, purge_pipeline: Pipeline
) -> Iterator[Container]:
    settings = Settings(
        state_dir=tmp_path,
        embedder="hashing",
        region=REGION,
        pipeline="stepfunctions",
        write_pipeline_arn=pipeline.arn,
        purge="stepfunctions",
        purge_pipeline_arn=purge_pipeline.arn,
    )
    built = Container(settings, clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("pipeline/sweep")


def sweep(handler: Any) -> dict[str, Any]:
    result: dict[str, Any] = handler(SCHEDULED_EVENT, LocalLambdaContext(function_name="Sweep"))
    return result


def test_the_sweep_starts_the_pipeline_for_conversations_left_behind(
    handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    # Given two conversations whose idle checks were lost, and one still going
    left_behind = [
        say(container, "I'm vegetarian and I live in Pune"),
        say(container, "I have a cat named Miso"),
    ]
    clock.advance(timedelta(hours=1))
    say(container, "I work as a nurse")

    # When the daily sweep runs
    result = sweep(handler)

    # Then it starts one execution per conversation left behind, and they learn
    assert result == {
        "started": len(left_behind),
        "rooms": 0,
        "purges": 0,
        "uses": 0,
        "without_vectors": 0,
    }
    executions = pipeline.executions()
    assert len(executions) == len(left_behind)
    for started in executions:
        assert pipeline.wait(started["executionArn"]).status == "SUCCEEDED"
    texts = " ".join(
        m.text for m in container.stores.memories.iter_memories(USER, MemoryQuery())
    ).lower()
    assert "vegetarian" in texts and "miso" in texts
    assert "nurse" not in texts


def test_a_sweep_with_nothing_behind_starts_nothing(
    handler: Any, container: Container, pipeline: Pipeline
) -> None:
    assert sweep(handler) == {
        "started": 0,
        "rooms": 0,
        "purges": 0,
        "uses": 0,
        "without_vectors": 0,
    }
    assert pipeline.executions() == []


def test_the_sweep_purges_deletions_whose_purge_never_started(
    handler: Any,
    container: Container,
    clock: ManualClock,
    purge_pipeline: Pipeline,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a delete whose purge could not be started (the tombstone hides the memory)
    created = container.memories.create(USER, NewMemory(text="Owns a kayak named Splashwick."))
    starter = container.purge_starter
    working = starter.start_purge

    def unreachable(*_: Any, **__: Any) -> bool:
        raise ConnectionError("Step Functions unreachable")

    monkeypatch.setattr(starter, "start_purge", unreachable)
    container.memories.delete(USER, created.memory.memory_id)
    monkeypatch.setattr(starter, "start_purge", working)
    assert purge_pipeline.executions() == []

    # When the daily sweep runs, a while later
    clock.advance(timedelta(hours=1))
    result = sweep(handler)

    # Then it started the purge, which finished it
    assert result == {"started": 0, "rooms": 0, "purges": 1, "uses": 0, "without_vectors": 0}
    (started,) = purge_pipeline.executions()
    assert purge_pipeline.wait(started["executionArn"]).status == "SUCCEEDED"
    assert container.stores.tombstones.list_tombstones(USER, unpurged_only=True) == []


def test_the_sweep_hands_a_quiet_room_left_unread_back_to_its_quiet_check(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    # Given a room whose quiet timer was lost
    room = container.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=["warren"], members=[USER]))
    container.rooms.post(room.room_id, [NewRoomMessage(f"u:{USER}", "I live in Pune.")])
    jobs = container.jobs_run_here
    assert jobs is not None
    jobs._timers.clear()  # type: ignore[attr-defined]
    clock.advance(timedelta(hours=1))

    # When the daily sweep runs, and the check it armed comes due
    result = sweep(handler)
    jobs.run_due()  # type: ignore[attr-defined]

    # Then the room was handed back once, and its write ran there
    assert result["rooms"] == 1
    rows = container.stores.memories.iter_memories(USER, MemoryQuery(persona="warren"))
    assert [m.text for m in rows] == ["Lives in Pune."]
