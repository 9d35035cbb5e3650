"""The real local server on a free port: the whole memories contract over HTTP, real tokens."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from chatmemory.config import SQLITE_FILE
from chatmemory.local.tokens import LocalTokens
from tests.support.cli_server import cli_environment, run_cli, serve_in_process
from tests.support.local_server import Running, serve_locally

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path: Path, model_cache: Path) -> Iterator[Running]:
    with serve_locally(tmp_path, model_cache) as running:
        yield running


def test_the_whole_memories_contract_over_http(server: Running) -> None:
    alice = server.token_for("alice")

    # health and the OpenAPI document need no token
    assert server.call("GET", "/v1/health").body == {"status": "ok"}
    assert "/v1/memories" in server.call("GET", "/v1/openapi.json").body["paths"]

    # add, list, get
    created = server.call(
        "POST", "/v1/memories", token=alice, body={"text": "Is vegetarian.", "category": "diet"}
    )
    assert created.status == 201
    memory_id = created.body["memory_id"]
    listed = server.call("GET", "/v1/memories", token=alice)
    assert [m["memory_id"] for m in listed.body["memories"]] == [memory_id]
    assert (
        server.call("GET", f"/v1/memories/{memory_id}", token=alice).body["text"]
        == "Is vegetarian."
    )

    # correct: a new version, the old one kept as history
    corrected = server.call(
        "PATCH", f"/v1/memories/{memory_id}", token=alice, body={"text": "Is vegan."}
    )
    assert corrected.status == 200 and corrected.body["supersedes"] == memory_id
    new_id = corrected.body["memory_id"]
    superseded = server.call("GET", "/v1/memories?status=superseded", token=alice).body["memories"]
    assert [m["text"] for m in superseded] == ["Is vegetarian."]
    history = server.call("GET", f"/v1/memories/{new_id}/history", token=alice).body["events"]
    assert [event["op"] for event in history] == ["add", "update", "add"]

    # settings
    settings = server.call("PUT", "/v1/memory/settings", token=alice, body={"note": "Call me Al."})
    assert settings.body == {
        "enabled": True,
        "note": "Call me Al.",
        "muted_personas": [],
        "timezone": "UTC",
    }
    assert server.call("GET", "/v1/memory/settings", token=alice).body["note"] == "Call me Al."

    # notices (none yet: nothing was written in the background)
    assert server.call("GET", "/v1/notices", token=alice).body == {"notices": []}

    # delete one, then everything
    assert server.call("DELETE", f"/v1/memories/{new_id}", token=alice).status == 204
    assert server.call("GET", f"/v1/memories/{new_id}", token=alice).status == 404
    assert server.call("GET", "/v1/memories?status=all", token=alice).body["memories"] == []
    server.call("POST", "/v1/memories", token=alice, body={"text": "Has a cat named Miso."})
    assert server.call("DELETE", "/v1/memories", token=alice).status == 204
    assert server.call("GET", "/v1/memories?status=all", token=alice).body["memories"] == []


def test_bad_input_over_http_writes_nothing(server: Running) -> None:
    alice = server.token_for("alice")

    too_big = server.call(
        "POST", "/v1/memories", token=alice, raw=b'{"text": "' + b"x" * 70000 + b'"}'
    )
    malformed = server.call("POST", "/v1/memories", token=alice, raw=b"{nope")
    too_long = server.call("POST", "/v1/memories", token=alice, body={"text": "x" * 501})
    secret = server.call(
        "POST", "/v1/memories", token=alice, body={"text": "card 4111 1111 1111 1111"}
    )
    unknown = server.call("GET", "/v1/nothing-here", token=alice)
    wrong_method = server.call("PUT", "/v1/memories", token=alice, body={})

    assert (too_big.status, too_big.body["error"]["code"]) == (413, "payload_too_large")
    assert (malformed.status, malformed.body["error"]["code"]) == (400, "malformed_json")
    assert too_long.status == 400 and "text" in too_long.body["error"]["message"]
    assert (secret.status, secret.body["error"]["code"]) == (400, "secret_refused")
    assert unknown.status == 404
    assert (wrong_method.status, wrong_method.headers.get("Allow")) == (405, "DELETE, GET, POST")
    assert server.call("GET", "/v1/memories?status=all", token=alice).body["memories"] == []


def test_methods_no_route_serves_get_405_or_501_in_the_contracts_shape(server: Running) -> None:
    alice = server.token_for("alice")

    # A known path with a method it does not serve: 405, naming the ones it does
    for method, path in [("GET", "/v1/chat"), ("DELETE", "/v1/chat"), ("GET", "/v1/context")]:
        answer = server.call(method, path, token=alice)
        assert (answer.status, answer.headers.get("Allow")) == (405, "POST"), (method, path)
        assert answer.body["error"]["code"] == "method_not_allowed"
    # HEAD and TRACE are methods no route serves either; TRACE never echoes the request
    head = server.call("HEAD", "/v1/memories", token=alice)
    assert (head.status, head.headers.get("Allow"), head.body) == (405, "DELETE, GET, POST", None)
    trace = server.call("TRACE", "/v1/memories", token=alice)
    assert (trace.status, trace.body["error"]["code"]) == (405, "method_not_allowed")
    assert alice not in str(trace.body)
    # A method HTTP does not know is 501, as JSON rather than an HTML page
    unknown = server.call("BREW", "/v1/memories", token=alice)
    assert unknown.status == 501 and unknown.body["error"]["code"] == "not_implemented"


def test_the_cli_serves_and_mints_tokens_for_the_same_state_folder(
    tmp_path: Path, model_cache: Path
) -> None:
    # Given the CLI serving on a free port from a fresh state folder
    environment = cli_environment(tmp_path, model_cache)
    state = str(tmp_path / "state")
    with serve_in_process(environment, "--state-dir", state) as served:
        # When a token is minted for the same folder, and one with no folder named
        token = served.cli("token", "alice", "--state-dir", state)
        followed = served.cli("token", "bob")
        # Then the token is the only output and the server accepts it; with no folder
        # named, the CLI follows the running server's folder and says so
        assert token.stdout.count("\n") == 1 and token.stdout.count(".") == 2
        running = Running(url=served.url, tokens=LocalTokens("x" * 32), secret="")
        assert running.call("GET", "/v1/health").body == {"status": "ok"}
        assert running.call("GET", "/v1/memories", token=token.stdout.strip()).status == 200
        assert running.call("GET", "/v1/memories", token=followed.stdout.strip()).status == 200
        assert "using the state folder of the server running at" in followed.stderr


def _stream(server: Running, token: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """POST /v1/chat asking for SSE; the (event, data) pairs, read as they arrive."""
    request = Request(server.url + "/v1/chat", data=json.dumps(body).encode(), method="POST")  # noqa: S310
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "text/event-stream")
    request.add_header("Authorization", f"Bearer {token}")
    events: list[tuple[str, Any]] = []
    with urlopen(request, timeout=30) as response:  # noqa: S310 - our own local server
        assert response.headers["Content-Type"].startswith("text/event-stream")
        event = None
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((event or "message", json.loads(line.removeprefix("data: "))))
    return events


def test_a_new_user_is_remembered_across_conversations_and_chat_streams(server: Running) -> None:
    alice = server.token_for("alice")

    # Given a user who asks to be remembered as vegetarian
    saved = server.call(
        "POST", "/v1/chat", token=alice, body={"message": "remember that I'm vegetarian"}
    )
    assert saved.status == 200 and len(saved.body["saved"]) == 1
    [memory_id] = saved.body["saved"]

    # When they start a new conversation and ask for dinner ideas, streamed
    events = _stream(server, alice, {"message": "Can you give me some dinner ideas?"})

    # Then tokens arrive first, then one done event that used the memory
    kinds = [kind for kind, _ in events]
    assert kinds[:-1] == ["token"] * (len(kinds) - 1) and kinds[-1] == "done" and len(kinds) > 3
    done = events[-1][1]
    assert done["memories_used"] == [memory_id]
    assert done["memories_used_in"] == [{"memory_id": memory_id, "block": "memories"}]
    assert done["conversation_id"] != saved.body["conversation_id"]
    assert "".join(data["text"] for kind, data in events[:-1]) == done["reply"]
    # and the streamed turn was stored like any other
    listed = server.call("GET", f"/v1/memories/{memory_id}", token=alice)
    assert listed.body["last_used_at"] is not None


def test_a_streamed_turn_refuses_bad_input_before_streaming(server: Running) -> None:
    alice = server.token_for("alice")
    request = Request(server.url + "/v1/chat", data=b'{"message": ""}', method="POST")  # noqa: S310
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "text/event-stream")
    request.add_header("Authorization", f"Bearer {alice}")

    with pytest.raises(HTTPError) as refused:
        urlopen(request, timeout=10)  # noqa: S310

    assert refused.value.code == 400
    assert json.loads(refused.value.read())["error"]["code"] == "validation_error"


def _flush(state_dir: Path, model_cache: Path) -> str:
    environment = cli_environment(state_dir, model_cache)
    return run_cli(environment, "flush", "--state-dir", str(state_dir)).stdout


def test_facts_said_in_chat_are_learned_by_flush_and_corrected_later(
    server: Running, tmp_path: Path, model_cache: Path
) -> None:
    alice = server.token_for("alice")
    # Given a few facts said in a chat (no key: the offline model)
    first = server.call(
        "POST", "/v1/chat", token=alice, body={"message": "Hi! I'm vegetarian and I live in Pune."}
    )
    server.call(
        "POST",
        "/v1/chat",
        token=alice,
        body={
            "message": "I work as a backend engineer at Acme Corp.",
            "conversation_id": first.body["conversation_id"],
        },
    )

    # When a developer flushes instead of waiting for the idle timer (another process)
    assert "ran 1 write pipeline run(s)" in _flush(tmp_path, model_cache)

    # Then the memories are there, stated by the user, with their evidence, and a notice
    memories = server.call("GET", "/v1/memories", token=alice).body["memories"]
    assert sorted(m["text"] for m in memories) == [
        "Is vegetarian.",
        "Lives in Pune.",
        "Works as a backend engineer at Acme Corp.",
    ]
    assert all(m["stated_by"] == "user" and m["evidence"] for m in memories)
    [notice] = server.call("GET", "/v1/notices", token=alice).body["notices"]
    assert notice["text"].startswith("noted: ") and len(notice["memory_ids"]) == 3

    # And a later correction supersedes the old fact; the history shows both
    server.call(
        "POST", "/v1/chat", token=alice, body={"message": "I moved to Bengaluru last month."}
    )
    _flush(tmp_path, model_cache)
    texts = [m["text"] for m in server.call("GET", "/v1/memories", token=alice).body["memories"]]
    assert "Lives in Bengaluru." in texts and "Lives in Pune." not in texts
    new_id = next(
        m["memory_id"]
        for m in server.call("GET", "/v1/memories", token=alice).body["memories"]
        if m["text"] == "Lives in Bengaluru."
    )
    history = server.call("GET", f"/v1/memories/{new_id}/history", token=alice).body["events"]
    writes = [(e["op"], e["actor"]) for e in history if e["op"] != "use"]  # uses: recalled
    assert writes == [("add", "extractor"), ("update", "extractor"), ("add", "extractor")]
    old = server.call("GET", "/v1/memories?status=superseded", token=alice).body["memories"]
    assert [m["text"] for m in old] == ["Lives in Pune."]


def test_flush_finishes_the_purge_of_a_delete(
    server: Running, tmp_path: Path, model_cache: Path
) -> None:
    # Given a memory deleted on a server whose background worker never ran the purge
    alice = server.token_for("alice")
    created = server.call(
        "POST", "/v1/memories", token=alice, body={"text": "Has a tortoise called Quizzleberry."}
    ).body
    assert server.call("DELETE", f"/v1/memories/{created['memory_id']}", token=alice).status == 204
    assert server.container is not None
    stores = server.container.stores
    assert [
        t.memory_id for t in stores.tombstones.list_tombstones("alice", unpurged_only=True)
    ] == [created["memory_id"]]

    # When a developer flushes (another process, the same state folder)
    output = _flush(tmp_path, model_cache)

    # Then the purge ran there: the row is gone and the tombstone is marked purged
    assert "1 purge(s)" in output
    assert stores.tombstones.list_tombstones("alice", unpurged_only=True) == []
    with sqlite3.connect(tmp_path / SQLITE_FILE) as db:  # the row itself, not a view of it
        rows = db.execute(
            "SELECT count(*) FROM memories WHERE memory_id = ?", (created["memory_id"],)
        ).fetchone()
    assert rows == (0,)
    assert server.call("GET", "/v1/memories?status=all", token=alice).body["memories"] == []


def _stream_status(url: str, token: str, message: str) -> tuple[int, dict[str, str], bytes]:
    """POST /v1/chat asking for SSE: the status, headers and whole body."""
    request = Request(url + "/v1/chat", data=json.dumps({"message": message}).encode())  # noqa: S310
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "text/event-stream")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urlopen(request, timeout=30) as response:  # noqa: S310 - our own local server
            return response.status, dict(response.headers), response.read()
    except HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_a_streamed_turn_past_the_quota_is_a_429_before_streaming(
    tmp_path: Path, model_cache: Path
) -> None:
    # Given the CLI serving with a quota of two turns a minute (the real clock runs)
    environment = {
        **cli_environment(tmp_path, model_cache),
        "CHATMEMORY_QUOTA_TURNS_PER_MINUTE": "2",
        "CHATMEMORY_EMBEDDER": "hashing",
    }
    state = tmp_path / "state"
    with serve_in_process(environment, "--state-dir", str(state)) as served:
        alice = served.cli("token", "alice", "--state-dir", str(state)).stdout.strip()
        # When alice streams five turns in a row (at most two minutes' worth of quota)
        answers = [_stream_status(served.url, alice, f"streamed turn {n}") for n in range(5)]
    # Then some went through as streams and the refused ones are plain HTTP 429s
    statuses = [status for status, _, _ in answers]
    assert 200 in statuses and 429 in statuses and statuses.count(200) <= 4
    refused = [n for n, (status, _, _) in enumerate(answers) if status == 429]
    for n in refused:
        _, headers, body = answers[n]
        assert headers["Content-Type"] == "application/json"
        assert 1 <= int(headers["Retry-After"]) <= 60
        assert json.loads(body)["error"]["code"] == "rate_limited"
    # And nothing of a refused turn was stored
    with sqlite3.connect(state / SQLITE_FILE) as db:
        said = {row[0] for row in db.execute("SELECT content FROM messages WHERE role = 'user'")}
    allowed = {f"streamed turn {n}" for n, (status, _, _) in enumerate(answers) if status == 200}
    assert said == allowed
