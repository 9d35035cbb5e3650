"""The request handler base both servers build on.

Every method goes to one `_dispatch`; each request is timed and logged once, bodies are
read within the contract's limit, and every answer — a refusal, an error, a crash, a
stream — leaves in the contract's shape (the mapping itself is `api/errors.py`).

A client gets a deadline for each part of a request (`ServerLimits`): its request line and
headers, then its body; one that trickles bytes to stay under a per-read timeout is cut at
the deadline all the same. A client that leaves — mid-request, mid-stream, or between two
requests of a kept-alive connection — ends its connection with one quiet log line.
"""

from __future__ import annotations

import io
import json
import re
import socket
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from chatmemory.api.errors import MAX_BODY_BYTES, describe_error, refusal_headers
from chatmemory.web.server import ServerLimits
from chatmemory.web.sse import StreamedResponse

#: What the request line logs when the client left before it could be answered (nginx's
#: "client closed request"): never sent, since no one is there to read it.
CLIENT_LEFT = 499
_DIGITS = re.compile(r"[0-9]{1,19}")

_ERROR_CODES = {
    HTTPStatus.BAD_REQUEST: "bad_request",
    HTTPStatus.NOT_IMPLEMENTED: "not_implemented",
    HTTPStatus.REQUEST_URI_TOO_LONG: "uri_too_long",
    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: "headers_too_large",
    HTTPStatus.HTTP_VERSION_NOT_SUPPORTED: "http_version_not_supported",
}


class _DeadlineReader(io.RawIOBase):
    """The connection's bytes, each read bounded by what is left of the current deadline."""

    def __init__(self, connection: socket.socket) -> None:
        super().__init__()
        self._connection = connection
        self.deadline: float | None = None  # time.monotonic(); None: the socket's own timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the client took too long")
            self._connection.settimeout(left)
        return self._connection.recv_into(buffer)


