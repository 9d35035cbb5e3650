"""ChangesFunction, driven by DynamoDB Streams events shaped like
events/changes/audit_event.json, publishing on a bus under moto; and the template's
stream filter, applied to the records a real write puts on the moto table's stream."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.change_events import SILENT_OPS, ChangeEvent
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.ids import new_event_id
from chatmemory.local.server import LocalLambdaContext
from chatmemory.ports.change_feed import ChangeFeed, ChangeFeedUnavailable
from chatmemory.services.memories import NewMemory
from tests.support.changes import BUS, REGION, BusWatch, stream_filter, stream_records, watch_bus
from tests.support.functions import load_handler, sample_event
from tests.support.template import create_table_from_template

TABLE = "chatmemory-stream-test"


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("changes")


@pytest.fixture
def bus(aws_env: None) -> Iterator[BusWatch]:
    with mock_aws():
        yield watch_bus()


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock, bus: BusWatch) -> Iterator[Container]:
    settings = Settings(
        store="dynamodb",
        table_name=TABLE,
        region=REGION,
        state_dir=tmp_path,
        embedder="hashing",
        changes="eventbridge",
        event_bus_name=BUS,
    )
    built = Container(settings, clock)
    use_container(built)
    yield built
    use_container(None)


def invoke(handler: Any, event: dict[str, Any]) -> list[str]:
    """The sequence numbers the function reported failed."""
    answer = handler(event, LocalLambdaContext(function_name="changes"))
    return [failure["itemIdentifier"] for failure in answer["batchItemFailures"]]


def records(count: int) -> dict[str, Any]:
    """`count` copies of the sample's record, each its own event and sequence number."""
    template = sample_event("changes", "audit_event")["Records"][0]
    made = []
    for number in range(count):
        record = copy.deepcopy(template)
        image = record["dynamodb"]["NewImage"]
        event_id = f"evt_18ecc7dc3468c80{number:02d}7d026beb8daa4865"
        image["event_id"]["S"] = event_id
        image["sk"]["S"] = image["sk"]["S"].rsplit("#", 1)[0] + f"#{event_id}"
        record["dynamodb"]["Keys"]["sk"] = image["sk"]
        record["dynamodb"]["SequenceNumber"] = str(1100000000017454423010 + number)
        made.append(record)
    return {"Records": made}


class RefusesOne(ChangeFeed):
    """A feed that refuses one event id (an outage that hits one call), taking the rest."""

    def __init__(self, inner: ChangeFeed, refused: str) -> None:
        self.inner, self.refused = inner, refused

    def publish(self, changes: Sequence[ChangeEvent]) -> None:
        if any(change.id == self.refused for change in changes):
            raise ChangeFeedUnavailable("1 change(s) not accepted: InternalFailure")
        self.inner.publish(changes)


def test_the_sample_record_becomes_one_change_on_the_bus(
    handler: Any, container: Container, bus: BusWatch
) -> None:
    # When the stream hands the function the sample's new audit item
    failed = invoke(handler, sample_event("changes", "audit_event"))

    # Then it is published once, as the change it tells, with nothing else
    assert failed == []
    (arrived,) = bus.received()
    assert (arrived["source"], arrived["detail-type"]) == ("chatmemory", "memory.added")
    assert arrived["detail"] == {
        "schema": "chatmemory.change/1",
        "id": "evt_18ecc7dc3468c8007d026beb8daa4865",
        "op": "added",
        "user_id": "user-123",
        "memory_id": "mem_3f0c1a2b4d5e6f708192a3b4c5d6e7f8",
        "related_id": None,
        "persona": "assistant",
        "kind": "fact",
        "actor": "user",
        "at": "2026-11-30T09:15:00Z",
    }


def test_a_record_that_cannot_be_published_is_retried_from_and_holds_back_the_rest(
    handler: Any, container: Container, bus: BusWatch
) -> None:
    # Given three records, and a bus that refuses the second one's event
    event = records(3)
    second = event["Records"][1]["dynamodb"]
    container.__dict__["change_feed"] = RefusesOne(
        container.change_feed, second["NewImage"]["event_id"]["S"]
    )

    # When the function handles the batch
    failed = invoke(handler, event)

    # Then the first is out, and the stream is told to retry from the second: the third
    # waits for it, so no change overtakes one before it
    assert [envelope["detail"]["id"] for envelope in bus.received()] == [
        event["Records"][0]["dynamodb"]["NewImage"]["event_id"]["S"]
    ]
    assert failed[0] == second["SequenceNumber"]
    assert failed == [record["dynamodb"]["SequenceNumber"] for record in event["Records"][1:]]


def test_a_record_that_is_no_audit_item_is_skipped(
    handler: Any, container: Container, bus: BusWatch
) -> None:
    # Given a memory row's record (the filter keeps these out; one arriving anyway)
    event = sample_event("changes", "audit_event")
    record = event["Records"][0]["dynamodb"]
    record["NewImage"] = {
        "pk": {"S": "U#user-123"},
        "sk": {"S": "MEM#mem_3f0c1a2b4d5e6f708192a3b4c5d6e7f8"},
        "text": {"S": "Is vegetarian."},
    }

    # Then nothing is published and nothing is retried
    assert invoke(handler, event) == []
    assert bus.received() == []


def test_an_audit_item_that_cannot_be_read_is_skipped_instead_of_blocking_the_shard(
    handler: Any, container: Container, bus: BusWatch
) -> None:
    event = records(2)
    event["Records"][0]["dynamodb"]["NewImage"]["op"] = {"S": "teleported"}

    # When the function handles it, and the good record after it
    failed = invoke(handler, event)

    # Then the unreadable one is dropped (no retry would read it), the next goes out
    assert failed == []
    assert [envelope["detail"]["id"] for envelope in bus.received()] == [
        event["Records"][1]["dynamodb"]["NewImage"]["event_id"]["S"]
    ]


def test_the_stream_filter_passes_only_new_audit_items_that_tell_a_change(
    container: Container, clock: ManualClock
) -> None:
    # Given a table with the template's stream, and writes of every sort on it: rows,
    # their audit items, a use (a reply used the memory), a correction's two halves
    create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE, stream=True)
    memories = container.memories
    first = memories.create("user-123", NewMemory(text="Is vegetarian.")).memory
    used = MemoryEvent(
        user_id="user-123",
        memory_id=first.memory_id,
        event_id=new_event_id(clock.now()),
        op=Op.USE,
        actor=Actor.SYSTEM,
        at=clock.now(),
    )
    container.stores.memories.record_use("user-123", [first.memory_id], clock.now(), [used])
    memories.correct("user-123", first.memory_id, text="Is vegan.")
    every = stream_records(TABLE)

    # When Lambda applies the template's filter
    passed = [record for record in every if stream_filter().matches_event(record)]

    # Then only new audit items reach the function, and none of an op that tells nothing
    assert len(every) > len(passed) > 0
    for record in passed:
        image = record["dynamodb"]["NewImage"]
        assert record["eventName"] == "INSERT"
        assert image["sk"]["S"].startswith("EVT#")
        assert image["op"]["S"] not in SILENT_OPS
        assert "text" not in image
    ops = sorted(record["dynamodb"]["NewImage"]["op"]["S"] for record in passed)
    assert ops == ["add", "add"]  # the addition, and the correction's new half
    audit_ops = {
        record["dynamodb"]["NewImage"]["op"]["S"]
        for record in every
        if record["dynamodb"]["Keys"]["sk"]["S"].startswith("EVT#")
    }
    assert {"use", "update"} <= audit_ops  # they were written, and held back
