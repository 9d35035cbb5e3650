"""`chatmemory export` and `chatmemory import` as a user runs them, against the local
server the CLI finds running: export, forget everything, import, and the same memories are
back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.config import default_state_dir
from chatmemory.local.running import record_running_server
from tests.support.cli_server import cli_environment, run_cli
from tests.support.local_server import Running, serve_locally

pytestmark = pytest.mark.e2e


@pytest.fixture
def environment(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    return cli_environment(tmp_path, model_cache)


@pytest.fixture
def served(tmp_path: Path, model_cache: Path) -> Iterator[Running]:
    """The local server (the hashing embedder, for speed), recorded where `chatmemory
    serve` records itself, so the CLI finds it as it finds a served one."""
    state_dir = tmp_path / "state"
    with serve_locally(state_dir, model_cache, embedder="hashing") as running:
        record = record_running_server(
            default_state_dir(str(tmp_path / "xdg-state")), state_dir, running.url
        )
        try:
            yield running
        finally:
            record.remove()


def test_export_forget_everything_import_gives_back_the_same_memories(
    environment: dict[str, str], served: Running, tmp_path: Path
) -> None:
    token = served.token_for("alice")

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        answer = served.call(method, path, token=token, body=body)
        return answer.status, answer.body

    # Given Alice's memories: one corrected (its history kept), one another persona's
    _, pune = call("POST", "/v1/memories", {"text": "Lives in Pune.", "category": "location"})
    call("PATCH", f"/v1/memories/{pune['memory_id']}", {"text": "Lives in Bengaluru."})
    call("POST", "/v1/memories", {"text": "Is vegetarian.", "category": "diet"})
    call("POST", "/v1/memories", {"text": "Plays chess on Sundays.", "persona": "nolan"})
    call("PUT", "/v1/memory/settings", {"note": "Call me Sam."})
    before = _everything(call)

    # When she exports them (to standard output), forgets everything, and imports them
    exported = run_cli(environment, "export", "alice", "-")
    export_file = tmp_path / "alice.json"
    export_file.write_text(exported.stdout, encoding="utf-8")
    assert call("DELETE", "/v1/memories")[0] == 204
    assert _everything(call) == []
    first = run_cli(environment, "import", "alice", str(export_file))
    after = _everything(call)
    again = run_cli(environment, "import", "alice", str(export_file))

    # Then the same memories are back, history as history, and a second import changes nothing
    document = json.loads(exported.stdout)
    assert document["schema"] == "chatmemory.export/1" and len(document["memories"]) == 4
    assert "exported 4 memory version(s) of alice" in exported.stderr
    assert after == before
    assert ("Lives in Pune.", "location", "assistant", "superseded") in after
    assert first.stdout.startswith("imported 4, unchanged 0, skipped 0")
    assert again.stdout.startswith("imported 0, unchanged 4, skipped 0")


def test_import_of_a_file_that_is_not_an_export_says_so(
    environment: dict[str, str], tmp_path: Path
) -> None:
    not_json = tmp_path / "notes.txt"
    not_json.write_text("my memories, roughly", encoding="utf-8")

    done = run_cli(environment, "import", "alice", str(not_json), check=False)

    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not JSON" in done.stderr and "not a chatmemory export" in done.stderr


def test_export_with_no_server_running_says_how_to_start_one(
    environment: dict[str, str], tmp_path: Path
) -> None:
    done = run_cli(environment, "export", "alice", str(tmp_path / "out.json"), check=False)

    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "no chatmemory server is running" in done.stderr
    assert not (tmp_path / "out.json").exists()


def _everything(call: Any) -> list[tuple[str, str, str, str]]:
    status, page = call("GET", "/v1/memories?status=all&limit=100")
    assert status == 200
    return sorted((m["text"], m["category"], m["persona"], m["status"]) for m in page["memories"])
