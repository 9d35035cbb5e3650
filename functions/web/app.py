"""Lambda entry point for the manage page: GET / and its few static files.

Served by the API itself, so the page and the routes it calls share one origin (no CORS, no
address to configure) and `sam deploy` ships it with the code. The files and the allow-list
live in the shared package (`chatmemory/web/page.py`), where the local server reads them
through this same handler.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.telemetry import logger, tracer
from chatmemory.web.page import page_response


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # By the route the gateway matched, not the raw path: a named stage prefixes the path.
    return page_response(str(event.get("routeKey", "")))
