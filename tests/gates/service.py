"""The product as a user meets it: the real local server on a free port, over HTTP.

Requests go through the same path as `chatmemory serve`: the HTTP server, bearer-token
verification, the API Gateway event, the function's handler, the services, SQLite.
Only two things differ from a developer's machine, both so the gates can see and steer:
the store and the index sit behind recording proxies, and the clock is driven by hand —
background work (folds, idle timers, the sweep) runs when a gate says so, never on a
timer or a sleep.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from http.client import HTTPResponse
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import Request, urlopen

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.local_jobs import QueuedJobs
from chatmemory.config import Container, Settings
from chatmemory.ports.embedder import Embedder
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorIndex
from tests.gates.recording import Recorder, RecordingIndex, recording_stores

ROOT = Path(__file__).resolve().parents[2]
#: `Api.call(APP, …)` calls with the app credential rather than a user's token (a user id
#: cannot hold this control character)
APP = "\x00app"
#: the pause between two chat turns of one user (the clock moves; nothing sleeps)
BETWEEN_TURNS = timedelta(seconds=20)


class RecordedContainer(Container):
    """The product's own wiring, with the store and the index behind recording proxies
    and the embedder chosen once for the whole run."""

    def __init__(
        self, settings: Settings, clock: ManualClock, embedder: Embedder, recorder: Recorder
    ) -> None:
        super().__init__(settings, clock)
        self.recorder = recorder
        self._chosen_embedder = embedder

    @property
    def embedder(self) -> Embedder:
        return self._chosen_embedder

    @cached_property
    def unrecorded_stores(self) -> Stores:
        built: Stores = Container.stores.func(self)  # type: ignore[attr-defined]
        return built

    @cached_property
    def stores(self) -> Stores:
        return recording_stores(self.unrecorded_stores, self.recorder)

    @cached_property
    def index(self) -> VectorIndex:
        return RecordingIndex(Container.index.func(self), self.recorder)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: Any

    @property
    def error_code(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            return str(self.body["error"].get("code"))
        return None


class Api:
    """HTTP calls to the local server, counted.

    One connection per request, as the e2e tests make them: a kept-alive connection
    stalls ~40 ms a request on delayed ACKs, which would make 2,000 requests slow.
    """

    def __init__(self, url: str, issue: Any, issue_app: Any = None) -> None:
        self._url = url
        self._issue = issue
        self._issue_app = issue_app
        self._tokens: dict[str, str] = {}
        self._lock = threading.Lock()
        self.requests = 0

    def token(self, user_id: str) -> str:
        if user_id not in self._tokens:
            self._tokens[user_id] = self._issue(user_id, datetime.now(UTC))
        return self._tokens[user_id]

    def app_token(self) -> str:
        """The app credential (the app's backend driving the rooms)."""
        if APP not in self._tokens:
            self._tokens[APP] = self._issue_app("gate-app", datetime.now(UTC))
        return self._tokens[APP]

    def call(
        self, user_id: str, method: str, path: str, body: Any = None, *, stream: bool = False
    ) -> Answer:
        """A call with `user_id`'s own token (`APP`: with the app credential)."""
        data = json.dumps(body).encode() if body is not None else None
        request = Request(self._url + path, data=data, method=method)  # noqa: S310 - local
        request.add_header("Content-Type", "application/json")
        token = self.app_token() if user_id == APP else self.token(user_id)
        request.add_header("Authorization", f"Bearer {token}")
        if stream:
            request.add_header("Accept", "text/event-stream")
        with self._lock:
            self.requests += 1
        try:
            with urlopen(request, timeout=30) as response:  # noqa: S310 - our own local server
                return _answer(response, stream=stream)
        except HTTPError as error:
            payload = error.read()
            return Answer(error.code, json.loads(payload) if payload else None)


def _answer(response: HTTPResponse, *, stream: bool) -> Answer:
    payload = response.read()
    if stream and response.headers.get("Content-Type", "").startswith("text/event-stream"):
        return Answer(response.status, _events(payload.decode()))
    return Answer(response.status, json.loads(payload) if payload else None)


def _events(text: str) -> list[dict[str, Any]]:
    """Server-Sent Events as [{"event": ..., "data": ...}, ...]."""
    events, kind = [], "message"
    for line in text.splitlines():
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append({"event": kind, "data": json.loads(line.removeprefix("data: "))})
    return events


@dataclass(frozen=True)
class Account:
    """One user of the service, calling it with their own token."""

    user_id: str
    world: GateWorld

    def call(self, method: str, path: str, body: Any = None, *, stream: bool = False) -> Answer:
        return self.world.api.call(self.user_id, method, path, body, stream=stream)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        """The body of a call that must succeed."""
        answer = self.call(method, path, body)
        assert answer.status in (200, 201, 204), (method, path, answer)
        return answer.body

    def chat(self, message: str, conversation_id: str | None = None, **extra: Any) -> Any:
        """One chat turn, then what the dev server's worker would do before the next."""
        body = {"message": message, **extra}
        if conversation_id is not None:
            body["conversation_id"] = conversation_id
        reply = self.ok("POST", "/v1/chat", body)
        self.world.between_turns()
        return reply

    def context(self, message: str, conversation_id: str | None = None, **extra: Any) -> Any:
        body = {"message": message, **extra}
        if conversation_id is not None:
            body["conversation_id"] = conversation_id
        return self.ok("POST", "/v1/context", body)

    def memories(self, status: str = "active") -> list[dict[str, Any]]:
        """Every memory of this status, all pages, without what only moves with the clock
        (`due_in` and `retention` are computed at read time): the gates compare what is
        kept, before and after days pass."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = f"/v1/memories?status={status}&limit=100"
            if cursor:
                query += f"&next={quote(cursor)}"
            page = self.ok("GET", query)
            found += [timeless(memory) for memory in page["memories"]]
            cursor = page["next"]
            if not cursor:
                return found

    def notices(self) -> list[dict[str, Any]]:
        return list(self.ok("GET", "/v1/notices")["notices"])

    def set_memory(self, **settings: Any) -> Any:
        return self.ok("PUT", "/v1/memory/settings", settings)


class Problems(logging.Handler):
    """Warnings the product logs while it serves the gates (a failed recall, a failed
    background job): either would make a gate pass for the wrong reason."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[str]:
        return [f"{record.name}: {record.getMessage()}" for record in self.records]


@dataclass
class GateWorld:
    api: Api
    clock: ManualClock
    container: RecordedContainer
    problems: Problems

    @property
    def recorder(self) -> Recorder:
        return self.container.recorder

    @property
    def stores(self) -> Stores:
        """The stores themselves, for looking at state without being recorded."""
        return self.container.unrecorded_stores

    @property
    def embedder(self) -> str:
        return self.container.embedder.name

    @property
    def jobs(self) -> QueuedJobs:
        jobs = self.container.jobs
        assert isinstance(jobs, QueuedJobs)
        return jobs

    def account(self, user_id: str) -> Account:
        return Account(user_id, self)

    def between_turns(self) -> None:
        """What happens between two turns: queued folds run, and time passes."""
        self.jobs.run_pending()
        self.clock.advance(BETWEEN_TURNS)

    def run_background(self) -> None:
        """Everything the dev server's worker and `chatmemory flush` would have done by
        now: queued work, every idle timer (the clock moves past the idle period), then
        the sweep for anything left unread."""
        self.jobs.run_pending()
        self.clock.advance(timedelta(seconds=self.container.settings.idle_seconds + 1))
        self.jobs.run_due()
        self.jobs.run_pending()
        self.container.idle.sweep(now_or_never=True)
        self.container.room_writes.sweep(now_or_never=True)
        self.jobs.run_pending()

    def next_day(self) -> None:
        """Move to the next morning (the write pipeline's daily cap counts per day)."""
        now = self.clock.now()
        tomorrow = datetime(now.year, now.month, now.day, 9, tzinfo=UTC) + timedelta(days=1)
        self.clock.advance(tomorrow - now)


def timeless(memory: dict[str, Any]) -> dict[str, Any]:
    """A memory as the API shows it, less what only moves with the clock (`due_in` and
    `retention` are computed when it is read): what is kept, to compare across days."""
    return {key: value for key, value in memory.items() if key not in ("due_in", "retention")}
