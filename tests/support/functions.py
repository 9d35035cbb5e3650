"""Loads a function's app.py as Lambda would, and drives it with the sample events."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.config import Container, Settings
from chatmemory.domain.errors import ModelUnavailable
from chatmemory.domain.prompt import RenderedPrompt
from chatmemory.local.server import LocalLambdaContext
from chatmemory.ports.model import Model, ReplyDelta, ReplyDone, ToolRunner, ToolSpec

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"


class BrokenModel(OfflineModel):
    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        raise ModelUnavailable("overloaded")
        yield  # pragma: no cover - makes this a generator


class Wired(Container):
    """The container as config builds it, with a model swapped in where a test needs one."""

    def __init__(self, settings: Settings, clock: ManualClock, model: Model | None = None) -> None:
        super().__init__(settings, clock)
        if model is not None:
            self.__dict__["model"] = model  # what cached_property would have stored


def load_handler(function_folder: str) -> Any:
    """`functions/<folder>/app.py`'s lambda_handler, imported fresh under its own name."""
    return load_function(function_folder).lambda_handler


def load_function(function_folder: str) -> Any:
    """`functions/<folder>/app.py` as a module (a nested folder such as `pipeline/extract`
    too), imported fresh under its own name."""
    name = f"test_function_{function_folder.replace('/', '_')}"
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "functions" / function_folder / "app.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sample_event(folder: str, name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / folder / f"{name}.json").read_text())
    return event


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def error_code(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            return str(self.body["error"]["code"])
        return None


def invoke(
    handler: Any,
    event: dict[str, Any],
    *,
    user: str | None = "user-123",
    path_ids: dict[str, str] | None = None,
    body: Any = ...,
    raw_body: str | None = None,
    query: dict[str, str] | None = None,
    lambda_context: LocalLambdaContext | None = None,
) -> Reply:
    """Call the handler with a copy of `event` adjusted for this test."""
    event = copy.deepcopy(event)
    context = event["requestContext"]
    if user is None:
        context.pop("authorizer", None)
    elif "authorizer" in context:
        context["authorizer"]["jwt"]["claims"]["sub"] = user
    for name, value in (path_ids or {}).items():
        old = event["pathParameters"][name]
        event["pathParameters"][name] = value
        event["rawPath"] = event["rawPath"].replace(old, value)
        context["http"]["path"] = event["rawPath"]
    if body is not ...:
        event["body"] = json.dumps(body)
    if raw_body is not None:
        event["body"] = raw_body
    if query is not None:
        event["queryStringParameters"] = query
        event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in query.items())
    result = handler(event, lambda_context or LocalLambdaContext(function_name="test"))
    text = result.get("body") or ""
    return Reply(
        status=result["statusCode"],
        headers=result.get("headers") or {},
        body=json.loads(text) if text else None,
    )
