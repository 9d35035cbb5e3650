"""Change events, end to end, on both paths a deployment takes.

The same journey — a memory added through the API, corrected with PATCH, one corrected
into words another already holds (closed), one deleted and purged, a background
correction undone from its notice (restored) — runs:

- locally: SQLite, the relay tailing the audit log into `changes.jsonl`;
- on AWS: the moto table built from template.yaml with its stream, the stream's records
  put through the template's filter and handed to ChangesFunction (functions/changes),
  which publishes on the bus; a rule copies what arrives into a queue we read.

Both must tell the same changes, in the same order, and none may carry a memory's words.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.change_events import SCHEMA
from chatmemory.local.server import LocalLambdaContext
from chatmemory.services.chat import ChatRequest, ChatResult
from tests.support.changes import (
    BUS,
    REGION,
    changes_in,
    lambda_batches,
    stream_records,
    watch_bus,
)
from tests.support.functions import invoke, load_handler, sample_event
from tests.support.template import create_table_from_template

USER = "user-123"
TABLE = "chatmemory-changes-test"

# Every memory text the journey writes, and the words of what was said in the chat.
WORDS = (
    "Is vegetarian.",
    "Is vegan.",
    "Plays chess.",
    "Plays chess on Sundays.",
    "vegan",
    "vegetarian",
    "chess",
    "Sundays",
    "Pune",
    "Bengaluru",
)


@pytest.fixture(scope="module")
def memories_api() -> Any:
    return load_handler("memories")


@pytest.fixture(scope="module")
def changes_function() -> Any:
    return load_handler("changes")


@dataclass
class Deployment:
    """The container a path runs on, and how to read the changes it told."""

    container: Container
    read_changes: Any  # () -> list[dict]: each change event's JSON, oldest first
    raw: Any  # () -> str: everything the consumer received, serialised as it arrived


@pytest.fixture(params=["local", "aws"])
def deployment(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: ManualClock,
    aws_env: None,
    changes_function: Any,
) -> Iterator[Deployment]:
    if request.param == "local":
        built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
        use_container(built)
        path = tmp_path / "changes.jsonl"

        def relayed() -> list[dict[str, Any]]:
            assert built.change_relay is not None
            built.change_relay.relay()
            return changes_in(path)

        yield Deployment(built, relayed, lambda: path.read_text(encoding="utf-8"))
        use_container(None)
        return
    with mock_aws():
        create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE, stream=True)
        watch = watch_bus()
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
        arrived: list[dict[str, Any]] = []
        delivered = 0

        def published() -> list[dict[str, Any]]:
            nonlocal delivered
            records = stream_records(TABLE)
            for batch in lambda_batches(records[delivered:]):
                answer = changes_function(batch, LocalLambdaContext(function_name="changes"))
                assert answer == {"batchItemFailures": []}
            delivered = len(records)
            arrived.extend(watch.received())
            return [envelope["detail"] for envelope in sorted(arrived, key=_by_id)]

        yield Deployment(built, published, lambda: json.dumps(arrived))
        use_container(None)


def _by_id(envelope: dict[str, Any]) -> str:
    return str(envelope["detail"]["id"])


def create(api: Any, text: str) -> str:
    reply = invoke(api, sample_event("memories", "create_memory"), user=USER, body={"text": text})
    assert reply.status == 201, reply.body
    return str(reply.body["memory_id"])


def correct(api: Any, memory_id: str, text: str) -> dict[str, Any]:
    reply = invoke(
        api,
        sample_event("memories", "correct_memory"),
        user=USER,
        path_ids={"memory_id": memory_id},
        body={"text": text},
    )
    assert reply.status == 200, reply.body
    body: dict[str, Any] = reply.body
    return body


def say(container: Container, clock: ManualClock, message: str) -> None:
    *_, result = container.chat.turn(ChatRequest(user_id=USER, message=message))
    assert isinstance(result, ChatResult)
    clock.advance(timedelta(seconds=20))


def purge_now(container: Container) -> None:
    jobs = container.jobs_run_here
    assert jobs is not None
    jobs.run_pending()


def ops(changes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(change["op"], change["actor"]) for change in changes]


def test_every_change_is_told_once_with_its_ids_and_never_its_words(
    deployment: Deployment, memories_api: Any, clock: ManualClock
) -> None:
    container = deployment.container

    # When a memory is added through the API, then corrected with PATCH
    vegetarian = create(memories_api, "Is vegetarian.")
    vegan = correct(memories_api, vegetarian, "Is vegan.")["memory_id"]
    # And one memory is corrected into the words another already holds (closed under it)
    chess = create(memories_api, "Plays chess.")
    sundays = create(memories_api, "Plays chess on Sundays.")
    correct(memories_api, chess, "Plays chess on Sundays.")
    # And the corrected memory is deleted, and its purge runs
    deleted = invoke(
        memories_api,
        sample_event("memories", "delete_memory"),
        user=USER,
        path_ids={"memory_id": vegan},
    )
    assert deleted.status == 204
    purge_now(container)
    told = deployment.read_changes()

    # Then each is told once, in order, by what happened and who did it
    assert ops(told) == [
        ("added", "user"),
        ("corrected", "user"),
        ("added", "user"),
        ("added", "user"),
        ("closed", "user"),
        ("deleted", "user"),
        ("purged", "system"),
    ]
    added, corrected, _, _, closed, gone, purged = told
    assert added["memory_id"] == vegetarian and added["related_id"] is None
    assert (corrected["memory_id"], corrected["related_id"]) == (vegan, vegetarian)
    assert (closed["memory_id"], closed["related_id"]) == (chess, sundays)
    assert gone["memory_id"] == purged["memory_id"] == vegan
    # And each names the persona and the kind, in the documented schema, and nothing more
    for change in told:
        assert set(change) == {
            "schema",
            "id",
            "op",
            "user_id",
            "memory_id",
            "related_id",
            "persona",
            "kind",
            "actor",
            "at",
        }
        assert change["schema"] == SCHEMA
        assert (change["user_id"], change["persona"], change["kind"]) == (USER, "assistant", "fact")
        assert change["at"].endswith("Z")
    assert len({change["id"] for change in told}) == len(told)
    # And no word of any memory reached the consumer
    raw = deployment.raw()
    assert [word for word in WORDS if word.lower() in raw.lower()] == []


def test_undoing_a_background_correction_tells_the_delete_and_the_restore(
    deployment: Deployment, memories_api: Any, clock: ManualClock
) -> None:
    container = deployment.container
    # Given a fact learned in the background, then corrected in the background
    say(container, clock, "I live in Pune.")
    container.idle.sweep(now_or_never=True)
    say(container, clock, "Big news: I moved to Bengaluru!")
    container.idle.sweep(now_or_never=True)
    notice = next(n for n in container.notices.pending(USER) if "Bengaluru" in n.text)
    before = deployment.read_changes()

    # When the user undoes the notice, and the undone version's purge runs
    undone = invoke(
        memories_api,
        sample_event("memories", "undo_notice"),
        user=USER,
        path_ids={"notice_id": notice.notice_id},
    )
    assert undone.status == 200, undone.body
    purge_now(container)
    told = deployment.read_changes()[len(before) :]

    # Then the background writes were told as the extractor's
    assert ops(before) == [("added", "extractor"), ("corrected", "extractor")]
    pune, bengaluru = before[0]["memory_id"], before[1]["memory_id"]
    # And the undo as the user's: the correction deleted, the version before restored
    assert ops(told) == [("deleted", "user"), ("restored", "user"), ("purged", "system")]
    deleted, restored, purged = told
    assert deleted["memory_id"] == purged["memory_id"] == bengaluru
    assert (restored["memory_id"], restored["related_id"]) == (pune, bengaluru)
    # And still no words
    raw = deployment.raw()
    assert [word for word in WORDS if word.lower() in raw.lower()] == []
