"""Lambda entry point for the user's controls: /v1/memories… (export and import too),
/v1/memory/settings, /v1/notices, /v1/conversations… (deleting them).

Also serves /v1/health and /v1/openapi.json. Routes live in the shared package so that
the OpenAPI document can describe every function's routes.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.api import (
    conversations_routes,
    memories_routes,
    portability_routes,
    system_routes,
)
from chatmemory.api.resolver import build_resolver, resolve
from chatmemory.telemetry import logger, metrics, tracer

# Reads publish no metrics; that is expected, not worth a warning per request.
warnings.filterwarnings("ignore", message="No application metrics to publish")

app = build_resolver(
    system_routes.router,
    memories_routes.router,
    portability_routes.router,
    conversations_routes.router,
)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
