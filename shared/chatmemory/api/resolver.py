"""Builds the HTTP API resolver every function uses, and the entry point that guards it."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.api.errors import MAX_BODY_BYTES, error_response, register_error_handlers
from chatmemory.api.json_nesting import TOO_DEEP, nests_too_deep
from chatmemory.api.media_types import JSON, header, refuse_body
from chatmemory.deadline import remaining_seconds_of, request_deadline


def build_resolver(*routers: Router) -> APIGatewayHttpResolver:
    """A resolver with request validation, our error shapes, and the given routes."""
    app = APIGatewayHttpResolver(enable_validation=True)
    for router in routers:
        app.include_router(router)
    register_error_handlers(app)
    return app


def body_size(raw_event: Mapping[str, Any]) -> int:
    body = raw_event.get("body") or ""
    if raw_event.get("isBase64Encoded"):
        try:
            return len(base64.b64decode(body, validate=False))
        except (binascii.Error, ValueError):
            return len(body)
    return len(body.encode("utf-8")) if isinstance(body, str) else len(body)


def _body_bytes(raw_event: Mapping[str, Any]) -> bytes:
    """The body as sent (decoded from base64 when the gateway encoded it)."""
    body = raw_event.get("body") or ""
    if raw_event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=False)
        except (binascii.Error, ValueError):
            return b""  # the resolver refuses it as it would have
    return body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)


def resolve(
    app: APIGatewayHttpResolver, raw_event: Mapping[str, Any], context: LambdaContext
) -> dict[str, Any]:
    """Answer one API Gateway event. A body too large, not JSON, or nested too deep is
    refused before anything parses it, so nothing of it is applied or echoed back."""
    size = body_size(raw_event)
    if size > MAX_BODY_BYTES:
        return _refused(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "payload_too_large",
            f"the request body is larger than {MAX_BODY_BYTES // 1024} KiB",
        )
    event = _stage_prefixed(dict(raw_event))
    content_type = header(event.get("headers"), "content-type")
    refused = refuse_body(content_type, has_body=size > 0)
    if refused is not None:
        return _refused(refused.status, refused.code, refused.message)
    if size and nests_too_deep(_body_bytes(raw_event)):
        return _refused(HTTPStatus.BAD_REQUEST, "validation_error", TOO_DEEP)
    if size and content_type:
        # The resolver parses only a literal "application/json"; the type is case-blind.
        headers = {k: v for k, v in event["headers"].items() if k.lower() != "content-type"}
        event["headers"] = {**headers, "content-type": JSON}
    # A slow model ends as 502 model_unavailable while the function can still answer,
    # not as the gateway's 503 when the function is cut off.
    with request_deadline(remaining_seconds_of(context)):
        return app.resolve(event, context)


def _stage_prefixed(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its stage in front of `rawPath`, where API Gateway puts it.

    For a named stage the resolver cuts `len("/<stage>")` characters off `rawPath` without
    looking at them; a path that arrives without the prefix (a proxy or domain mapping
    that rewrote it) would be cut mid-word and miss every route.
    """
    stage = (event.get("requestContext") or {}).get("stage")
    raw_path = event.get("rawPath") or ""
    if stage and stage != "$default" and raw_path.split("/", 2)[1:2] != [stage]:
        event["rawPath"] = f"/{stage}{raw_path}"
    return event


def _refused(status: HTTPStatus, code: str, message: str) -> dict[str, Any]:
    response = error_response(status, code, message)
    return {
        "statusCode": response.status_code,
        "headers": {"Content-Type": "application/json"},
        "body": response.body,
        "isBase64Encoded": False,
    }
