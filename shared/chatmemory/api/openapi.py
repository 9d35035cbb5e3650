"""The OpenAPI document of the whole v1 API, whichever function serves it."""

from __future__ import annotations

from functools import cache

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Server

import chatmemory
from chatmemory.api import chat_routes, memories_routes, system_routes

TITLE = "chatmemory"
DESCRIPTION = (
    "A memory service for chat assistants and personas. Every route but /v1/health and "
    "/v1/openapi.json needs `Authorization: Bearer <JWT>`; the user id is the token's `sub`."
)


@cache
def whole_api() -> APIGatewayHttpResolver:
    """A resolver holding every route of every function (never used to answer requests)."""
    app = APIGatewayHttpResolver(enable_validation=True)
    for router in (system_routes.router, memories_routes.router, chat_routes.router):
        app.include_router(router)
    return app


def allowed_methods(path: str) -> list[str]:
    """The methods any function serves on `path`: a known path called with another method
    is a 405 with Allow, whichever function the gateway's fallback route reached."""
    app = whole_api()
    routes = [*app._static_routes, *app._dynamic_routes]
    return sorted({route.method for route in routes if route.rule.match(path)})


@cache
def openapi_json() -> str:
    """Built once per process from every router, so it always matches the code."""
    return whole_api().get_openapi_json_schema(
        title=TITLE,
        version=chatmemory.__version__,
        description=DESCRIPTION,
        servers=[Server(url="/")],
        security_schemes={"bearerAuth": HTTPBearer(bearerFormat="JWT")},
        security=[{"bearerAuth": []}],
    )
