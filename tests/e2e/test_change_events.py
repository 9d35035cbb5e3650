"""`chatmemory serve` tells what changes in `changes.jsonl`, and `chatmemory flush` tells
what a stopped server left untold, each change once."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest

from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from tests.support.changes import changes_in
from tests.support.cli_server import cli_environment, run_cli, serve_in_process

pytestmark = pytest.mark.e2e

# A real process answers in its own time; this only bounds one that never does.
DEADLINE_S = 20
TEXT = "Has a tortoise called Quizzleberry."


def _call(url: str, method: str, path: str, token: str, body: Any = None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    request = Request(url + path, data=data, method=method)  # noqa: S310 - our own local server
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {token}")
    with urlopen(request, timeout=30) as response:  # noqa: S310
        status: int = response.status
        return status


def _created(url: str, token: str) -> str:
    data = json.dumps({"text": TEXT}).encode()
    request = Request(url + "/v1/memories", data=data, method="POST")  # noqa: S310
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {token}")
    with urlopen(request, timeout=30) as response:  # noqa: S310
        memory_id: str = json.loads(response.read())["memory_id"]
        return memory_id


def _told_by_deadline(path: Path, wanted: list[str]) -> list[str]:
    """The ops in the file once they are `wanted`, or what they were at the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        told = [change["op"] for change in changes_in(path)]
        if told == wanted or time.monotonic() > deadline:
            return told
        time.sleep(0.05)  # polling a real process's file, bounded by the deadline


def test_the_server_tells_each_change_in_changes_jsonl_and_flush_tells_none_twice(
    tmp_path: Path, model_cache: Path
) -> None:
    state = tmp_path / "state"
    environment = {**cli_environment(tmp_path, model_cache), "CHATMEMORY_EMBEDDER": "hashing"}
    changes = state / "changes.jsonl"

    # Given a running server
    with serve_in_process(environment, "--state-dir", str(state)) as served:
        token = LocalTokens(load_or_create_secret(state)).issue("alice", datetime.now(UTC))

        # When a memory is added, then deleted (its purge runs on the server's worker)
        memory_id = _created(served.url, token)
        added = _told_by_deadline(changes, ["added"])
        assert _call(served.url, "DELETE", f"/v1/memories/{memory_id}", token) == 204

        # Then the server tells each, in order, as they happen
        assert added == ["added"]
        assert _told_by_deadline(changes, ["added", "deleted", "purged"]) == [
            "added",
            "deleted",
            "purged",
        ]

    # And after it stops (perhaps between writing a batch and moving its cursor: flush
    # then hands that batch over again), flush tells nothing twice
    flushed = run_cli(environment, "flush", "--state-dir", str(state)).stdout
    assert "change event(s)" in flushed
    told = changes_in(changes)
    assert [change["op"] for change in told] == ["added", "deleted", "purged"]
    assert {change["memory_id"] for change in told} == {memory_id}
    # And the file never holds the memory's words
    assert "Quizzleberry" not in changes.read_text(encoding="utf-8")
