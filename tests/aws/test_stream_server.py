"""The streaming endpoint's server, as the Lambda Web Adapter talks to it: real HTTP on loopback,
RS256 tokens from a test issuer, a container on SQLite with the offline model."""

from __future__ import annotations

import http.client
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from chatmemory.adapters.clock import ManualClock
from chatmemory.api.errors import MAX_BODY_BYTES
from chatmemory.aws.jwks import JwksVerifier
from chatmemory.aws.stream_server import HEALTH_PATH, StreamServer, bearer_token
from chatmemory.config import Container, Settings, use_container
from tests.aws.test_jwks import AUDIENCES, ISSUER, Issuer

EVENT_STREAM = "text/event-stream"
USER = "user-123"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)

    @property
    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """The SSE frames: (event name, data) in order."""
        frames = []
        for frame in self.raw.decode().split("\n\n"):
            if not frame.strip():
                continue
            fields = dict(line.split(": ", 1) for line in frame.splitlines())
            frames.append((fields["event"], json.loads(fields["data"])))
        return frames


@dataclass
class Running:
    server: StreamServer
    issuer: Issuer
    container: Container

    def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        body: Any = None,
        raw: bytes | None = None,
        accept: str | None = EVENT_STREAM,
        authorization: str | None = None,
    ) -> Answer:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Content-Type": "application/json"}
        if accept:
            headers["Accept"] = accept
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if authorization:
            headers["Authorization"] = authorization
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            return Answer(response.status, dict(response.getheaders()), response.read())
        finally:
            connection.close()

    def chat(self, message: str = "hello there", **call: Any) -> Answer:
        call.setdefault("token", self.issuer.token(sub=USER))
        return self.call("POST", "/v1/chat", body={"message": message}, **call)


@pytest.fixture
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def running(tmp_path: Path, clock: ManualClock, issuer: Issuer) -> Iterator[Running]:
    # No model key in the settings: the container picks the offline stand-in.
    container = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(container)
    server = StreamServer("127.0.0.1", 0, JwksVerifier(ISSUER, AUDIENCES, fetch=issuer.fetch))
    server.start()
    try:
        yield Running(server, issuer, container)
    finally:
        server.stop()
        use_container(None)


