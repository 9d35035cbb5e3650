"""`POST /v1/chat` as Server-Sent Events: `token` events, then one `done` (docs/api.md).

Served by the local server, and on AWS by the streaming endpoint (a Function URL in
response-streaming mode): API Gateway's HTTP API cannot stream, so the JSON form of the
same call stays there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http import HTTPStatus

from pydantic import ValidationError

from chatmemory.api.chat_routes import chat_out, chat_turn
from chatmemory.api.errors import (
    count_refusal,
    describe_error,
    describe_validation_errors,
    refusal_headers,
)
from chatmemory.api.json_nesting import TOO_DEEP, nests_too_deep
from chatmemory.api.media_types import refuse_body
from chatmemory.api.schemas import ChatRequest
from chatmemory.config import container
from chatmemory.ports.model import ReplyDelta
from chatmemory.services.chat import ChatResult
from chatmemory.telemetry import count, logger
from chatmemory.web.sse import StreamedResponse, event_stream, sse


def stream_chat(user_id: str, raw_body: bytes, content_type: str | None = None) -> StreamedResponse:
    """Start the turn; its first step runs before the status is chosen, so bad input,
    an unknown conversation, a used-up quota (429 with Retry-After) or a model down at
    once still get a proper error status."""
    refused = refuse_body(content_type, has_body=bool(raw_body))
    if refused is not None:
        return _error(refused.status, refused.code, refused.message)
    # Described as the resolver's validation describes them on the JSON path: located
    # under "body", and no body at all is a missing body rather than malformed JSON.
    if not raw_body:
        code, message = describe_validation_errors([{"type": "missing", "loc": ("body",)}])
        return _error(HTTPStatus.BAD_REQUEST, code, message)
    if nests_too_deep(raw_body):  # the same refusal as the JSON path's, before any parser
        return _error(HTTPStatus.BAD_REQUEST, "validation_error", TOO_DEEP)
    try:
        body = ChatRequest.model_validate_json(raw_body)
    except ValidationError as exc:
        errors = [{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]
        code, message = describe_validation_errors(errors)
        return _error(HTTPStatus.BAD_REQUEST, code, message)
    events = container().chat.turn(chat_turn(user_id, body))
    try:
        first = next(events)
    except Exception as exc:
        status, code, message = describe_error(exc)
        _log_unexpected(exc, status)
        count_refusal(code)
        return _error(status, code, message, refusal_headers(exc, status))
    return event_stream(_frames(first, events))


def _frames(
    first: ReplyDelta | ChatResult, rest: Iterator[ReplyDelta | ChatResult]
) -> Iterator[bytes]:
    event: ReplyDelta | ChatResult = first
    try:
        while True:
            if isinstance(event, ReplyDelta):
                yield sse("token", {"text": event.text})
            else:
                count("ChatTurn")
                yield sse("done", chat_out(event).model_dump())
                return
            event = next(rest)
    except StopIteration:
        return
    except Exception as exc:  # mid-stream: the status is sent; say so in the stream
        status, code, message = describe_error(exc)
        _log_unexpected(exc, status)
        yield sse("error", {"error": {"code": code, "message": message}})


def _error(
    status: HTTPStatus, code: str, message: str, headers: dict[str, str] | None = None
) -> StreamedResponse:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return StreamedResponse(
        status.value, {"Content-Type": "application/json", **(headers or {})}, iter([body])
    )


def _log_unexpected(exc: Exception, status: HTTPStatus) -> None:
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        logger.error("chat stream failed", extra={"error_type": type(exc).__name__})
