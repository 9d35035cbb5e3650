"""The nightly Lambda (seed 004 law 4): threads quiet past three times their rhythm go to
sleep, on both stores, and a second run changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.memory import Kind
from chatmemory.domain.threads import Cadence, ThreadMeta, ThreadStatus, meta_of
from chatmemory.local.server import LocalLambdaContext
from chatmemory.ports.stores import Stores
from tests.support.builders import memory
from tests.support.functions import load_handler

# What EventBridge sends for the nightly `cron(...)` rule; the handler needs none of it.
SCHEDULED_EVENT = {
    "version": "0",
    "id": "0f4ad5a6-1c39-4bb6-8a73-9d3c06b6d2f1",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-12-24T03:30:00Z",
    "region": "eu-west-1",
    "resources": ["arn:aws:events:eu-west-1:123456789012:rule/chatmemory-NightlyFunctionNightly"],
    "detail": {},
}


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock, stores: Stores) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    built.__dict__["stores"] = stores  # what cached_property would have stored
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("pipeline/nightly")


def run(handler: Any) -> dict[str, Any]:
    result: dict[str, Any] = handler(SCHEDULED_EVENT, LocalLambdaContext(function_name="nightly"))
    return result


def test_a_thread_quiet_past_three_rhythms_goes_dormant_once(
    handler: Any, container: Container, clock: ManualClock, stores: Stores
) -> None:
    # Given a fast thread (a week's rhythm) and a slow one (four weeks), both heard today
    fast, slow = (
        memory(
            "dan",
            text,
            clock.now(),
            kind=Kind.THREAD,
            persona="warren",
            meta=ThreadMeta(cadence=cadence).to_meta(),
        )
        for text, cadence in (
            ("Is job-hunting: second round at Acme on Friday 2026-12-11.", Cadence.FAST),
            ("Is house-hunting in Xuhui: two bedrooms under 8m.", Cadence.SLOW),
        )
    )
    for row in (fast, slow):
        assert stores.memories.add_memory(row)

    # When the nightly review runs three weeks and a day later, then again
    clock.advance(timedelta(days=22))
    first = run(handler)
    second = run(handler)

    # Then only the fast thread went quiet, once; the slow one is still within its rhythm
    assert first == {"checked": 1, "dormant": 1}
    assert second == {"checked": 0, "dormant": 0}
    statuses = {
        row.memory_id: meta_of(row).status for row in stores.threads.list_threads("dan", "warren")
    }
    assert statuses == {fast.memory_id: ThreadStatus.DORMANT, slow.memory_id: ThreadStatus.LIVE}
