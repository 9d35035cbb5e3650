"""A disk that refuses writes: every write answers 503 storage_unavailable with Retry-After
(never a bare 500), health says degraded, reads still answer, nothing partial is kept, and
all of it recovers once the disk takes writes again.

`chatmemory serve` runs as a developer runs it, in a process of its own; the fault is the
kernel's own, set on that process from outside: a file-size limit of zero bytes, so every
write to a file fails as on a full disk (SQLite: "disk I/O error"). Its SIGXFSZ is ignored,
as a server's would be, so the write fails instead of killing it.
"""

from __future__ import annotations

import json
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from tests.support.cli_server import ServedProcess, cli_environment, serve_in_process

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs Linux's prlimit"),
]

USER = "alice"


@contextmanager
def disk_refusing_writes(pid: int) -> Iterator[None]:
    """Every write the process makes to a file fails, until the block ends."""
    before = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, before[1]))
    try:
        yield
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, before)


def _ignore_file_size_signal() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


@pytest.fixture
def served(tmp_path: Path, model_cache: Path) -> Iterator[ServedProcess]:
    environment = {**cli_environment(tmp_path, model_cache), "CHATMEMORY_EMBEDDER": "hashing"}
    state_dir = tmp_path / "state"
    with serve_in_process(
        environment, "--state-dir", str(state_dir), preexec_fn=_ignore_file_size_signal
    ) as running:
        yield running


@pytest.fixture
def token(served: ServedProcess, tmp_path: Path) -> str:
    return LocalTokens(load_or_create_secret(tmp_path / "state")).issue(USER, datetime.now(UTC))


def _call(
    served: ServedProcess, method: str, path: str, token: str | None = None, body: Any = None
) -> tuple[int, dict[str, str], Any]:
    data = None if body is None else json.dumps(body).encode()
    request = Request(served.url + path, data=data, method=method)  # noqa: S310 - our own server
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urlopen(request, timeout=30) as answer:  # noqa: S310
            raw, status, headers = answer.read(), answer.status, dict(answer.headers)
    except HTTPError as error:
        raw, status, headers = error.read(), error.code, dict(error.headers)
    return status, headers, json.loads(raw) if raw else None


def test_a_disk_that_refuses_writes_is_503_and_degraded_keeps_nothing_partial_and_recovers(
    served: ServedProcess, token: str
) -> None:
    # Given alice's one memory, on a healthy server
    status, _, created = _call(served, "POST", "/v1/memories", token, {"text": "Is vegetarian."})
    assert status == 201
    memory_id = created["memory_id"]
    assert _call(served, "GET", "/v1/health")[:1] == (200,)
    before = _call(served, "GET", "/v1/memories?status=all", token)[2]
    history = _call(served, "GET", f"/v1/memories/{memory_id}/history", token)[2]

    # When the disk refuses every write, and alice writes, corrects and deletes
    with disk_refusing_writes(served.pid):
        writes = [
            _call(served, "POST", "/v1/memories", token, {"text": "Has a dog named Rex."}),
            _call(served, "PATCH", f"/v1/memories/{memory_id}", token, {"text": "Is vegan."}),
            _call(served, "DELETE", f"/v1/memories/{memory_id}", token),
            _call(served, "PUT", "/v1/memory/settings", token, {"note": "Call me Al."}),
        ]
        health = _call(served, "GET", "/v1/health")
        during = _call(served, "GET", "/v1/memories?status=all", token)

    # Then every write is told the store cannot take it now, and when to try again
    for status, headers, body in writes:
        assert status == 503, body
        assert body["error"]["code"] == "storage_unavailable"
        assert int(headers["Retry-After"]) > 0
    # And health says the store is what is wrong, rather than ok
    assert health[0] == 503 and int(health[1]["Retry-After"]) > 0
    assert health[2] == {"status": "degraded", "reason": "storage_unavailable"}
    # And reads still answer, with nothing of the refused writes in them
    assert during[0] == 200 and during[2] == before
    assert _call(served, "GET", f"/v1/memories/{memory_id}/history", token)[2] == history
    assert _call(served, "GET", "/v1/memory/settings", token)[2]["note"] in ("", None)

    # And once the disk takes writes again, so does the server, and health says ok
    assert _call(served, "GET", "/v1/health")[:1] == (200,)
    status, _, rex = _call(served, "POST", "/v1/memories", token, {"text": "Has a dog named Rex."})
    assert status == 201
    listed = _call(served, "GET", "/v1/memories", token)[2]["memories"]
    assert {memory["memory_id"] for memory in listed} == {memory_id, rex["memory_id"]}
