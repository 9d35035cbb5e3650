"""The HTTP core both front doors run on: the dev server and the streaming server the Lambda
Web Adapter talks to. One threaded server, and one request handler base that reads bodies
within the contract's limits and answers every refusal in its JSON shape."""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from chatmemory.api.errors import MAX_BODY_BYTES

if TYPE_CHECKING:  # the server core never needs the chat path to be importable
    from chatmemory.api.chat_stream import StreamedResponse

# Connections the kernel queues while every thread is busy. The standard library's default
# of 5 resets clients in a burst (50 parallel clients saw 6-42 % resets); 1024 is what
# production servers use and costs nothing until it is needed.
LISTEN_BACKLOG = 1024

_ERROR_CODES = {
    HTTPStatus.BAD_REQUEST: "bad_request",
    HTTPStatus.NOT_IMPLEMENTED: "not_implemented",
    HTTPStatus.REQUEST_URI_TOO_LONG: "uri_too_long",
    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: "headers_too_large",
    HTTPStatus.HTTP_VERSION_NOT_SUPPORTED: "http_version_not_supported",
}


class _Httpd(ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True


class ThreadedServer:
    """One host and port, a thread per request; `start` serves from a background thread.

    OSError (address in use, port out of range, no permission) is raised by the
    constructor, before anything is served."""

    def __init__(
        self, host: str, port: int, handler: type[BaseHTTPRequestHandler], thread_name: str
    ) -> None:
        self._httpd = _Httpd((host, port), handler)
        self._thread_name = thread_name
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._httpd.server_address[0]!s}:{self.port}"

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> None:
        """Serve from a background thread (tests, and the CLI's own foreground loop)."""
        self._thread = threading.Thread(
            target=self.serve_forever, name=self._thread_name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


class ContractRequestHandler(BaseHTTPRequestHandler):
    """Every method goes to `_handle`; bodies, streams and errors in the contract's shape.

    TRACE is answered like any method no route serves (never echoing the request), and the
    standard library's own refusals (an unknown method, a malformed request line, headers
    too large) come back as JSON, not as an HTML page.
    """

    protocol_version = "HTTP/1.1"
    _responded = False

    def _handle(self) -> None:
        raise NotImplementedError

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
        """Silenced: `_handle` logs one line per request, without queries, bodies or tokens."""

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

    def _unauthorized(self, message: str = "a valid bearer token is required") -> int:
        return self._error(
            HTTPStatus.UNAUTHORIZED, "unauthorized", message, {"WWW-Authenticate": "Bearer"}
        )

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
