"""The real local server on a free port, and a small client that speaks the contract to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

from chatmemory.adapters.clock import SystemClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.local.server import LocalGateway, LocalServer
from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from chatmemory.web.server import ServerLimits

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class Running:
    url: str
    tokens: LocalTokens
    secret: str
    container: Container | None = None
    server: LocalServer | None = None

    def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        body: Any = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = Request(self.url + path, data=data, method=method)  # noqa: S310 - our own local server
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urlopen(request, timeout=10) as response:  # noqa: S310
                payload = response.read()
                status, headers_out = response.status, dict(response.headers)
        except HTTPError as error:
            payload, status, headers_out = error.read(), error.code, dict(error.headers)
        content_type = headers_out.get("Content-Type", "")
        if payload and content_type.startswith("application/json"):
            return Answer(status, headers_out, json.loads(payload))
        return Answer(status, headers_out, payload.decode() if payload else None)

    def token_for(self, user: str) -> str:
        return self.tokens.issue(user, datetime.now(UTC))


@contextmanager
def serve_locally(
    state_dir: Path, model_cache: Path, limits: ServerLimits | None = None, **settings: Any
) -> Iterator[Running]:
    """The local server on a free port of 127.0.0.1, over a fresh state folder (with the
    server's own limits, unless a test names tighter ones)."""
    container = Container(
        Settings(state_dir=state_dir, project_root=ROOT, model_cache=model_cache, **settings),
        SystemClock(),
    )
    use_container(container)
    secret = load_or_create_secret(state_dir)
    tokens = LocalTokens(secret)
    gateway = LocalGateway(ROOT, tokens)
    local = LocalServer("127.0.0.1", 0, gateway, limits)
    local.start()
    gateway.warm_up(container)  # what `chatmemory serve` does before /v1/health says ok
    try:
        yield Running(
            url=local.url, tokens=tokens, secret=secret, container=container, server=local
        )
    finally:
        local.stop()
        use_container(None)
