"""Lambda entry point for the read path: POST /v1/context (and POST /v1/chat, POST /v1/recall,
POST /v1/observe).

Routes live in the shared package so that the OpenAPI document can describe them.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.api import chat_routes, observe_routes, recall_routes
from chatmemory.api.resolver import build_resolver, resolve
from chatmemory.telemetry import logger, metrics, tracer

# Turns that recall nothing publish no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")

app = build_resolver(chat_routes.router, recall_routes.router, observe_routes.router)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
