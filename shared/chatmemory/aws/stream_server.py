"""The streaming endpoint on AWS: `POST /v1/chat` as Server-Sent Events, behind a Function URL.

Python Lambdas cannot stream a response themselves. The AWS Lambda Web Adapter (a layer)
starts this server through `functions/chat_stream/run.sh`, waits until `GET /healthz`
answers, then turns each Function URL request into an HTTP request to 127.0.0.1 and
streams the response back as it is written (Function URL InvokeMode RESPONSE_STREAM,
AWS_LWA_INVOKE_MODE=response_stream).

A Function URL has no JWT authorizer, so this server verifies every bearer token itself,
with the HTTP API authorizer's rules (`JwksVerifier`). It streams only: a client that does
not ask for `text/event-stream` gets 406 and is pointed at the HTTP API, which serves the
JSON form of the same call — one JSON implementation, behind the API's throttling. No
throttle stands in front of this server, but every turn here takes from the user's quota
as on the API (`services/quotas.py`, in the chat service): a used-up quota is an HTTP 429
with Retry-After before any stream begins.
"""

from __future__ import annotations

import warnings
from http import HTTPStatus
from typing import Any, Protocol

from chatmemory.api.chat_stream import stream_chat
from chatmemory.api.identity import (
    Forbidden,
    InvalidToken,
    Unauthorized,
    bearer_token,
    user_id_from_claims,
)
from chatmemory.aws.jwks import JwksVerifier, KeysUnavailable
from chatmemory.config import Container, Settings, use_container
from chatmemory.telemetry import logger, metrics
from chatmemory.web.handler import ContractRequestHandler
from chatmemory.web.server import ServerLimits, ThreadedServer
from chatmemory.web.sse import EVENT_STREAM, wants_stream

HOST = "127.0.0.1"  # the adapter's default AWS_LWA_HOST; nothing else may reach the server
HEALTH_PATH = "/healthz"
CHAT_PATH = "/v1/chat"
ROUTES = {HEALTH_PATH: "GET", CHAT_PATH: "POST"}
_LOGGED_PATH_CHARS = 200


class TokenVerifier(Protocol):
    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims; InvalidToken or KeysUnavailable otherwise."""
        ...


class _StreamHandler(ContractRequestHandler):
    server_version = "chatmemory-stream"
    verifier: TokenVerifier  # set on the subclass the server builds

    def _served(self, path: str, status: int, elapsed_ms: float) -> None:
        logger.info(
            "request",
            extra={
                "method": self.command,
                "path": path[:_LOGGED_PATH_CHARS],
                "status": status,
                "duration_ms": round(elapsed_ms, 1),
            },
        )
        if path == CHAT_PATH:
            # No Lambda handler decorator flushes for us: publish this request's metrics.
            metrics.flush_metrics()

    def _failed(self, exc: Exception) -> None:
        logger.error("stream request failed", extra={"error_type": type(exc).__name__})

    def _dispatch(self, path: str, query: str) -> int:
        body = self._read_body()
        if isinstance(body, int):
            return body
        method = ROUTES.get(path)
        if method is None:
            return self._error(HTTPStatus.NOT_FOUND, "not_found", "no such route")
        if self.command != method:
            return self._error(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "method_not_allowed",
                f"{self.command} is not allowed here; use {method}",
                {"Allow": method},
            )
        if path == HEALTH_PATH:
            return self._json(HTTPStatus.OK, {"status": "ok"})
        return self._chat(body)

    def _chat(self, body: bytes) -> int:
        try:
            user_id = self._user_id()
        except (InvalidToken, Unauthorized, Forbidden) as exc:  # the app credential has no user
            return self._refuse(exc)
        except KeysUnavailable:
            logger.warning("the issuer's keys could not be fetched")
            return self._error(
                HTTPStatus.SERVICE_UNAVAILABLE,
                "unavailable",
                "the token could not be checked right now; try again shortly",
                {"Retry-After": "5"},
            )
        if not wants_stream(self.headers.get("Accept")):
            return self._error(
                HTTPStatus.NOT_ACCEPTABLE,
                "not_acceptable",
                f"this endpoint streams: send Accept: {EVENT_STREAM}, "
                "or call POST /v1/chat on the HTTP API for JSON",
            )
        return self._stream(stream_chat(user_id, body, self.headers.get("Content-Type")))

    def _user_id(self) -> str:
        """The user the verified token names, by the same rule as the handlers;
        InvalidToken (or KeysUnavailable) when it cannot be verified, Forbidden for the
        app credential."""
        token = bearer_token(self.headers.get("Authorization"))
        if token is None:
            raise InvalidToken("MissingToken")
        return user_id_from_claims(self.verifier.verify(token))


class StreamServer(ThreadedServer):
    """A threaded HTTP server for the Lambda Web Adapter, on one host and port."""

    def __init__(
        self, host: str, port: int, verifier: TokenVerifier, limits: ServerLimits | None = None
    ) -> None:
        handler = type("BoundStreamHandler", (_StreamHandler,), {"verifier": verifier})
        super().__init__(host, port, handler, "chatmemory-stream", limits)


def main() -> None:
    """Serve until the execution environment ends (run.sh execs this)."""
    settings = Settings.from_env()
    if not settings.jwt_issuer or not settings.jwt_audiences:
        raise SystemExit(
            "CHATMEMORY_JWT_ISSUER and CHATMEMORY_JWT_AUDIENCE are required: "
            "this endpoint verifies bearer tokens itself"
        )
    # Requests without a turn publish no metrics; that is expected, not worth a warning.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    use_container(Container(settings))
    try:
        verifier = JwksVerifier(
            settings.jwt_issuer, settings.jwt_audiences, algorithms=settings.jwt_algorithms
        )
    except ValueError as exc:  # an algorithm that is not an asymmetric signature
        raise SystemExit(f"CHATMEMORY_JWT_ALGORITHMS: {exc}") from None
    server = StreamServer(HOST, settings.stream_port, verifier)
    logger.info("stream server listening", extra={"port": server.port})
    server.serve_forever()


if __name__ == "__main__":
    main()
