"""What each operation may answer, as the OpenAPI document states it.

Every status a route can send is listed with its body, so the document is a contract a
client (and the schemathesis conformance checks) can hold the server to: the success
responses with their models, and the errors of the contract's shape that this route can
actually produce — never the framework's default 422, which the server never sends.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_lambda_powertools.event_handler.openapi.types import (
    OpenAPIResponse,
    OpenAPIResponseContentModel,
    OpenAPIResponseContentSchema,
    OpenAPIResponseHeader,
)
from pydantic import BaseModel

from chatmemory.api.schemas import ErrorOut

Content = dict[str, OpenAPIResponseContentSchema | OpenAPIResponseContentModel]

_ERROR_CONTENT: Content = {"application/json": {"model": ErrorOut}}
_ERRORS: dict[int, str] = {
    400: "Invalid request: the message names the field (`validation_error`, `malformed_json`, "
    "`secret_refused`, `instruction_refused`)",
    401: "Missing, expired or bad token",
    403: "The token is valid but may not do this (`forbidden`): the app credential on a "
    "user's route, or a user's token beyond their own private chat",
    404: "No such object for this user (the same whether it never existed or is not yours)",
    409: "Conflicts with the current state (`conflict`, `memory_disabled`)",
    413: "Body larger than 64 KiB",
    415: "The body is not sent as JSON (`unsupported_media_type`)",
    429: "The user's turns for this minute are used up (model turns; observed turns on "
    "`/v1/observe`); nothing of the turn was done (`rate_limited`). Retry-After says in how "
    "many seconds the next minute starts",
    502: "The model could not answer; nothing of the turn was kept (`model_unavailable`)",
    503: "The store cannot take requests right now: a full disk, a read-only state folder, a "
    "throttled table (`storage_unavailable`). Retry-After says when to try again",
}

_ERROR_HEADERS: dict[int, dict[str, OpenAPIResponseHeader]] = {
    429: {
        "Retry-After": {
            "description": "Seconds until the user's quota window ends",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
    503: {
        "Retry-After": {
            "description": "Seconds to wait before trying again",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
}

# Every authenticated operation can be refused for its token (bad: 401; the wrong kind of
# caller for the route: 403), its body's size or type, or a store that cannot serve (503).
EVERY_CALL = (400, 401, 403, 413, 415, 503)


def json_content(model: type[BaseModel]) -> Content:
    return {"application/json": {"model": model}}


def answers(
    success: dict[int, tuple[str, Content | None]], errors: Iterable[int] = EVERY_CALL
) -> dict[int, OpenAPIResponse]:
    """The responses of one operation: its successes (description, content or None for an
    empty body) and the contract errors it can send."""
    documented: dict[int, OpenAPIResponse] = {}
    for status, (description, content) in success.items():
        documented[status] = (
            {"description": description, "content": content}
            if content is not None
            else {"description": description}
        )
    for status in sorted(set(errors)):
        documented[status] = {"description": _ERRORS[status], "content": _ERROR_CONTENT}
        if status in _ERROR_HEADERS:
            documented[status]["headers"] = _ERROR_HEADERS[status]
    return documented
