"""The CLI answers a developer's mistakes with one clear line, never a traceback."""

from __future__ import annotations

import dataclasses
import json
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from chatmemory.config import Container, Settings
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.services.memories import NewMemory
from tests.support import builders
from tests.support.cli_server import cli_environment, run_cli, serve_in_process
from tests.support.raw_transcript import store_as_said

pytestmark = pytest.mark.e2e


@pytest.fixture
def environment(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    return cli_environment(tmp_path, model_cache)


@pytest.mark.parametrize("hours", ["0", "-1", "1e9", "nan", "inf", "soon"])
def test_a_token_lifetime_out_of_range_is_refused(
    environment: dict[str, str], tmp_path: Path, hours: str
) -> None:
    done = run_cli(
        environment, "token", "alice", "--state-dir", str(tmp_path), "--hours", hours, check=False
    )

    assert done.returncode == 2 and done.stdout == ""
    assert "--hours" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_serve_refuses_a_port_out_of_range(
    environment: dict[str, str], tmp_path: Path, port: str
) -> None:
    done = run_cli(environment, "serve", "--port", port, "--state-dir", str(tmp_path), check=False)

    assert done.returncode == 2
    assert "--port" in done.stderr and "Traceback" not in done.stderr


def test_serve_on_a_port_in_use_says_so_and_exits(
    environment: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])

        done = run_cli(
            environment, "serve", "--port", port, "--state-dir", str(tmp_path), check=False
        )

    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("days", ["-1", "3651", "soon"])
def test_a_clock_ahead_out_of_range_is_refused(
    environment: dict[str, str], tmp_path: Path, days: str
) -> None:
    done = run_cli(
        environment, "serve", "--days-later", days, "--state-dir", str(tmp_path), check=False
    )

    assert done.returncode == 2
    assert "--days-later" in done.stderr and "Traceback" not in done.stderr


def test_the_nightly_review_runs_on_its_own(environment: dict[str, str], tmp_path: Path) -> None:
    done = run_cli(environment, "nightly", "--state-dir", str(tmp_path))

    assert done.stdout.strip() == "reviewed 0 quiet thread(s): 0 went dormant"


def test_reindex_gives_vectors_to_a_memory_stored_without_them(
    environment: dict[str, str], tmp_path: Path
) -> None:
    # Given a memory stored while the embedder failed (kept, without vectors)
    container = Container(Settings(state_dir=tmp_path, embedder="hashing"))
    memory = container.memories.create("ada", NewMemory(text="Keeps bees on the roof.")).memory
    container.stores.memories.put_memory(dataclasses.replace(memory, embedding=None))

    # When the developer runs the re-index on that folder
    environment = {**environment, "CHATMEMORY_EMBEDDER": "hashing"}
    done = run_cli(environment, "reindex", "--state-dir", str(tmp_path))

    # Then it says what it did, and the memory has vectors again
    assert done.stdout.strip() == (
        "re-indexed 1 user(s): 1 memory(ies) given new vectors, 1 sent to the index, "
        "0 changed meanwhile"
    )
    (again,) = container.stores.memories.iter_memories("ada")
    assert again.embedding is not None


def test_a_folder_embedded_by_another_model_is_named_until_reembedded(
    environment: dict[str, str], tmp_path: Path
) -> None:
    # Given a folder whose mark says MiniLM embedded its memories, now run with the hashing
    # stand-in (as when the model is not installed: both make 384 dimensions)
    container = Container(Settings(state_dir=tmp_path, embedder="hashing"))
    container.memories.create("ada", NewMemory(text="Keeps bees on the roof."))
    (tmp_path / "embedder.txt").write_text("minilm-l6-v2\n")
    environment = {**environment, "CHATMEMORY_EMBEDDER": "hashing"}

    # When the re-index runs without --reembed, it says what is wrong and how to fix it
    plain = run_cli(environment, "reindex", "--state-dir", str(tmp_path))
    assert "were embedded by minilm-l6-v2" in plain.stderr and "--reembed" in plain.stderr

    # And with --reembed every memory is embedded again, and the folder says so
    again = run_cli(environment, "reindex", "--reembed", "--state-dir", str(tmp_path))
    assert "1 memory(ies) given new vectors" in again.stdout and again.stderr == ""
    assert (tmp_path / "embedder.txt").read_text().strip() == "hashing-384"


def test_a_server_ahead_of_time_takes_real_tokens_and_its_flush_runs_on_its_day(
    environment: dict[str, str],
) -> None:
    # Given a server whose clock runs thirty days ahead
    with serve_in_process(environment, "--days-later", "30") as served:
        assert any("30 day(s) ahead" in line for line in served.banner)
        token = served.cli("token", "dan").stdout.strip()

        # When Dan tells it something (his token was minted in real time), and it is flushed
        status, _ = _call(served.url, "POST", "/v1/chat", token, {"message": INTERVIEW})
        flushed = served.cli("flush").stdout
        status_listed, listed = _call(served.url, "GET", "/v1/memories?kind=thread", token)

    # Then the thread was learned on the server's day, thirty days from now
    assert status == 200 and "ran 1 write pipeline run(s)" in flushed
    assert status_listed == 200
    (thread,) = listed["memories"]
    learned = datetime.fromisoformat(thread["created_at"].replace("Z", "+00:00"))
    assert abs(learned - (datetime.now(UTC) + timedelta(days=30))) < timedelta(hours=1)


