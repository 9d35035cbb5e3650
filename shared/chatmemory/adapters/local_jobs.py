"""Background work on one machine: a queue the dev server drains on a worker thread,
and idle timers that fire by the injected clock.

Tests drain it themselves (`run_pending`, `run_due`) and move the clock, so nothing
waits on a real timer to see background work happen.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain.purge import PurgeRequest
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs, PurgeStarter

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FoldJob:
    user_id: str
    conversation_id: str


@dataclass(frozen=True, slots=True)
class IdleJob:
    user_id: str
    conversation_id: str


@dataclass(frozen=True, slots=True)
class RoomQuietJob:
    room_id: str


@dataclass(frozen=True, slots=True)
class ProfileJob:
    """Rebuild this persona's profile of the user (a timer: re-armed by every write)."""

    user_id: str
    persona: str


@dataclass(frozen=True, slots=True)
class PurgeJob:
    request: PurgeRequest


@dataclass(frozen=True, slots=True)
class UsesJob:
    """Write these memories' own uses (ids only: the job reads the rows again)."""

    user_id: str
    memory_ids: tuple[str, ...]


Job = FoldJob | IdleJob | RoomQuietJob | PurgeJob | UsesJob | ProfileJob
Timer = IdleJob | RoomQuietJob | ProfileJob
Handler = Callable[[Job], None]


class QueuedJobs(Jobs):
    """Jobs wait in a queue until someone runs them; duplicates are coalesced."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._queue: queue.Queue[Job] = queue.Queue()
        self._pending: set[Job] = set()
        self._timers: dict[Timer, datetime] = {}
        self._lock = threading.Lock()
        self._handler: Handler | None = None
        self._clock = clock

    def bind(self, handler: Handler) -> None:
        """Who runs the jobs (the container wires the services in)."""
        self._handler = handler

    def fold_later(self, user_id: str, conversation_id: str) -> None:
        self.enqueue(FoldJob(user_id, conversation_id))

    def idle_later(self, user_id: str, conversation_id: str, due_at: datetime) -> None:
        with self._lock:  # re-arming replaces the earlier due time
            self._timers[IdleJob(user_id, conversation_id)] = due_at

    def room_quiet_later(self, room_id: str, due_at: datetime) -> None:
        with self._lock:
            self._timers[RoomQuietJob(room_id)] = due_at

    def profile_later(self, user_id: str, persona: str, due_at: datetime) -> None:
        with self._lock:
            self._timers[ProfileJob(user_id, persona)] = due_at

    def uses_later(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            self.enqueue(UsesJob(user_id, tuple(dict.fromkeys(memory_ids))))

    def run_due(self, now: datetime | None = None) -> int:
        """Fire every idle timer that is due (by the clock); returns how many fired."""
        moment = now or (self._clock.now() if self._clock else None)
        if moment is None:
            return 0
        with self._lock:
            due = [job for job, at in self._timers.items() if at <= moment]
            for job in due:
                del self._timers[job]
        for job in due:
            self._run(job)
        return len(due)

    def enqueue(self, job: Job) -> bool:
        """Queue a job; False if the same job is already waiting."""
        with self._lock:
            if job in self._pending:
                return False
            self._pending.add(job)
        self._queue.put(job)
        return True

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
        """The dev server's worker: run jobs as they arrive, and timers as they fall due,
        until `stop` is set."""
        while not stop.is_set():
            self.run_due()
            try:
                job = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            self._run(job)


class QueuedPurges(PurgeStarter):
    """Locally, a purge is a job on the same queue: it runs right after the request that
    deleted, on the dev server's worker (tests run it with `run_pending`)."""

    def __init__(self, jobs: QueuedJobs) -> None:
        self._jobs = jobs

    def start_purge(self, request: PurgeRequest, *, origin: str = "delete") -> bool:
        return self._jobs.enqueue(PurgeJob(request))
