"""`chatmemory mcp` as an MCP host starts it, driven by the SDK's own client against the
real local server: over stdio as a local user (the command finds the running server and
mints its tokens), and over streamable HTTP with each caller's own token. Its one-line
refusals live in tests/unit/test_mcp_command.py."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from chatmemory.config import default_state_dir
from chatmemory.local.running import record_running_server
from tests.support.cli_server import cli_environment
from tests.support.local_server import ROOT, Running, serve_locally
from tests.support.mcp_host import answer, error, flush

pytestmark = pytest.mark.e2e

CLI = ("-m", "chatmemory.local.cli", "mcp")
# Importing the SDK and the package in a fresh interpreter: this only bounds a broken start.
START_DEADLINE_S = 60


@pytest.fixture
def environment(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    return cli_environment(tmp_path, model_cache)


@pytest.fixture
def server(tmp_path: Path, model_cache: Path) -> Iterator[Running]:
    with serve_locally(tmp_path / "state", model_cache, embedder="hashing", model="offline") as up:
        yield up


def test_a_host_round_trips_over_stdio_as_a_local_user(
    server: Running, environment: dict[str, str], tmp_path: Path
) -> None:
    # Given the local server running (its record in the well-known folder)
    record = record_running_server(
        default_state_dir(environment["XDG_STATE_HOME"]), tmp_path / "state", server.url
    )
    host = StdioServerParameters(
        command=sys.executable, args=[*CLI, "--user", "alice"], env=environment, cwd=ROOT
    )

    async def scenario() -> None:
        # When a host starts `chatmemory mcp --user alice` and uses every tool
        async with Client(host) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            observed = await answer(
                client,
                "memory_observe",
                user_message="I'm vegetarian and I live in Pune.",
                assistant_message="Noted!",
            )
            flush(server.container)  # type: ignore[arg-type]
            [pune] = [
                item
                for item in (await answer(client, "memory_recall", query="Pune"))["items"]
                if item["label"] == "Lives in Pune"
            ]
            corrected = await answer(
                client, "memory_correct", memory_id=pune["memory_id"], text="Lives in Bengaluru."
            )
            after = await answer(client, "memory_recall", query="Bengaluru")
            await answer(client, "memory_forget", memory_id=corrected["memory"]["memory_id"])
            known = await answer(client, "memory_state")

        # Then it acted as alice all along, and what she corrected and forgot is gone
        assert listed == {
            "memory_state",
            "memory_recall",
            "memory_observe",
            "memory_correct",
            "memory_forget",
        }
        assert observed["stored"] and observed["learns"]
        assert "Lives in Bengaluru" in [item["label"] for item in after["items"]]
        assert [m["text"] for m in known["memories"]] == ["Is vegetarian."]
        alices = server.call("GET", "/v1/memories", token=server.token_for("alice")).body
        assert [m["text"] for m in alices["memories"]] == ["Is vegetarian."]

    try:
        anyio.run(scenario)
    finally:
        record.remove()


def test_streamable_http_serves_each_caller_as_themselves(
    server: Running, environment: dict[str, str]
) -> None:
    # Given `chatmemory mcp --http` in front of the server, with no user of its own
    with mcp_over_http(environment, "--url", server.url) as endpoint:

        async def scenario() -> None:
            # When bob's host connects with bob's token, and another with none
            bearer = {"Authorization": f"Bearer {server.token_for('bob')}"}
            async with (
                httpx2.AsyncClient(headers=bearer) as http,
                Client(streamable_http_client(endpoint, http_client=http)) as client,
            ):
                await answer(client, "memory_observe", user_message="I live in Lisbon.")
                flush(server.container)  # type: ignore[arg-type]
                bobs = await answer(client, "memory_state")
            async with Client(endpoint) as anonymous:
                refused = await error(anonymous, "memory_state")

            # Then bob's memory is bob's; a caller with no token is refused in the contract's words
            assert [m["text"] for m in bobs["memories"]] == ["Lives in Lisbon."]
            assert refused["code"] == "unauthorized"

        anyio.run(scenario)


@contextmanager
def mcp_over_http(environment: dict[str, str], *arguments: str) -> Iterator[str]:
    """`chatmemory mcp --http --port 0 …`, yielded as its endpoint once it says where it is."""
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, *CLI, "--http", "--port", "0", *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **environment},
    )
    try:
        yield _endpoint(process)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _endpoint(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + START_DEADLINE_S
    said: list[str] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not selector.select(timeout=remaining):
            raise TimeoutError(f"chatmemory mcp did not start; it said {said!r}")
        line = process.stderr.readline()
        if not line:
            raise RuntimeError(f"chatmemory mcp exited early; it said {said!r}")
        said.append(line.rstrip("\n"))
        if " on http://" in line:
            return line.split(" on ", 1)[1].split(",", 1)[0]
