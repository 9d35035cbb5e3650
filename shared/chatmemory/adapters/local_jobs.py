"""Background work on one machine: a queue the dev server drains on a worker thread.

Tests and `chatmemory flush` drain it themselves (`run_pending`), so nothing waits on
a timer to see background work happen.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from chatmemory.ports import Jobs

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FoldJob:
    user_id: str
    conversation_id: str


Job = FoldJob
Handler = Callable[[Job], None]


class QueuedJobs(Jobs):
    """Jobs wait in a queue until someone runs them; duplicates are coalesced."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Job] = queue.Queue()
        self._pending: set[Job] = set()
        self._lock = threading.Lock()
        self._handler: Handler | None = None

    def bind(self, handler: Handler) -> None:
        """Who runs the jobs (the container wires the services in)."""
        self._handler = handler

    def fold_later(self, user_id: str, conversation_id: str) -> None:
        self._put(FoldJob(user_id, conversation_id))

    def _put(self, job: Job) -> None:
        with self._lock:
            if job in self._pending:
                return
            self._pending.add(job)
        self._queue.put(job)

    def run_pending(self) -> int:
        """Run every queued job now, in order; returns how many ran."""
        ran = 0
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return ran
            self._run(job)
            ran += 1

    def _run(self, job: Job) -> None:
        with self._lock:
            self._pending.discard(job)
        if self._handler is None:
            log.warning("a background job was dropped: nothing runs jobs in this process")
            return
        try:
            self._handler(job)
        except Exception as exc:  # background work never takes the process down
            log.warning("background job failed", extra={"error_type": type(exc).__name__})

    def run_forever(self, stop: threading.Event) -> None:
        """The dev server's worker: run jobs as they arrive until `stop` is set."""
        while not stop.is_set():
            try:
                job = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            self._run(job)
