"""The request handler base both servers build on.

Every method goes to one `_dispatch`; each request is timed and logged once, bodies are
read within the contract's limit, and every answer — a refusal, an error, a crash, a
stream — leaves in the contract's shape (the mapping itself is `api/errors.py`).
"""

from __future__ import annotations

import json
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from chatmemory.api.errors import INTERNAL_ERROR, MAX_BODY_BYTES, describe_error, refusal_headers
from chatmemory.web.sse import StreamedResponse

_ERROR_CODES = {
    HTTPStatus.BAD_REQUEST: "bad_request",
    HTTPStatus.NOT_IMPLEMENTED: "not_implemented",
    HTTPStatus.REQUEST_URI_TOO_LONG: "uri_too_long",
    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: "headers_too_large",
    HTTPStatus.HTTP_VERSION_NOT_SUPPORTED: "http_version_not_supported",
}


class ContractRequestHandler(BaseHTTPRequestHandler):
    """Every method goes to `_dispatch`; bodies, streams and errors in the contract's shape.

    A server subclasses it with `_dispatch` (answer one request, return the status sent),
    `_served` (its one log line) and `_failed` (how it logs a crash). TRACE is answered like
    any method no route serves (never echoing the request), and the standard library's own
    refusals (an unknown method, a malformed request line, headers too large) come back as
    JSON, not as an HTML page.
    """

    protocol_version = "HTTP/1.1"
    _responded = False

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

    def _handle(self) -> None:
        started = time.perf_counter()
        self._responded = False  # one handler serves every request of a kept-alive connection
        split = urlsplit(self.path)
        status = HTTPStatus.INTERNAL_SERVER_ERROR.value
        try:
            status = self._dispatch(split.path, split.query)
        except Exception as exc:  # a bug must still answer, in the contract's shape
            self._failed(exc)
            if self._responded:
                self.close_connection = True
            else:
                status = self._error(*INTERNAL_ERROR)
        finally:
            self._served(split.path, status, (time.perf_counter() - started) * 1000)

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
        self._error(status, _ERROR_CODES.get(status, "bad_request"), status.phrase.lower())

    def _read_body(self) -> bytes | int:
        """The request body, or the status of the error already sent instead."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True  # the body is never read
            return self._error(HTTPStatus.LENGTH_REQUIRED, "length_required", "send Content-Length")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            return self._error(HTTPStatus.BAD_REQUEST, "validation_error", "bad Content-Length")
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is never read
            return self._error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                "payload_too_large",
                f"the request body is larger than {MAX_BODY_BYTES // 1024} KiB",
            )
        return self.rfile.read(length) if length > 0 else b""

    def _stream(self, response: StreamedResponse) -> int:
        """Send each piece as it is produced (chunked), so tokens reach the client live."""
        if response.status != HTTPStatus.OK:  # an error chosen before streaming: one body
            self._write(response.status, response.headers, b"".join(response.body))
            return response.status
        self._responded = True
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for piece in response.body:
                if piece:
                    self.wfile.write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client left; an unfinished turn is not stored
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
