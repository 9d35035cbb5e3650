"""Clients that stall, trickle, smuggle or leave: the server bounds what each may hold, cuts
what takes too long, refuses what two readers could read two ways, and logs a departure in
one quiet line.

The real local server, in this process, with tight limits where a test waits on one (a
deadline of half a second, not ten), so nothing here sleeps to let the server work.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.extraction import ExtractionInput, ExtractionResult
from chatmemory.domain.prompt import RenderedPrompt, Turn
from chatmemory.domain.routing import RouteDecision
from chatmemory.local.server import LocalGateway, LocalServer
from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from chatmemory.ports.model import (
    Model,
    ReplyDelta,
    ReplyDone,
    RoutingCase,
    ToolRunner,
    ToolSpec,
    UsesRequest,
)
from chatmemory.web.server import ServerLimits
from tests.support.local_server import ROOT, Running, serve_locally
from tests.support.stored import stored_for

pytestmark = pytest.mark.e2e

USER = "alice"
TIGHT = ServerLimits(workers=4, header_seconds=0.5, body_seconds=0.5, write_seconds=5)
CLIENT_PATIENCE_S = 10.0  # how long a test's client waits for an answer before failing


@pytest.fixture
def tight(tmp_path: Path, model_cache: Path) -> Iterator[Running]:
    """The local server with four workers and half-second read deadlines."""
    with serve_locally(tmp_path, model_cache, limits=TIGHT, embedder="hashing") as running:
        yield running


def _connect(server: Running) -> socket.socket:
    address = urlsplit(server.url)
    connection = socket.create_connection(
        (address.hostname or "127.0.0.1", address.port or 80), timeout=CLIENT_PATIENCE_S
    )
    return connection


def _read_until_closed(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (socket.timeout if it
    does not within the client's patience)."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def _json_body(raw: bytes) -> Any:
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


# ---- stalled and trickling clients ----------------------------------------------------


def test_a_client_that_trickles_its_headers_is_cut_at_the_header_deadline(
    tight: Running,
) -> None:
    # Given a client that sends its request line, then one header byte every tenth of a
    # second: never idle long enough for a per-read timeout, never done
    connection = _connect(tight)
    connection.sendall(b"GET /v1/memories HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.1):
            try:
                connection.sendall(b"a")
            except OSError:
                return

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    started = time.monotonic()
    try:
        # When the server has had it for longer than its header deadline
        answer = _read_until_closed(connection)
    finally:
        stop.set()
        trickler.join()
        connection.close()

    # Then it closed the connection, well before the client would have given up
    assert answer == b""
    assert time.monotonic() - started < CLIENT_PATIENCE_S


def test_a_body_that_does_not_arrive_whole_in_time_is_408_and_nothing_is_written(
    tight: Running,
) -> None:
    # Given alice's store, and a request that promises 100 bytes of body and sends 10
    assert tight.container is not None
    before = stored_for(tight.container.stores, USER)
    connection = _connect(tight)
    token = tight.token_for(USER)
    connection.sendall(
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {token}\r\nContent-Length: 100\r\n\r\n".encode()
        + b'{"text": "'
    )

    # When the body deadline passes
    with connection:
        answer = _read_until_closed(connection)

    # Then the server said so and closed the connection, and nothing was stored
    assert _status(answer) == 408
    assert _json_body(answer)["error"]["code"] == "request_timeout"
    assert b"Connection: close" in answer
    assert stored_for(tight.container.stores, USER) == before


def test_stalled_clients_hold_no_more_threads_than_the_pool_and_others_are_served_after(
    tight: Running,
) -> None:
    # Given three times as many clients as workers, each stalled halfway through its headers
    assert tight.server is not None
    threads_before = threading.active_count()
    stalled = [_connect(tight) for _ in range(3 * TIGHT.workers)]
    for connection in stalled:
        connection.sendall(b"GET /v1/memories HTTP/1.1\r\nHost: x\r\n")

    # Then the server never holds more of them at once than it has workers
    assert tight.server.worker_count <= TIGHT.workers
    assert threading.active_count() - threads_before <= TIGHT.workers

    # And a client who asks properly is answered once the stalled ones are cut
    try:
        answer = tight.call("GET", "/v1/memories", token=tight.token_for(USER))
        assert answer.status == 200
        for connection in stalled:
            assert _read_until_closed(connection) == b""
    finally:
        for connection in stalled:
            connection.close()
    assert tight.server.worker_count <= TIGHT.workers


# ---- where a body ends is told one way only ---------------------------------------------


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: 22\r\nContent-Length: 0\r\n",
        b"Content-Length: 22\r\nContent-Length: 22\r\n",
        b"Content-Length: -22\r\n",
        b"Content-Length: +22\r\n",
        b"Content-Length: 2_2\r\n",
        b"Content-Length: 22\r\nTransfer-Encoding: gzip, chunked\r\n",
    ],
    ids=["two-lengths", "the-same-length-twice", "negative", "signed", "underscored", "chunked"],
)
def test_a_body_whose_end_could_be_read_two_ways_is_refused_and_nothing_is_written(
    server: Running, container: Container, framing: bytes
) -> None:
    # Given a request whose body's end a proxy and this server could read differently
    before = stored_for(container.stores, USER)
    connection = _connect(server)
    token = server.token_for(USER)
    connection.sendall(
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {token}\r\n".encode()
        + framing
        + b'\r\n{"text": "Has a cat."}'
    )

    # When the server reads it
    with connection:
        answer = _read_until_closed(connection)

    # Then it is refused, the connection closed unread, and nothing stored
    assert _status(answer) in (400, 411)
    assert _json_body(answer)["error"]["code"] in ("validation_error", "length_required")
    assert stored_for(container.stores, USER) == before


# ---- a client that leaves ---------------------------------------------------------------


class GatedModel(Model):
    """The offline model, holding its reply after the first piece until `go` is set: the
    moment a client can leave mid-stream, made to last as long as the test needs."""

    def __init__(self, inner: Model, go: threading.Event) -> None:
        self._inner, self._go = inner, go
        self.name, self.offline = inner.name, inner.offline

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        for number, event in enumerate(self._inner.reply(prompt, tools, run_tool)):
            if number == 1:
                self._go.wait(CLIENT_PATIENCE_S)
            yield event

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        return self._inner.summarize(summary, turns, max_tokens=max_tokens)

    def extract(self, request: ExtractionInput) -> ExtractionResult:
        return self._inner.extract(request)

    def route(self, cases: Sequence[RoutingCase]) -> list[RouteDecision]:
        return self._inner.route(cases)

    def write_uses(self, items: Sequence[UsesRequest]) -> list[tuple[str, ...]]:
        return self._inner.write_uses(items)


@pytest.fixture
def go() -> threading.Event:
    return threading.Event()


@pytest.fixture
def gated(tmp_path: Path, model_cache: Path, go: threading.Event) -> Iterator[Running]:
    """The local server whose chat model waits for `go` after its first piece."""
    container = Container(
        Settings(state_dir=tmp_path, project_root=ROOT, model_cache=model_cache, embedder="hashing")
    )
    container.model = GatedModel(container.model, go)  # before anything is built on it
    use_container(container)
    tokens = LocalTokens(load_or_create_secret(tmp_path))
    gateway = LocalGateway(ROOT, tokens)
    local = LocalServer("127.0.0.1", 0, gateway)
    local.start()
    gateway.warm_up(container)
    try:
        yield Running(local.url, tokens, "", container, local)
    finally:
        local.stop()
        use_container(None)


def _reset(connection: socket.socket) -> None:
    """Leave as a crashed or killed client does: a reset, not a goodbye."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


