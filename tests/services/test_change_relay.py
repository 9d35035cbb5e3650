"""The local change relay: the audit log tailed into `changes.jsonl` from a cursor, so a
change is published once however the relay is stopped, restarted or refused, and a feed
that fails never touches the write it reports. Driven by hand: no thread, no waiting."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.sqlite import Database
from chatmemory.adapters.sqlite.audit_tail import SqliteAuditTail
from chatmemory.config import Container, Settings
from chatmemory.domain.change_events import ChangeEvent
from chatmemory.ports.change_feed import ChangeFeed, ChangeFeedUnavailable
from chatmemory.services.changes import RELAY_BATCH, ChangePublisher, ChangeRelay
from chatmemory.services.memories import NewMemory
from tests.gates import tally
from tests.support.changes import changes_in
from tests.support.damaged import YEAR_ONE_AS_STORED

USER = "user-123"


class Down(ChangeFeed):
    """A feed that is unreachable."""

    def publish(self, changes: Sequence[ChangeEvent]) -> None:
        raise ChangeFeedUnavailable(f"{len(changes)} change(s) not accepted: Unreachable")


class Stopped(Exception):
    """The process died."""


class DiesAfterWriting(ChangeFeed):
    """Writes the batch, then the process dies before the relay can move its cursor."""

    def __init__(self, inner: ChangeFeed) -> None:
        self.inner = inner

    def publish(self, changes: Sequence[ChangeEvent]) -> None:
        self.inner.publish(changes)
        raise Stopped


def server(tmp_path: Path, clock: ManualClock) -> Container:
    """A process on the state folder (each call: a fresh one, as after a restart)."""
    return Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)


def log_of(container: Container) -> SqliteAuditTail:
    """The container's audit log, opened on its own (as another process would)."""
    return SqliteAuditTail(Database(container.settings.sqlite_path, clock=container.clock))


def relay_of(
    container: Container, feed: ChangeFeed | None = None, *, batch: int = RELAY_BATCH
) -> ChangeRelay:
    """The container's relay, or one on the same log publishing to `feed`."""
    if feed is None and batch == RELAY_BATCH:
        relay = container.change_relay
        assert relay is not None
        return relay
    return ChangeRelay(
        log_of(container), ChangePublisher(feed or container.change_feed), batch=batch
    )


def remember(container: Container, text: str) -> str:
    return container.memories.create(USER, NewMemory(text=text)).memory.memory_id


def told(tmp_path: Path) -> list[str]:
    return [
        f"{change['op']} {change['memory_id']}" for change in changes_in(tmp_path / "changes.jsonl")
    ]


def test_a_write_is_told_once_however_often_the_relay_runs(
    tmp_path: Path, clock: ManualClock
) -> None:
    container = server(tmp_path, clock)
    first = remember(container, "Is vegetarian.")

    # When the relay runs, and runs again with nothing new
    ran = [relay_of(container).relay() for _ in range(3)]

    # Then the change is in the file once
    assert told(tmp_path) == [f"added {first}"]
    assert [(r.read, r.published) for r in ran] == [(1, 1), (0, 0), (0, 0)]