class Records(logging.Handler):
    """Keeps what the service logs; `request_logged` is set by the per-request line,
    which the server writes after the response has gone out."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.request_logged = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if record.getMessage() == "request":
            self.request_logged.set()


@pytest.fixture
def log_records() -> Iterator[Records]:
    handler = Records()
    service_logger = logging.getLogger("chatmemory")  # powertools' logger for the service
    service_logger.addHandler(handler)
    try:
        yield handler
    finally:
        service_logger.removeHandler(handler)


def assert_error(answer: Answer, status: int, code: str) -> None:
    assert answer.status == status, answer.raw
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json["error"]["code"] == code
    assert answer.json["error"]["message"]


# ---- readiness -----------------------------------------------------------------------


def test_the_readiness_check_answers_without_a_token(running: Running) -> None:
    answer = running.call("GET", HEALTH_PATH, accept=None)

    assert answer.status == 200
    assert answer.json == {"status": "ok"}


# ---- streaming -----------------------------------------------------------------------


def test_a_chat_turn_streams_token_events_then_done(running: Running) -> None:
    # When a user with a valid token asks for a stream
    answer = running.chat("hi there, what's new?")

    # Then the reply arrives as Server-Sent Events, sent in chunks as they are produced
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith(EVENT_STREAM)
    assert answer.headers["Transfer-Encoding"] == "chunked"
    events = answer.events
    names = [name for name, _ in events]
    assert names[-1] == "done" and names.count("done") == 1
    assert len(names) > 2 and set(names[:-1]) == {"token"}
    # And `done` carries the whole turn, whose reply is exactly the streamed text
    done = events[-1][1]
    assert done["conversation_id"] and done["message_id"]
    assert done["reply"] == "".join(data["text"] for _, data in events[:-1])


def test_the_turn_belongs_to_the_tokens_subject(running: Running) -> None:
    answer = running.chat(token=running.issuer.token(sub="user-456"))

    conversation_id = answer.events[-1][1]["conversation_id"]
    assert (
        running.container.stores.conversations.get_conversation("user-456", conversation_id)
        is not None
    )
    assert running.container.stores.conversations.get_conversation(USER, conversation_id) is None


def test_the_next_message_continues_the_same_conversation(running: Running) -> None:
    first = running.chat("hello").events[-1][1]["conversation_id"]

    second = running.call(
        "POST",
        "/v1/chat",
        token=running.issuer.token(sub=USER),
        body={"message": "and again", "conversation_id": first},
    )

    assert second.events[-1][1]["conversation_id"] == first


def test_a_request_the_turn_cannot_start_from_gets_a_plain_error(running: Running) -> None:
    answer = running.call(
        "POST", "/v1/chat", token=running.issuer.token(sub=USER), body={"persona": "assistant"}
    )

    assert_error(answer, 400, "validation_error")
    assert "message" in answer.json["error"]["message"]


def test_a_client_that_does_not_ask_for_a_stream_is_sent_to_the_http_api(
    running: Running,
) -> None:
    answer = running.chat(accept="application/json")

    assert_error(answer, 406, "not_acceptable")
    assert "HTTP API" in answer.json["error"]["message"]


# ---- tokens --------------------------------------------------------------------------


def test_no_token_is_401(running: Running) -> None:
    answer = running.call("POST", "/v1/chat", body={"message": "hello"})

    assert_error(answer, 401, "unauthorized")
    assert answer.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "make_token",
    [
        lambda issuer: issuer.token(exp=datetime.now(UTC) - timedelta(minutes=5)),
        lambda issuer: issuer.token(aud="another-app"),
        lambda issuer: issuer.token(iss="https://evil.example.com"),
        lambda issuer: issuer.token(
            key=rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ),
        lambda issuer: issuer.token(sub=" user-123"),
        lambda issuer: "not-a-jwt",
    ],
    ids=["expired", "wrong audience", "wrong issuer", "wrong key", "unusable subject", "garbage"],
)
def test_an_invalid_token_is_401(running: Running, make_token: Any) -> None:
    answer = running.chat(token=make_token(running.issuer))

    assert_error(answer, 401, "unauthorized")


def test_the_app_credential_has_no_user_to_chat_as_and_is_403(running: Running) -> None:
    # A client-credentials token (Cognito: `sub` is the app client, `scope` the room scope)
    app_token = running.issuer.token(sub="the-app-client", scope="chatmemory/rooms")

    answer = running.chat(token=app_token)

    assert_error(answer, 403, "forbidden")
    assert running.container.stores.conversations.list_conversations("the-app-client") == []


def test_a_non_bearer_authorization_is_401(running: Running) -> None:
    answer = running.chat(token=None, authorization="Basic dXNlcjpwYXNz")

    assert_error(answer, 401, "unauthorized")


def test_unreachable_issuer_keys_are_503_not_401(tmp_path: Path, clock: ManualClock) -> None:
    # Given a server whose issuer's JWKS cannot be fetched
    def unreachable(url: str) -> dict[str, Any]:
        raise OSError("connection refused")

    container = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(container)
    server = StreamServer("127.0.0.1", 0, JwksVerifier(ISSUER, AUDIENCES, fetch=unreachable))
    server.start()
    try:
        running = Running(server, Issuer(), container)

        # When a request comes with a token
        answer = running.chat()
    finally:
        server.stop()
        use_container(None)

    # Then the client is told to retry, not that its token is bad
    assert_error(answer, 503, "unavailable")
    assert answer.headers["Retry-After"]


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc.def.ghi", "abc.def.ghi"),
        ("bearer abc.def.ghi", "abc.def.ghi"),
        ("Bearer   abc.def.ghi  ", "abc.def.ghi"),
        ("Bearer", None),
        ("Basic abc", None),
        (None, None),
    ],
)
def test_the_bearer_token_is_read_from_the_authorization_header(
    header: str | None, token: str | None
) -> None:
    assert bearer_token(header) == token


# ---- limits and routes ---------------------------------------------------------------


def test_an_oversized_body_is_413(running: Running) -> None:
    answer = running.call(
        "POST",
        "/v1/chat",
        token=running.issuer.token(sub=USER),
        raw=b"x" * (MAX_BODY_BYTES + 1),
    )

    assert_error(answer, 413, "payload_too_large")


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/"), ("POST", "/v1/context"), ("GET", "/v1/memories"), ("POST", "/v1/chat/x")],
)
def test_any_other_path_is_404(running: Running, method: str, path: str) -> None:
    answer = running.call(method, path, token=running.issuer.token(sub=USER))

    assert_error(answer, 404, "not_found")


def test_a_known_path_with_the_wrong_method_is_405(running: Running) -> None:
    answer = running.call("GET", "/v1/chat", token=running.issuer.token(sub=USER))

    assert_error(answer, 405, "method_not_allowed")
    assert answer.headers["Allow"] == "POST"


# ---- logs ----------------------------------------------------------------------------


def test_each_request_logs_one_line_without_body_or_token(
    running: Running, log_records: Records
) -> None:
    # Given a request with a secret-looking message and a token
    token = running.issuer.token(sub=USER)
    message = "my private thought about pineapples"

    # When it is served
    running.call("POST", "/v1/chat?secretquery=1", token=token, body={"message": message})

    # Then exactly one request line is logged: method, path, status, time
    assert log_records.request_logged.wait(timeout=10)  # written just after the response
    lines = [record for record in log_records.records if record.getMessage() == "request"]
    assert len(lines) == 1
    line = lines[0].__dict__
    assert (line["method"], line["path"], line["status"]) == ("POST", "/v1/chat", 200)
    assert line["duration_ms"] >= 0
    # And nothing logged holds the token, the message or the query
    logged = json.dumps([record.__dict__ for record in log_records.records], default=str)
    assert token not in logged and "pineapples" not in logged and "secretquery" not in logged


def test_a_streamed_turn_past_the_quota_is_a_429_before_any_stream(
    tmp_path: Path, clock: ManualClock, issuer: Issuer
) -> None:
    # Given a user's two turns for this minute taken through the streaming endpoint
    settings = Settings(state_dir=tmp_path, embedder="hashing", quota_turns_per_minute=2)
    container = Container(settings, clock)
    use_container(container)
    server = StreamServer("127.0.0.1", 0, JwksVerifier(ISSUER, AUDIENCES, fetch=issuer.fetch))
    server.start()
    try:
        running = Running(server, issuer, container)
        clock.advance(timedelta(seconds=30))
        assert [running.chat().status for _ in range(2)] == [200, 200]
        # When a third comes in the same minute
        answer = running.chat("remember that I am vegetarian")
        # And another user's in that minute
        theirs = running.chat(token=issuer.token(sub="someone-else"))
    finally:
        server.stop()
        use_container(None)

    # Then the third is an HTTP 429 with Retry-After, not an event stream; nothing kept
    assert_error(answer, 429, "rate_limited")
    assert answer.headers["Retry-After"] == "30"
    stores = container.stores
    kept = [
        message.content
        for conversation in stores.conversations.list_conversations(USER)
        for message in stores.conversations.list_messages(USER, conversation.conversation_id)
    ]
    assert "remember that I am vegetarian" not in kept
    assert list(stores.memories.iter_memories(USER)) == []
    # And the other user's turn streamed as ever
    assert theirs.status == 200 and theirs.events[-1][0] == "done"
