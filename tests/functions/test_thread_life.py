"""A thread's whole life through the API (seed 004, issue 13), driven through the chat,
memories and nightly Lambdas with the sample events and a hand-moved clock: planted,
a second beat as a new version, listed with its manners, asleep after the nightly review,
its history in ops, then deleted like any memory."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.local.server import LocalLambdaContext
from tests.support.functions import invoke, load_handler, sample_event

USER = "user-123"


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def lambdas() -> dict[str, Any]:
    return {name: load_handler(name) for name in ("chat", "memories", "pipeline/nightly")}


def say(lambdas: dict[str, Any], container: Container, message: str) -> None:
    reply = invoke(
        lambdas["chat"], sample_event("chat", "chat"), user=USER, body={"message": message}
    )
    assert reply.status == 200, reply.body
    clock = container.clock
    assert isinstance(clock, ManualClock)
    clock.advance(timedelta(seconds=container.settings.idle_seconds + 1))
    container.idle.sweep(now_or_never=True)  # what the worker or a flush does


def threads(lambdas: dict[str, Any], status: str = "active") -> list[dict[str, Any]]:
    reply = invoke(
        lambdas["memories"],
        sample_event("memories", "list_memories"),
        user=USER,
        query={"kind": "thread", "status": status},
    )
    assert reply.status == 200, reply.body
    return list(reply.body["memories"])


def call(lambdas: dict[str, Any], name: str, memory_id: str) -> Any:
    return invoke(
        lambdas["memories"],
        sample_event("memories", name),
        user=USER,
        path_ids={"memory_id": memory_id},
    )


def test_a_threads_whole_life_is_visible_and_it_deletes_like_any_memory(
    lambdas: dict[str, Any], container: Container, clock: ManualClock
) -> None:
    # Planted on a Monday, a second beat on Thursday: two versions, the arc
    say(lambdas, container, "I have a job interview at Acme on Thursday.")
    clock.advance(timedelta(days=3))
    say(lambdas, container, "The interview at Acme went well. I have a second round on Friday!")
    (thread,) = threads(lambdas)
    assert thread["kind"] == "thread" and "second round at Acme" in thread["text"]
    assert thread["thread"]["status"] == "live" and thread["thread"]["cadence"] == "event"
    assert thread["thread"]["state"] == "not_yet"
    (before,) = threads(lambdas, "superseded")
    assert before["closed_by"] == thread["memory_id"]
    assert before["thread"]["state"] is None  # history: nothing for today to allow

    # The nightly review, once three rhythms have passed since the second round
    clock.advance(timedelta(days=23))
    ran = lambdas["pipeline/nightly"]({}, LocalLambdaContext(function_name="nightly"))
    assert ran == {"checked": 1, "dormant": 1}
    asleep = call(lambdas, "get_memory", thread["memory_id"]).body
    assert asleep["memory_id"] == thread["memory_id"] and asleep["text"] == thread["text"]
    assert asleep["thread"]["status"] == "dormant" and asleep["thread"]["state"] == "dormant"

    # Its history: both beats and the change of status, ops and times only
    history = call(lambdas, "memory_history", thread["memory_id"]).body["events"]
    ops = [(event["op"], event["actor"]) for event in history]
    assert ops == [
        ("add", "extractor"),
        ("update", "extractor"),
        ("add", "extractor"),
        ("dormant", "system"),
    ]
    assert all(set(event) == {"op", "actor", "at", "memory_id", "related_id"} for event in history)

    # Deleted like any memory: gone from every listing, with its earlier version
    assert call(lambdas, "delete_memory", thread["memory_id"]).status == 204
    assert call(lambdas, "get_memory", thread["memory_id"]).status == 404
    assert threads(lambdas, "all") == []
