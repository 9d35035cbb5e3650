"""Lambda entry point for the Rooms API: /v1/rooms… (rooms, members, messages, a
persona's block and turn), called with the app credential or a user's own token.

Routes live in the shared package so that the OpenAPI document can describe them.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.api import rooms_routes
from chatmemory.api.resolver import build_resolver, resolve
from chatmemory.telemetry import logger, metrics, tracer

# Reads publish no metrics; that is expected, not worth a warning per request.
warnings.filterwarnings("ignore", message="No application metrics to publish")

app = build_resolver(rooms_routes.router)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
