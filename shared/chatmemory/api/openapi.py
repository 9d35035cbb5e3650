"""The OpenAPI document of the whole v1 API, whichever function serves it."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Server

import chatmemory
from chatmemory.api import (
    chat_routes,
    conversations_routes,
    memories_routes,
    observe_routes,
    portability_routes,
    recall_routes,
    rooms_routes,
    system_routes,
)
from chatmemory.api.identity import APP_SCOPE

TITLE = "chatmemory"
DESCRIPTION = (
    "A memory service for chat assistants and personas. Every route but /v1/health and "
    "/v1/openapi.json needs `Authorization: Bearer <JWT>`. A user's token: the user id is "
    f"its `sub`. The app credential (a token whose `scope` holds `{APP_SCOPE}`) acts for "
    "the users of this deployment in the room routes and has no user of its own; a user's "
    "token works in the room routes for that user's own private chat only."
)


@cache
def whole_api() -> APIGatewayHttpResolver:
    """A resolver holding every route of every function (never used to answer requests)."""
    app = APIGatewayHttpResolver(enable_validation=True)
    routes = (
        system_routes,
        memories_routes,
        portability_routes,
        conversations_routes,
        chat_routes,
        recall_routes,
        observe_routes,
    )
    for module in (*routes, rooms_routes):
        app.include_router(module.router)
    return app


_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
# What the resolver's routing lets a path parameter match: one segment of word characters
# and of the URI characters API Gateway passes on decoded. The rest of a path is matched as
# the resolver matches its rules, as a regular expression.
_PARAMETER = r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+"


def allowed_methods(path: str) -> list[str]:
    """The methods any function serves on `path`: a known path called with another method
    is a 405 with Allow, whichever function the gateway's fallback route reached."""
    return sorted({method for rule, methods in _served() if rule.match(path) for method in methods})


@cache
def _served() -> tuple[tuple[re.Pattern[str], frozenset[str]], ...]:
    """Each documented path as the resolver matches it, with the methods served there."""
    paths: dict[str, dict[str, Any]] = json.loads(openapi_json()).get("paths", {})
    return tuple(
        (
            re.compile("^" + re.sub(r"\{\w+\}", lambda _: _PARAMETER, template) + "$"),
            frozenset(method.upper() for method in operations if method in _METHODS),
        )
        for template, operations in paths.items()
    )


@cache
def openapi_json() -> str:
    """Built once per process from every router, so it always matches the code."""
    generated = whole_api().get_openapi_json_schema(
        title=TITLE,
        version=chatmemory.__version__,
        description=DESCRIPTION,
        servers=[Server(url="/")],
        security_schemes={"bearerAuth": HTTPBearer(bearerFormat="JWT")},
        security=[{"bearerAuth": []}],
    )
    return json.dumps(as_served(json.loads(generated)), indent=2)


# The framework documents a 422 with its own error model on every operation; the server
# answers bad input with 400 in the contract's shape (api/errors.py), so those go.
_FRAMEWORK_ONLY_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")


def as_served(document: dict[str, Any]) -> dict[str, Any]:
    """The generated document corrected to what the server really sends: no 422, and no
    body on a 204."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            responses.pop("422", None)
            if "204" in responses:
                responses["204"].pop("content", None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in _FRAMEWORK_ONLY_SCHEMAS:
        schemas.pop(name, None)
    return document
