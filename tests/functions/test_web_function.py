"""The manage page's function, driven by its sample event (API Gateway's shape)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from chatmemory.local.sam_template import http_routes, load_template
from chatmemory.local.server import LocalLambdaContext
from chatmemory.web.page import PAGE_FILES
from tests.support.functions import ROOT, load_handler, sample_event
from tests.support.local_server import ROOT as PROJECT_ROOT


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("web")


def get(handler: Any, path: str) -> dict[str, Any]:
    """The function's answer to `GET <path>` under the deployed stage's path prefix."""
    event = copy.deepcopy(sample_event("web", "page"))
    event["routeKey"] = f"GET {path}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/prod{path}"
    answer: dict[str, Any] = handler(event, LocalLambdaContext(function_name="WebFunction"))
    return answer


def test_the_page_is_served_as_html_from_the_stage_path(handler: Any) -> None:
    answer = get(handler, "/")

    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"] == "text/html; charset=utf-8"
    assert "<title>What chatmemory remembers about you</title>" in answer["body"]


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/app.js", "text/javascript; charset=utf-8"),
        ("/app.css", "text/css; charset=utf-8"),
        ("/favicon.svg", "image/svg+xml"),
    ],
)
def test_each_asset_has_its_own_content_type(handler: Any, path: str, content_type: str) -> None:
    answer = get(handler, path)

    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"] == content_type
    assert answer["body"]


@pytest.mark.parametrize("path", ["/", "/app.js", "/nothing-here"])
def test_every_answer_keeps_the_page_to_its_own_origin(handler: Any, path: str) -> None:
    headers = get(handler, path)["headers"]

    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "'unsafe-inline'" not in csp and "frame-ancestors 'none'" in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize(
    "path", ["/index.html", "/../page.py", "/static/app.js", "/%2e%2e/page.py", "/page.py"]
)
def test_only_the_listed_files_are_served(handler: Any, path: str) -> None:
    answer = get(handler, path)

    assert answer["statusCode"] == 404
    assert answer["body"] == '{"error": {"code": "not_found", "message": "no such route"}}'


def test_the_page_has_no_inline_script_or_style() -> None:
    # Given the page as shipped (the policy above would block anything inline)
    html = (PROJECT_ROOT / "shared/chatmemory/web/static/index.html").read_text()

    # Then every script is a file of its own, and no element carries handlers or styles
    assert re.findall(r"<script[^>]*>", html) == ['<script src="app.js" defer>']
    assert not re.search(r"\son[a-z]+=", html) and " style=" not in html and "<style" not in html


def test_the_template_routes_exactly_the_listed_files_to_the_web_function() -> None:
    routes = http_routes(load_template(ROOT / "template.yaml"))

    served = {(route.method, route.path) for route in routes if route.function == "WebFunction"}

    assert served == {("GET", path) for path in PAGE_FILES}
    assert not any(route.authorized for route in routes if route.function == "WebFunction")
