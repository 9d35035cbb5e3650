"""What each change feed does beyond the contract: EventBridge's partial failures (through
the real boto3 client, answered by botocore's Stubber), and the local file's append-only
guarantees (nothing written twice, a torn line dropped, owner-only)."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from chatmemory.adapters.eventbridge_changes import EventBridgeChangeFeed
from chatmemory.adapters.jsonl_changes import JsonLinesChangeFeed
from chatmemory.domain.change_events import ChangeEvent, ChangeOp
from chatmemory.domain.events import Actor
from chatmemory.domain.memory import Kind
from chatmemory.ports.change_feed import ChangeFeedUnavailable
from tests.support.changes import changes_in

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
BUS = "stack-changes"


def change(number: int, op: ChangeOp = ChangeOp.ADDED) -> ChangeEvent:
    return ChangeEvent(
        id=f"evt_{number:04d}",
        op=op,
        user_id="user-123",
        memory_id=f"mem_{number:04d}",
        related_id=None,
        persona="assistant",
        kind=Kind.FACT,
        actor=Actor.USER,
        at=START + timedelta(seconds=number),
    )


# ---- EventBridge ----------------------------------------------------------------------


@pytest.fixture
def events_client(aws_env: None) -> Any:
    return boto3.client("events", region_name="eu-west-1")


def entry(published: ChangeEvent) -> dict[str, Any]:
    return {
        "Source": "chatmemory",
        "DetailType": f"memory.{published.op.value}",
        "Detail": json.dumps(published.as_record(), separators=(",", ":")),
        "EventBusName": BUS,
        "Time": published.at,
    }


def accepted(count: int) -> dict[str, Any]:
    return {"FailedEntryCount": 0, "Entries": [{"EventId": f"id-{n}"} for n in range(count)]}


def test_entries_go_ten_a_call_with_source_detail_type_and_the_changes_time(
    events_client: Any,
) -> None:
    # Given 12 changes
    published = [change(number, ChangeOp.CORRECTED) for number in range(12)]
    stubber = Stubber(events_client)
    stubber.add_response(
        "put_events", accepted(10), {"Entries": [entry(c) for c in published[:10]]}
    )
    stubber.add_response("put_events", accepted(2), {"Entries": [entry(c) for c in published[10:]]})

    # When they are published
    with stubber:
        EventBridgeChangeFeed(events_client, bus_name=BUS).publish(published)

    # Then two calls carried them, as the stubs expected
    stubber.assert_no_pending_responses()


def test_only_the_entries_eventbridge_refused_are_sent_again(events_client: Any) -> None:
    # Given three changes, of which PutEvents refuses the second the first time
    published = [change(number) for number in range(3)]
    pauses: list[float] = []
    stubber = Stubber(events_client)
    stubber.add_response(
        "put_events",
        {
            "FailedEntryCount": 1,
            "Entries": [
                {"EventId": "a"},
                {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"},
                {"EventId": "c"},
            ],
        },
        {"Entries": [entry(c) for c in published]},
    )
    stubber.add_response("put_events", accepted(1), {"Entries": [entry(published[1])]})

    # When they are published
    with stubber:
        EventBridgeChangeFeed(events_client, bus_name=BUS, pause=pauses.append).publish(published)

    # Then the refused one alone went again, after a pause (no real waiting here)
    stubber.assert_no_pending_responses()
    assert len(pauses) == 1


def test_a_change_refused_every_time_is_reported_without_its_contents(events_client: Any) -> None:
    published = [change(1)]
    refused = {
        "FailedEntryCount": 1,
        "Entries": [{"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"}],
    }
    stubber = Stubber(events_client)
    for _ in range(3):
        stubber.add_response("put_events", refused, {"Entries": ANY})
    feed = EventBridgeChangeFeed(events_client, bus_name=BUS, attempts=3, pause=lambda _: None)

    with stubber, pytest.raises(ChangeFeedUnavailable) as failure:
        feed.publish(published)

    assert str(failure.value) == "1 change(s) not accepted: ThrottlingException"
    assert "mem_0001" not in str(failure.value) and "user-123" not in str(failure.value)


def test_a_call_that_fails_outright_is_tried_again_then_reported(events_client: Any) -> None:
    stubber = Stubber(events_client)
    stubber.add_client_error("put_events", "ResourceNotFoundException", "no such bus")
    stubber.add_response("put_events", accepted(1), {"Entries": ANY})

    with stubber:
        EventBridgeChangeFeed(events_client, bus_name=BUS, pause=lambda _: None).publish(
            [change(1)]
        )

    stubber.assert_no_pending_responses()


# ---- the local file -------------------------------------------------------------------


def test_publishing_a_batch_again_writes_nothing_twice(tmp_path: Path) -> None:
    # Given a batch on disk whose relay stopped before it moved its cursor
    path = tmp_path / "changes.jsonl"
    feed = JsonLinesChangeFeed(path)
    feed.publish([change(1), change(2)])

    # When the relay, started again, publishes the batch and what came after it
    JsonLinesChangeFeed(path).publish([change(1), change(2), change(3)])

    # Then every change is in the file once, in order
    assert [record["id"] for record in changes_in(path)] == ["evt_0001", "evt_0002", "evt_0003"]


def test_a_line_cut_short_by_a_crash_is_replaced_by_the_whole_change(tmp_path: Path) -> None:
    # Given a file whose last line was cut off mid-write
    path = tmp_path / "changes.jsonl"
    JsonLinesChangeFeed(path).publish([change(1)])
    whole = json.dumps(change(2).as_record(), separators=(",", ":"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(whole[:17])

    # When the change is published again
    JsonLinesChangeFeed(path).publish([change(2)])

    # Then the file holds whole lines only, each change once
    assert path.read_text(encoding="utf-8").endswith("}\n")
    assert [record["id"] for record in changes_in(path)] == ["evt_0001", "evt_0002"]


def test_the_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "changes.jsonl"

    JsonLinesChangeFeed(path).publish([change(1)])

    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_that_cannot_be_written_is_reported_as_unavailable(tmp_path: Path) -> None:
    # Given a state folder where a folder stands in the file's place
    path = tmp_path / "changes.jsonl"
    path.mkdir()

    with pytest.raises(ChangeFeedUnavailable) as failure:
        JsonLinesChangeFeed(path).publish([change(1)])

    assert str(failure.value).startswith("1 change(s) not written: ")
