"""The HTTP server both front doors run: one host and port, a bounded pool of worker threads.

A thread per connection, unbounded, let a client hold the server down: every stalled
connection kept a thread (and, once it had asked for something, that thread's SQLite
connection) for good. Here at most `ServerLimits.workers` connections are served at once,
each by a worker thread that is reused for the next one; the accept loop takes a new
connection only when a worker is free, so the rest wait in the kernel's listen backlog (and
past it are refused by the kernel), never as threads or descriptors of ours. Each
connection is also timed (`web/handler.py`), so a stalled one frees its worker.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

# Connections the kernel queues while every worker is busy. The standard library's default
# of 5 resets clients in a burst (50 parallel clients saw 6-42 % resets); 1024 is what
# production servers use and costs nothing until it is needed.
LISTEN_BACKLOG = 1024
_STOP_POLL_S = 0.2  # how often a waiting accept loop looks whether the server is stopping
_STOP_WAIT_S = 5.0  # how long `stop` waits for the workers to finish, all together

# Not under "chatmemory": powertools owns that logger name and would echo these as JSON.
log = logging.getLogger("web-server")


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """How much of the machine one server may hold, and how long a client may take."""

    #: connections served at once: worker threads, started as needed, then reused
    workers: int = 32
    #: from waiting for a request (an idle kept-alive connection included) to its last
    #: header line; a client that trickles its headers is cut here
    header_seconds: float = 10.0
    #: to receive a body of at most 64 KiB, once the headers are in
    body_seconds: float = 30.0
    #: for each write of the answer to be taken by the client
    write_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("a server needs at least one worker")
        if min(self.header_seconds, self.body_seconds, self.write_seconds) <= 0:
            raise ValueError("every timeout must be positive")


class _Httpd(HTTPServer):
    """Accepts a connection only when a worker is free, and hands it to that worker."""

    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        limits: ServerLimits,
        name: str,
    ) -> None:
        super().__init__(address, handler)
        self.limits = limits
        self._name = name
        self._slots = threading.Semaphore(limits.workers)  # connections in our hands
        self._idle = threading.Semaphore(0)  # workers waiting for a connection
        self._connections: queue.SimpleQueue[tuple[socket.socket, Any] | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._active: set[socket.socket] = set()
        self._in_hand = 0  # connections accepted and not yet finished
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._stopping = threading.Event()

    @property
    def worker_count(self) -> int:
        """The worker threads started so far (never more than `limits.workers`)."""
        return len(self._workers)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Runs on the accept loop: waiting here for a free slot is what keeps every other
        # connection in the kernel's backlog rather than in this process.
        while not self._slots.acquire(timeout=_STOP_POLL_S):
            if self._stopping.is_set():
                self.shutdown_request(request)
                return
        with self._lock:
            self._in_hand += 1
        # No worker waiting, and a slot free: fewer workers than slots, so room for one more.
        if not self._idle.acquire(blocking=False) and len(self._workers) < self.limits.workers:
            self._start_worker()
        self._connections.put((request, client_address))

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every connection accepted so far is finished; False if `timeout`
        seconds passed first."""
        with self._settled:
            return self._settled.wait_for(lambda: self._in_hand == 0, timeout)

    def _start_worker(self) -> None:
        name = f"{self._name}-worker-{len(self._workers) + 1}"
        worker = threading.Thread(target=self._work, name=name, daemon=True)
        self._workers.append(worker)
        worker.start()

    def _work(self) -> None:
        while (handed := self._connections.get()) is not None:
            request, client_address = handed
            with self._lock:
                self._active.add(request)
            try:
                if not self._stopping.is_set():
                    self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                with self._lock:
                    self._active.discard(request)
                    self._in_hand -= 1
                    self._settled.notify_all()
                # Idle first: the accept loop, once it has this slot, finds this worker.
                self._idle.release()
                self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never a traceback: a client that left is not our error, and anything
        else the handler could not answer is logged by its type alone (messages may quote
        what the client sent)."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            log.info("connection dropped: %s", type(error).__name__)
        else:
            log.error("connection failed: %s", type(error).__name__ if error else "unknown")

    def stop(self) -> None:
        """Stop accepting, cut every connection in hand and let the workers end."""
        self._stopping.set()  # an accept loop waiting for a worker gives up
        self.shutdown()
        self.server_close()
        with self._lock:
            active = list(self._active)
        for request in active:
            with contextlib.suppress(OSError):  # unblocks the worker's read or write
                request.shutdown(socket.SHUT_RDWR)
        for _ in self._workers:
            self._connections.put(None)
        # One deadline for all: a worker still inside a request is a daemon, and ends with
        # the process.
        deadline = time.monotonic() + _STOP_WAIT_S
        for worker in self._workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))


class ThreadedServer:
    """One host and port, served by a bounded pool of workers; `start` serves from a
    background thread.

    OSError (address in use, port out of range, no permission) is raised by the
    constructor, before anything is served."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: type[BaseHTTPRequestHandler],
        thread_name: str,
        limits: ServerLimits | None = None,
    ) -> None:
        self.limits = limits or ServerLimits()
        timed = type(handler.__name__, (handler,), {"limits": self.limits})
        self._httpd = _Httpd((host, port), timed, self.limits, thread_name)
        self._thread_name = thread_name
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._httpd.server_address[0]!s}:{self.port}"

    @property
    def worker_count(self) -> int:
        """The worker threads started so far (at most `limits.workers`)."""
        return self._httpd.worker_count

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until every connection accepted so far has been served and closed (tests,
        and anyone who must know the server is done with a client); False on timeout."""
        return self._httpd.wait_idle(timeout)

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=_STOP_POLL_S)

    def start(self) -> None:
        """Serve from a background thread (tests, and the CLI's own foreground loop)."""
        self._thread = threading.Thread(
            target=self.serve_forever, name=self._thread_name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._httpd.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