class ContractRequestHandler(BaseHTTPRequestHandler):
    """Every method goes to `_dispatch`; bodies, streams and errors in the contract's shape.

    A server subclasses it with `_dispatch` (answer one request, return the status sent),
    `_served` (its one log line) and `_failed` (how it logs a crash). TRACE is answered like
    any method no route serves (never echoing the request), and the standard library's own
    refusals (an unknown method, a malformed request line, headers too large) come back as
    JSON, not as an HTML page.
    """

    protocol_version = "HTTP/1.1"
    limits = ServerLimits()  # the server's, set on the class it builds
    _responded = False
    _reader: _DeadlineReader

    def _dispatch(self, path: str, query: str) -> int:
        """Answer one request; the status sent."""
        raise NotImplementedError

    def _served(self, path: str, status: int, elapsed_ms: float) -> None:
        """Log the request once: method, path, status and time — never queries, bodies or
        tokens."""
        raise NotImplementedError

    def _failed(self, exc: Exception) -> None:
        """Log a request that raised (its type only: messages may quote user text)."""
        raise NotImplementedError

    def setup(self) -> None:
        super().setup()
        # Reads go through a reader that keeps each part of a request to its deadline;
        # writes wait at most `write_seconds` for a client that stopped reading.
        self.rfile.close()
        self._reader = _DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self._reader)
        self.connection.settimeout(self.limits.write_seconds)

    def handle_one_request(self) -> None:
        # The request line and headers (and the wait for them on a kept-alive connection)
        # must all arrive within `header_seconds`; the standard library closes the
        # connection quietly when they do not.
        self._reader.deadline = time.monotonic() + self.limits.header_seconds
        try:
            super().handle_one_request()
        except ConnectionError:  # the client left between two requests
            self.close_connection = True

    def _writing(self) -> None:
        """Reading is over for this request: only the write timeout applies now."""
        self._reader.deadline = None
        self.connection.settimeout(self.limits.write_seconds)

    def _handle(self) -> None:
        started = time.perf_counter()
        self._responded = False  # one handler serves every request of a kept-alive connection
        self._writing()  # the headers are in
        split = urlsplit(self.path)
        status = HTTPStatus.INTERNAL_SERVER_ERROR.value
        try:
            status = self._dispatch(split.path, split.query)
        except (ConnectionError, TimeoutError):  # the client left, or stopped reading
            self.close_connection = True
            status = CLIENT_LEFT
        except Exception as exc:  # a bug must still answer, in the contract's shape
            self._failed(exc)
            status = self._answer_failure(exc)
        finally:
            self._served(split.path, status, (time.perf_counter() - started) * 1000)

    def _answer_failure(self, exc: Exception) -> int:
        """The contract's answer to what `_dispatch` raised (a storage outage is a 503, any
        other failure a 500), unless an answer had begun: then the connection is cut."""
        if self._responded:
            self.close_connection = True
            return HTTPStatus.INTERNAL_SERVER_ERROR.value
        try:
            return self._refuse(exc)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
            return CLIENT_LEFT

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:  # answered as a GET would be, without the body
        self._handle()

    def do_TRACE(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: `_served` logs one line per request, without queries, bodies or tokens."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        status = HTTPStatus(code)
        self.close_connection = True
        self._writing()
        self._error(status, _ERROR_CODES.get(status, "bad_request"), status.phrase.lower())

    def _read_body(self) -> bytes | int:
        """The request body, or the status of the error already sent instead."""
        length = self._content_length()
        if length is None:
            self.close_connection = True  # the body is never read
            return self._error(HTTPStatus.BAD_REQUEST, "validation_error", "bad Content-Length")
        if "Transfer-Encoding" in self.headers:
            self.close_connection = True
            return self._error(HTTPStatus.LENGTH_REQUIRED, "length_required", "send Content-Length")
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            return self._error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                "payload_too_large",
                f"the request body is larger than {MAX_BODY_BYTES // 1024} KiB",
            )
        self._reader.deadline = time.monotonic() + self.limits.body_seconds
        try:
            body = self.rfile.read(length) if length else b""
        except TimeoutError:
            body = None
        self._writing()
        if body is None or len(body) < length:  # too slow, or it stopped sending
            self.close_connection = True
            seconds = f"{self.limits.body_seconds:g}"
            return self._error(
                HTTPStatus.REQUEST_TIMEOUT,
                "request_timeout",
                f"the request body did not arrive whole within {seconds} seconds",
            )
        return body

    def _content_length(self) -> int | None:
        """The body's length, told one way only — one Content-Length of plain digits — or
        None. Two lengths, or one that is not a plain number, would let two readers of the
        same bytes (a proxy and this server) disagree on where the next request starts."""
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1:
            return None
        raw = lengths[0].strip() if lengths else "0"
        return int(raw) if _DIGITS.fullmatch(raw) else None

    def _stream(self, response: StreamedResponse) -> int:
        """Send each piece as it is produced (chunked), so tokens reach the client live.

        A client that leaves ends the stream: the rest is never produced (an unfinished turn
        is not stored), and the request's one log line says it left."""
        try:
            if response.status != HTTPStatus.OK:  # an error chosen before streaming: one body
                self._write(response.status, response.headers, b"".join(response.body))
                return response.status
            self._responded = True
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in response.body:
                if piece:
                    self.wfile.write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
            return CLIENT_LEFT
        finally:
            close = getattr(response.body, "close", None)
            if close is not None:
                close()  # stops the turn here, on this thread, if the client left mid-way
        return response.status

    def _refuse(self, exc: Exception) -> int:
        """Answer `exc` as the contract maps it, with the bearer challenge on a 401."""
        status, code, message = describe_error(exc)
        return self._error(status, code, message, refusal_headers(exc, status))

    def _json(
        self, status: HTTPStatus, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> int:
        body = json.dumps(payload).encode()
        self._write(status.value, {"Content-Type": "application/json", **(headers or {})}, body)
        return status.value

    def _error(
        self,
        status: HTTPStatus,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> int:
        return self._json(status, {"error": {"code": code, "message": message}}, headers)

    def _write(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self._responded = True
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
