"""The purge's Lambdas, driven by events shaped like events/pipeline/purge*.json: what an
operator sees (metrics, logs) and what a malformed task does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parser import ValidationError

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.purge import PurgeRequest
from chatmemory.domain.tombstone import Tombstone
from chatmemory.local.server import LocalLambdaContext
from chatmemory.services.memories import NewMemory
from tests.support.functions import load_handler, sample_event

USER = "user-123"
STEPS = ("purge_plan", "purge_vectors", "purge_rows", "purge_mark")


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handlers() -> dict[str, Any]:
    return {step: load_handler(f"pipeline/{step}") for step in STEPS}


def deleted(container: Container, text: str) -> Tombstone:
    """A memory deleted with no purge run yet (the local queue is left alone)."""
    created = container.memories.create(USER, NewMemory(text=text)).memory
    return container.memories.delete(USER, created.memory_id)


def event_for(tombstone: Tombstone) -> dict[str, Any]:
    event = sample_event("pipeline", "purge")
    request = PurgeRequest(
        user_id=USER, as_of=tombstone.deleted_at, memory_ids=(tombstone.memory_id,)
    )
    return {**event, **request.to_payload()}


def emitted_metrics(output: str) -> dict[str, float]:
    """The CloudWatch embedded-metric lines a handler printed, by metric name."""
    found: dict[str, float] = {}
    for line in output.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        blob = json.loads(line)
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = blob[metric["Name"]]
                found[metric["Name"]] = value[0] if isinstance(value, list) else value
    return found


def test_the_sample_event_drives_every_step_to_a_purged_tombstone(
    container: Container,
    clock: ManualClock,
    handlers: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a deleted memory with distinctive words, purged 90 seconds after the delete
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    tombstone = deleted(container, "Owns a unicycle named Trundlebop.")
    clock.advance(timedelta(seconds=90))
    event = event_for(tombstone)
    context = LocalLambdaContext(function_name="Purge")

    # When each step's handler runs, in the state machine's order
    plan = handlers["purge_plan"](event, context)
    handlers["purge_vectors"](event, context)
    rows = handlers["purge_rows"](event, context)
    marked = handlers["purge_mark"](event, context)

    # Then the tombstone is purged and the answers are counts
    assert plan == {"tombstones": 1, "personas": [], "conversations": []}
    assert rows["rows"] == 1
    assert marked == {"purged": 1, "latency_ms": 90_000}
    stored = container.store.get_tombstone(USER, tombstone.memory_id)
    assert stored is not None and stored.purged_at is not None
    # And operators get the purge's metrics; the logs hold ids and counts, never the text
    output = capsys.readouterr().out
    metrics = emitted_metrics(output)
    assert metrics["MemoriesPurged"] == 1
    assert metrics["PurgeLatency"] == 90_000
    assert "Trundlebop" not in output and "unicycle" not in output


def test_a_failing_step_counts_the_failure_and_records_it_on_the_tombstone(
    container: Container,
    clock: ManualClock,
    handlers: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the vector index is down
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    tombstone = deleted(container, "Owns a kayak named Splashwick.")

    def down(*_: Any) -> None:
        raise ConnectionError("index unreachable")

    monkeypatch.setattr(container.index, "remove", down)

    # When RemoveVectors runs
    with pytest.raises(ConnectionError):
        handlers["purge_vectors"](event_for(tombstone), LocalLambdaContext(function_name="P"))

    # Then the failure is counted for the alarm and kept (by kind) on the tombstone
    assert emitted_metrics(capsys.readouterr().out)["PurgeStepFailed"] == 1
    stored = container.store.get_tombstone(USER, tombstone.memory_id)
    assert stored is not None
    assert (stored.purge_error, stored.purged_at) == ("ConnectionError", None)


@pytest.mark.parametrize(
    "broken",
    [
        {"as_of": None},
        {"as_of": "yesterday"},
        {"user_id": ""},
        {"memory_ids": [f"mem_{n:032x}" for n in range(101)]},
    ],
    ids=["no-time", "bad-time", "no-user", "too-many-ids"],
)
def test_a_malformed_task_fails_without_touching_anything(
    container: Container, clock: ManualClock, handlers: dict[str, Any], broken: dict[str, Any]
) -> None:
    # Given a deletion waiting for its purge
    tombstone = deleted(container, "Owns a kite named Zumbrella.")
    event = {**event_for(tombstone), **broken}
    if broken.get("as_of", "") is None:
        del event["as_of"]

    # When a step gets a malformed task
    with pytest.raises((ValidationError, ValueError)):
        handlers["purge_rows"](event, LocalLambdaContext(function_name="P"))

    # Then nothing was purged
    assert container.store.get_tombstone(USER, tombstone.memory_id) == tombstone
