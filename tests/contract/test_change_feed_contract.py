"""The ChangeFeed contract: what every feed does with the changes it is handed.

EventBridge runs through the real boto3 client against moto's bus, where a rule copies
every event into a queue we read back (so what is checked is what a consumer receives);
the file is `changes.jsonl`, read line by line.

To add a feed, add a builder to FEEDS; the tests stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.eventbridge_changes import EventBridgeChangeFeed
from chatmemory.adapters.jsonl_changes import JsonLinesChangeFeed
from chatmemory.domain.change_events import ChangeEvent, ChangeOp
from chatmemory.domain.events import Actor
from chatmemory.domain.memory import Kind
from chatmemory.ports.change_feed import ChangeFeed
from tests.support.changes import BUS, REGION, changes_in, watch_bus

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class Feed:
    feed: ChangeFeed
    received: Callable[[], list[dict[str, Any]]]  # what a consumer got, each change's JSON


def _eventbridge(tmp_path: Path) -> Iterator[Feed]:
    with mock_aws():
        watch = watch_bus()
        client = boto3.client("events", region_name=REGION)
        feed = EventBridgeChangeFeed(client, bus_name=BUS, pause=lambda _: None)
        yield Feed(feed, lambda: [envelope["detail"] for envelope in watch.received()])


def _file(tmp_path: Path) -> Iterator[Feed]:
    path = tmp_path / "state" / "changes.jsonl"
    yield Feed(JsonLinesChangeFeed(path), lambda: changes_in(path))


FEEDS = {"eventbridge": _eventbridge, "file": _file}


@pytest.fixture(params=sorted(FEEDS))
def feed(request: pytest.FixtureRequest, tmp_path: Path, aws_env: None) -> Iterator[Feed]:
    yield from FEEDS[request.param](tmp_path)


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


def test_a_published_change_arrives_as_its_record(feed: Feed) -> None:
    published = change(1, ChangeOp.DELETED)

    feed.feed.publish([published])

    assert feed.received() == [published.as_record()]


def test_more_changes_than_one_call_carries_all_arrive_once(feed: Feed) -> None:
    # Given 25 changes (EventBridge takes ten a call)
    published = [change(number) for number in range(25)]

    # When they are published at once
    feed.feed.publish(published)

    # Then each arrives exactly once, and nothing else does
    arrived = sorted(feed.received(), key=lambda record: record["id"])
    assert arrived == [each.as_record() for each in published]


def test_publishing_nothing_sends_nothing(feed: Feed) -> None:
    feed.feed.publish([])

    assert feed.received() == []


def test_every_op_reaches_the_consumer(feed: Feed) -> None:
    published = [change(number, op) for number, op in enumerate(ChangeOp)]

    feed.feed.publish(published)

    assert sorted(record["op"] for record in feed.received()) == sorted(op.value for op in ChangeOp)
