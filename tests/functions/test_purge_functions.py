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
from chatmemory.services.pipeline import ProfileRebuilt
from tests.support.functions import load_handler, sample_event

USER = "user-123"
STEPS = (
    "purge_plan",
    "purge_vectors",
    "purge_rows",
    "purge_profile",
    "purge_mark",
    "rebuild_profile",
)


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


def event_for(tombstone: Tombstone, sample: str = "purge") -> dict[str, Any]:
    """The sample event (events/pipeline/<sample>.json) with the tombstone's request."""
    event = sample_event("pipeline", sample)
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
    stored = container.stores.tombstones.get_tombstone(USER, tombstone.memory_id)
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
    stored = container.stores.tombstones.get_tombstone(USER, tombstone.memory_id)
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
    assert container.stores.tombstones.get_tombstone(USER, tombstone.memory_id) == tombstone


@pytest.fixture
def rebuilds(container: Container, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which pipeline's profile rebuild ran, in order (each answers "unchanged")."""
    asked: list[str] = []

    def by_purge(request: PurgeRequest, persona: str) -> ProfileRebuilt:
        asked.append(f"purge of {','.join(request.memory_ids)}")
        return ProfileRebuilt(rebuilt=False)

    def by_write_pipeline(user_id: str, persona: str) -> ProfileRebuilt:
        asked.append("write pipeline")
        return ProfileRebuilt(rebuilt=False)

    monkeypatch.setattr(container.purge, "rebuild_profile", by_purge)
    monkeypatch.setattr(container.pipeline, "rebuild_profile", by_write_pipeline)
    return asked


def test_a_rebuild_profiles_item_rebuilds_the_profile_through_the_purge(
    container: Container, handlers: dict[str, Any], rebuilds: list[str]
) -> None:
    # Given a deletion waiting for its purge
    tombstone = deleted(container, "Owns a kite named Zumbrella.")
    item = event_for(tombstone, "purge_profile")

    # When the purge's RebuildProfile gets a RebuildProfiles item
    answer = handlers["purge_profile"](item, LocalLambdaContext(function_name="PurgeProfile"))

    # Then the purge's step ran for the request's memories, and answered its shape
    assert rebuilds == [f"purge of {tombstone.memory_id}"]
    assert answer == {"rebuilt": False}


def test_a_failing_profile_rebuild_counts_the_purge_failure(
    container: Container,
    handlers: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the table is down while a RebuildProfiles item runs
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    tombstone = deleted(container, "Owns a kite named Zumbrella.")

    def down(*_: Any) -> None:
        raise ConnectionError("table unreachable")

    monkeypatch.setattr(container.purge, "rebuild_profile", down)
    item = event_for(tombstone, "purge_profile")

    # When the purge's RebuildProfile runs
    with pytest.raises(ConnectionError):
        handlers["purge_profile"](item, LocalLambdaContext(function_name="PurgeProfile"))

    # Then the failure is counted for the purge's alarm
    assert emitted_metrics(capsys.readouterr().out)["PurgeStepFailed"] == 1


@pytest.mark.parametrize(
    ("step", "payload"),
    [("purge_profile", "write pipeline"), ("rebuild_profile", "purge")],
    ids=["write-payload-to-purge", "purge-payload-to-write"],
)
def test_a_profile_task_refuses_the_other_pipelines_payload(
    container: Container,
    handlers: dict[str, Any],
    rebuilds: list[str],
    step: str,
    payload: str,
) -> None:
    # Given the other state machine's RebuildProfile payload
    tombstone = deleted(container, "Owns a kite named Zumbrella.")
    purge_item = event_for(tombstone, "purge_profile")
    write_item = {"user_id": USER, "persona": "assistant"}
    event = write_item if payload == "write pipeline" else purge_item

    # When this function gets it
    with pytest.raises(ValidationError):
        handlers[step](event, LocalLambdaContext(function_name=step))

    # Then it is refused as a bad payload: neither pipeline's step ran
    assert rebuilds == []
    assert container.stores.tombstones.get_tombstone(USER, tombstone.memory_id) == tombstone


def test_a_rebuild_profiles_item_with_a_malformed_request_is_refused(
    container: Container, handlers: dict[str, Any], rebuilds: list[str]
) -> None:
    # Given a RebuildProfiles item whose request time is not a time
    tombstone = deleted(container, "Owns a kite named Zumbrella.")
    event = {**event_for(tombstone, "purge_profile"), "as_of": "yesterday"}

    # When the purge's RebuildProfile gets it
    with pytest.raises(ValueError, match="is not a stored instant"):
        handlers["purge_profile"](event, LocalLambdaContext(function_name="PurgeProfile"))

    # Then it fails before any rebuild ran
    assert rebuilds == []