@pytest.mark.parametrize("when", ["mid-stream", "after-the-stream"])
def test_a_client_that_leaves_a_stream_costs_one_quiet_log_line_and_no_traceback(
    gated: Running,
    go: threading.Event,
    when: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Given alice streaming a chat turn
    assert gated.server is not None and gated.container is not None
    if when == "after-the-stream":
        go.set()
    connection = _connect(gated)
    body = json.dumps({"message": "Tell me about my dog Rex and his long walks."}).encode()
    connection.sendall(
        b"POST /v1/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Accept: text/event-stream\r\n"
        + f"Authorization: Bearer {gated.token_for(USER)}\r\n".encode()
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    received = b""
    ending = b"event: token" if when == "mid-stream" else b"\r\n0\r\n\r\n"
    with caplog.at_level(logging.INFO):
        while ending not in received:
            chunk = connection.recv(65536)
            assert chunk, received
            received += chunk

        # When she leaves (a reset), mid-way or once it is over, and the turn goes on
        _reset(connection)
        go.set()
        assert gated.server.wait_idle()

    # Then the request is logged once, as a departure if it left mid-way, and nothing
    # else is said about it: no error, no traceback
    lines = [record for record in caplog.records if "/v1/chat" in record.getMessage()]
    assert len(lines) == 1, [line.getMessage() for line in lines]
    assert lines[0].getMessage().split()[2] == ("499" if when == "mid-stream" else "200")
    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert "Traceback" not in capfd.readouterr().err

    # And a turn it left mid-way is not kept
    conversations = gated.container.stores.conversations.list_conversations(USER)
    assert (conversations == []) == (when == "mid-stream")
