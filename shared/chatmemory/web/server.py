"""The threaded HTTP server both front doors run: one host and port, a thread per request."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Connections the kernel queues while every thread is busy. The standard library's default
# of 5 resets clients in a burst (50 parallel clients saw 6-42 % resets); 1024 is what
# production servers use and costs nothing until it is needed.
LISTEN_BACKLOG = 1024


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
