"""The local server: our `sam local start-api`, without Docker.

Each HTTP request becomes the API Gateway HTTP API event that AWS would build; the
server verifies the bearer token where template.yaml puts the JWT authorizer, invokes
the very handler the Lambda runs, and writes its response back.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from types import ModuleType
from typing import Any

from chatmemory.api.chat_stream import stream_chat
from chatmemory.api.errors import INTERNAL_ERROR
from chatmemory.api.identity import (
    Forbidden,
    InvalidToken,
    Unauthorized,
    bearer_token,
    user_id_from_claims,
)
from chatmemory.config import Container
from chatmemory.local.gateway_events import build_event, parse_response
from chatmemory.local.sam_template import HttpRoute, http_routes, load_template, match_route
from chatmemory.local.tokens import LocalTokens
from chatmemory.web.handler import ContractRequestHandler
from chatmemory.web.server import ServerLimits, ThreadedServer
from chatmemory.web.sse import wants_stream

HEALTH_PATH = "/v1/health"

# Not under "chatmemory": powertools owns that logger name and would echo these as JSON.
log = logging.getLogger("local-server")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass
class LocalLambdaContext:
    """The parts of a Lambda context that handlers and powertools read."""

    function_name: str
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/local"
    log_stream_name: str = "local"
    deadline: float = field(default_factory=lambda: time.monotonic() + 29)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class FunctionHost:
    """Loads each function's app.py once, as Lambda would on a cold start, and invokes the
    handlers one event at a time.

    A Lambda execution environment never runs two events at once, and the handlers'
    framework relies on it: powertools keeps the current request on its router *class*
    (`BaseRouter.current_event`), shared by every resolver in the process. Invoked from
    concurrent server threads, one request read another's body and user id — rows written
    under the wrong user. So invocations are serialised here; the server still accepts,
    reads and answers connections concurrently, and streamed chat turns (which take the
    user id as an argument and never touch the router) run in parallel.
    """

    def __init__(self, project_root: Path) -> None:
        self._root = project_root
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        self._invoking = threading.Lock()

    def invoke(self, route: HttpRoute, event: dict[str, Any]) -> dict[str, Any]:
        """The function's response to one event, as Lambda would compute it."""
        handler = self.handler_for(route)
        with self._invoking:
            return handler(event, LocalLambdaContext(function_name=route.function))

    def load_all(self, routes: list[HttpRoute]) -> None:
        """Import every function now, as Lambda's init phase would, off any request's path."""
        for route in routes:
            self.handler_for(route)

    def handler_for(self, route: HttpRoute) -> Handler:
        with self._lock:
            if route.function not in self._handlers:
                module_name, attribute = route.handler.rsplit(".", 1)
                source = self._root / route.code_uri / f"{module_name}.py"
                module = _load_module(f"chatmemory_function_{route.function}", source)
                self._handlers[route.function] = getattr(module, attribute)
            return self._handlers[route.function]


def _load_module(name: str, source: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, source)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class LocalGateway:
    """What API Gateway does for one request: route, authorize, invoke, respond."""

    def __init__(self, project_root: Path, tokens: LocalTokens) -> None:
        self.routes = http_routes(load_template(project_root / "template.yaml"))
        self.functions = FunctionHost(project_root)
        self.tokens = tokens
        # Set once everything a first request needs is loaded; until then /v1/health answers
        # 503 "starting", so a client that waits for health never meets a cold start.
        self.ready = threading.Event()

    def warm_up(self, container: Container) -> None:
        """Load every function and the container's models, then report ready."""
        self.functions.load_all(self.routes)
        container.warm_up()
        self.ready.set()

    def authorize(self, route: HttpRoute, authorization: str | None) -> dict[str, Any] | None:
        """The token's claims; None if the route needs no token. InvalidToken if it is bad."""
        if not route.authorized:
            return None
        token = bearer_token(authorization)
        if token is None:
            raise InvalidToken("MissingToken")
        return self.tokens.verify(token)


class _RequestHandler(ContractRequestHandler):
    server_version = "chatmemory-local"
    gateway: LocalGateway  # set on the subclass the server builds

    def _served(self, path: str, status: int, elapsed_ms: float) -> None:
        log.info("%s %s %d %.1fms", self.command, path, status, elapsed_ms)

    def _failed(self, exc: Exception) -> None:
        log.error("request failed: %s", type(exc).__name__)

    def _dispatch(self, path: str, query: str) -> int:
        body = self._read_body()
        if isinstance(body, int):
            return body
        if path == HEALTH_PATH and not self.gateway.ready.is_set():
            return self._json(
                HTTPStatus.SERVICE_UNAVAILABLE, {"status": "starting"}, {"Retry-After": "1"}
            )
        route = match_route(self.gateway.routes, self.command, path)
        if route is None:
            return self._error(HTTPStatus.NOT_FOUND, "not_found", "no such route")
        try:
            claims = self.gateway.authorize(route, self.headers.get("Authorization"))
        except InvalidToken as exc:
            return self._refuse(exc)
        if route.path == "/v1/chat" and wants_stream(self.headers.get("Accept")):
            return self._stream_chat(claims, body)
        event = build_event(
            method=self.command,
            raw_path=path,
            raw_query=query,
            headers=dict(self.headers.items()),
            body=body,
            route_key=f"{route.method} {route.path}",
            claims=claims,
            source_ip=self.client_address[0],
        )
        return self._invoke(route, event)

    def _stream_chat(self, claims: dict[str, Any] | None, body: bytes) -> int:
        # API Gateway cannot stream; on AWS this call goes to the streaming Function URL,
        # which takes the user id from the token by the same rule as the handlers.
        try:
            user_id = user_id_from_claims(claims or {})
        except (Unauthorized, Forbidden) as exc:  # no usable subject; the app credential
            return self._refuse(exc)
        return self._stream(stream_chat(user_id, body, self.headers.get("Content-Type")))

    def _invoke(self, route: HttpRoute, event: dict[str, Any]) -> int:
        try:
            result = self.gateway.functions.invoke(route, event)
        except Exception as exc:  # a crash in the function is a 500, as in Lambda
            log.error("function %s failed: %s", route.function, type(exc).__name__)
            return self._error(*INTERNAL_ERROR)
        response = parse_response(result)
        self._write(response.status, response.headers, response.body)
        return response.status


class LocalServer(ThreadedServer):
    """A threaded HTTP server in front of the functions, on one host and port."""

    def __init__(
        self, host: str, port: int, gateway: LocalGateway, limits: ServerLimits | None = None
    ) -> None:
        handler = type("BoundHandler", (_RequestHandler,), {"gateway": gateway})
        super().__init__(host, port, handler, "chatmemory-http", limits)
