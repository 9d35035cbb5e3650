"""Turns an HTTP request into an API Gateway HTTP API (payload 2.0) event, and back."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded")


def build_event(
    *,
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Mapping[str, str],
    body: bytes,
    route_key: str,
    claims: Mapping[str, Any] | None,
    source_ip: str,
) -> dict[str, Any]:
    """The event API Gateway would hand the function for this request."""
    lowered = {name.lower(): value for name, value in headers.items()}
    content_type = lowered.get("content-type", "")
    is_text = not body or any(content_type.startswith(kind) for kind in _TEXT_TYPES)
    encoded_body: str | None
    if not body:
        encoded_body = None
    elif is_text:
        try:
            encoded_body = body.decode("utf-8")
        except UnicodeDecodeError:
            is_text = False
            encoded_body = base64.b64encode(body).decode("ascii")
    else:
        encoded_body = base64.b64encode(body).decode("ascii")
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": lowered,
        "requestContext": {
            "accountId": "local",
            "apiId": "local",
            "domainName": lowered.get("host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": not is_text,
    }
    if raw_query:
        query: dict[str, str] = {}
        for name, value in parse_qsl(raw_query, keep_blank_values=True):
            # API Gateway joins repeated parameters with commas.
            query[name] = f"{query[name]},{value}" if name in query else value
        event["queryStringParameters"] = query
    if encoded_body is not None:
        event["body"] = encoded_body
    if claims is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": dict(claims), "scopes": None}}
    return event


@dataclass(frozen=True, slots=True)
class GatewayResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def parse_response(result: Mapping[str, Any]) -> GatewayResponse:
    """What API Gateway would send back for the function's return value."""
    body = result.get("body") or ""
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode("utf-8")
    headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name)] = ", ".join(str(v) for v in values)
    return GatewayResponse(status=int(result.get("statusCode", 200)), headers=headers, body=raw)
