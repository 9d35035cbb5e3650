"""Unauthenticated routes: health, and the OpenAPI document of the whole API."""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router

from chatmemory.api.documented import answers, json_content
from chatmemory.api.errors import STORAGE_RETRY_AFTER_SECONDS
from chatmemory.api.schemas import HealthOut
from chatmemory.config import container

router = Router()
# "No token needed": one empty requirement. An empty list would mean the same, but powertools
# drops it, and the document-wide bearer requirement would then claim these need a token.
NO_TOKEN: list[dict[str, list[str]]] = [{}]


@router.get(
    "/v1/health",
    summary="Readiness",
    description=(
        "Asks the store for real: 503 `degraded` (with `reason`) while it cannot be read "
        "or written. The local server also answers 503 `starting` while it loads its models."
    ),
    tags=["system"],
    security=NO_TOKEN,
    responses=answers(
        {
            200: ("Ready", json_content(HealthOut)),
            503: (
                "Still loading, or the store cannot serve; try again later",
                json_content(HealthOut),
            ),
        },
        errors=(),
    ),
)
def health() -> Response[str]:
    report = container().health.check()
    if report.status == "ok":
        return _health(HTTPStatus.OK, HealthOut(status="ok"))
    degraded = HealthOut(status="degraded", reason="storage_unavailable")
    return _health(
        HTTPStatus.SERVICE_UNAVAILABLE,
        degraded,
        {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)},
    )


def _health(
    status: HTTPStatus, body: HealthOut, headers: dict[str, str] | None = None
) -> Response[str]:
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=body.model_dump_json(exclude_none=True),
        headers=headers,
    )


@router.get(
    "/v1/openapi.json",
    summary="This API's OpenAPI document",
    tags=["system"],
    security=NO_TOKEN,
    responses=answers(
        {200: ("OpenAPI 3 document", {"application/json": {"schema": {"type": "object"}}})},
        errors=(),
    ),
)
def openapi_document() -> Response[str]:
    from chatmemory.api.openapi import openapi_json  # noqa: PLC0415 - builds every router

    return Response(
        status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_json()
    )