INTERVIEW = "I have a job interview at Acme on Thursday."


def test_memories_imported_and_typed_reach_the_profile_after_a_flush(
    environment: dict[str, str],
) -> None:
    # Given a server, five memories imported and two typed over HTTP, and no chat
    with serve_in_process(environment) as served:
        token = served.cli("token", "ana").stdout.strip()
        rows = [
            _exported_row(f"mem_import_{number}", text, category)
            for number, (text, category) in enumerate(
                [
                    ("Lives in Pune.", "location"),
                    ("Works as a nurse.", "work"),
                    ("Has a cat named Miso.", "pets"),
                    ("Speaks Marathi.", "language"),
                    ("Plays the cello.", "hobbies"),
                ]
            )
        ]
        document = {"schema": "chatmemory.export/1", "memories": rows}
        imported = _call(served.url, "POST", "/v1/memories/import", token, document)
        for text in ("Is vegetarian.", "Loves hiking."):
            assert _call(served.url, "POST", "/v1/memories", token, {"text": text})[0] == 201

        # When the background work is flushed
        flushed = served.cli("flush").stdout
        status, context = _call(served.url, "POST", "/v1/context", token, {"message": "Hi"})

    # Then the next context's profile holds all seven, and says which they are
    assert imported[0] == 200, imported
    assert "profile(s)" in flushed  # the server's worker may have rebuilt it already
    assert status == 200 and len(context["blocks"]["profile"].splitlines()) == 7
    profile = [u for u in context["memories_used_in"] if u["block"] == "profile"]
    assert len(profile) == 7


def _exported_row(memory_id: str, text: str, category: str) -> dict[str, Any]:
    """A memory as `chatmemory.export/1` writes it (docs/api.md "Export and import")."""
    learned = "2026-10-01T09:00:00.000000Z"
    return {
        "memory_id": memory_id, "text": text, "category": category, "kind": "fact",
        "persona": "assistant", "subject": "user", "stated_by": "user", "importance": 5,
        "status": "active", "key": None, "created_at": learned, "updated_at": learned,
        "valid_from": None, "valid_until": None, "valid_to": None, "supersedes": None,
        "closed_by": None, "source_message_id": None, "evidence": [], "last_used_at": None,
        "recall_count": 0, "seen": None, "stability_days": None, "reinforced_at": None,
        "archived_at": None, "uses": None, "uses_from": None, "thread": None,
    }  # fmt: skip


def _call(url: str, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = Request(url + path, data=data, method=method)  # noqa: S310 - our own local server
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_the_server_makes_its_state_folder_private_and_writes_only_private_files(
    environment: dict[str, str], tmp_path: Path
) -> None:
    # Given a state folder others may read, holding a database they may read
    state = tmp_path / "shared-state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    run_cli(environment, "flush", "--state-dir", str(state))  # creates the database
    for path in state.iterdir():
        path.chmod(0o644)
    state.chmod(0o755)

    # When the server starts on it, and a memory is written
    with serve_in_process(environment, "--state-dir", str(state)) as served:
        token = served.cli("token", "ana", "--state-dir", str(state)).stdout.strip()
        status, _ = _call(served.url, "POST", "/v1/memories", token, {"text": "Plays the oboe."})

    # Then the folder and every file in it — those it found and those it made — are its
    # owner's alone
    assert status == 201
    assert state.stat().st_mode & 0o777 == 0o700
    loose = {p.name: oct(p.stat().st_mode & 0o777) for p in state.rglob("*") if p.is_file()}
    assert loose and all(mode == "0o600" for mode in loose.values()), loose


def test_a_state_folder_from_before_masking_is_masked_when_the_server_starts(
    environment: dict[str, str], tmp_path: Path
) -> None:
    # Given a state folder whose stored message holds a card number, as releases before
    # masking on write kept it
    container = Container(Settings(state_dir=tmp_path, embedder="hashing"))
    conversation = builders.conversation("ada", container.clock.now())
    container.stores.conversations.append_messages(
        "ada",
        conversation.conversation_id,
        [NewMessage(Role.USER, "…", 1)],
        container.clock.now(),
        create=conversation,
    )
    said = f"My card is {CARD} and I live in Pune."
    store_as_said(
        container.stores, tmp_path, "ada", conversation.conversation_id, seq=1, content=said
    )

    # When the server starts on it, and a flush runs after
    with serve_in_process(environment, "--state-dir", str(tmp_path)) as served:
        flushed = served.cli("flush", "--state-dir", str(tmp_path)).stdout

    # Then the server masked it as it started, said so, and the flush had nothing left
    assert any("masked the secrets in 1 stored message" in line for line in served.banner)
    [stored] = container.stores.conversations.list_messages("ada", conversation.conversation_id)
    assert CARD not in stored.content and stored.content.endswith(" and I live in Pune.")
    assert "masked" not in flushed


CARD = "4111 1111 1111 1111"