def test_a_restarted_server_goes_on_from_where_the_last_one_stopped(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given a server that relayed one change, and wrote another it never relayed
    before = server(tmp_path, clock)
    first = remember(before, "Is vegetarian.")
    relay_of(before).relay()
    second = remember(before, "Lives in Pune.")

    # When a new server starts on the same folder and relays
    after = server(tmp_path, clock)
    relay_of(after).relay()

    # Then nothing was lost and nothing told twice
    assert told(tmp_path) == [f"added {first}", f"added {second}"]


def test_a_feed_that_is_down_never_breaks_the_write_and_catches_up_later(
    tmp_path: Path, clock: ManualClock
) -> None:
    container = server(tmp_path, clock)

    # When memories are written while the feed is down
    first = remember(container, "Is vegetarian.")
    refused = relay_of(container, Down()).relay()
    second = remember(container, "Lives in Pune.")

    # Then the writes stand, the relay says it was refused, and nothing moved on
    assert [container.memories.get(USER, m).memory_id for m in (first, second)] == [first, second]
    assert refused.refused and refused.published == 0
    # And once the feed is back, every change goes out, in order
    relay_of(container).relay()
    assert told(tmp_path) == [f"added {first}", f"added {second}"]


def test_a_relay_that_dies_between_writing_and_moving_its_cursor_writes_nothing_twice(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given a relay that wrote a batch and died before it moved its cursor
    before = server(tmp_path, clock)
    first = remember(before, "Is vegetarian.")
    with pytest.raises(Stopped):
        relay_of(before, DiesAfterWriting(before.change_feed)).relay()
    second = remember(before, "Lives in Pune.")

    # When the next server relays from the cursor (the same batch, and what came after)
    relay_of(server(tmp_path, clock)).relay()

    # Then each change is in the file once
    assert told(tmp_path) == [f"added {first}", f"added {second}"]


def test_many_changes_go_out_batch_by_batch_in_write_order(
    tmp_path: Path, clock: ManualClock
) -> None:
    container = server(tmp_path, clock)
    written = [remember(container, f"Fact number {n}.") for n in range(5)]

    relayed = relay_of(container, batch=2).relay()

    assert relayed.read == 5 and relayed.published == 5
    assert told(tmp_path) == [f"added {memory_id}" for memory_id in written]


def test_while_another_process_relays_this_one_leaves_it_to_it(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given `chatmemory flush` relaying while the server's relay is mid-run
    flush, serving = server(tmp_path, clock), server(tmp_path, clock)
    remember(flush, "Is vegetarian.")
    with log_of(serving).claimed() as ours:
        assert ours
        # When flush's relay runs meanwhile
        skipped = relay_of(flush).relay()

    # Then it publishes nothing (the other one holds the log), and the next run does
    assert (skipped.read, skipped.published) == (0, 0)
    assert told(tmp_path) == []
    assert relay_of(flush).relay().published == 1


def test_an_event_the_log_cannot_read_is_set_aside_once_and_the_rest_go_out(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given an audit event whose time no longer reads (as an older release stored year 1),
    # between two that read
    container = server(tmp_path, clock)
    first = remember(container, "Is vegetarian.")
    poisoned = remember(container, "Lives in Pune.")
    with closing(sqlite3.connect(container.settings.sqlite_path)) as database, database:
        database.execute(
            "UPDATE memory_events SET at = ? WHERE memory_id = ?", (YEAR_ONE_AS_STORED, poisoned)
        )
    last = remember(container, "Plays chess.")

    # When the relay runs, and again
    with caplog.at_level(logging.ERROR, logger="chatmemory.services.changes"):
        ran = [relay_of(container).relay() for _ in range(2)]

    # Then every other change is out, and the unreadable one is set aside once, with why
    assert told(tmp_path) == [f"added {first}", f"added {last}"]
    tally.record_replay(
        "hostile: a poison event for the change relay",
        facts=1,
        probes=2,
        requests=0,
        hits=int(told(tmp_path) != [f"added {first}", f"added {last}"]),
        embedder="—",
        detail=f"set aside {sum(r.set_aside for r in ran)}, "
        f"published {sum(r.published for r in ran)}",
    )
    assert [(r.read, r.published, r.set_aside) for r in ran] == [(2, 2, 1), (0, 0, 0)]
    set_aside = [r for r in caplog.records if r.getMessage() == "audit event set aside: unreadable"]
    assert len(set_aside) == 1
    assert set_aside[0].__dict__["reason"].startswith("at: ")
    assert "Pune" not in caplog.text


def test_with_changes_switched_off_there_is_no_relay_and_no_file(
    tmp_path: Path, clock: ManualClock
) -> None:
    container = Container(Settings(state_dir=tmp_path, embedder="hashing", changes="none"), clock)
    remember(container, "Is vegetarian.")

    assert container.change_relay is None
    assert not (tmp_path / "changes.jsonl").exists()
