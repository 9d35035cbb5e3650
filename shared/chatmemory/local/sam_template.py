"""Reads template.yaml the way `sam local start-api` does: which function serves which route."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class _CfnLoader(yaml.SafeLoader):
    """YAML loader that keeps CloudFormation short-form tags (!Ref, !Sub, …) as plain dicts."""


def _construct_tag(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:  # pragma: no cover - YAML has no other node kinds
        raise TypeError(node)
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


def load_template(path: Path) -> dict[str, Any]:
    """The template as plain data, intrinsic functions kept as {"Ref": …} / {"Fn::…": …}."""
    loaded: dict[str, Any] = yaml.load(path.read_text(encoding="utf-8"), Loader=_CfnLoader)  # noqa: S506 - a SafeLoader subclass
    return loaded


@dataclass(frozen=True, slots=True)
class HttpRoute:
    """One HttpApi event: METHOD path → function, and whether the JWT authorizer guards it."""

    method: str  # "GET", … or "ANY"
    path: str  # "/v1/memories/{memory_id}"
    function: str  # logical id, e.g. "MemoriesFunction"
    code_uri: str  # "functions/memories/"
    handler: str  # "app.lambda_handler"
    authorized: bool
    pattern: re.Pattern[str]

    def matches(self, method: str, path: str) -> bool:
        return (self.method in ("ANY", method)) and bool(self.pattern.match(path))

    @property
    def is_greedy(self) -> bool:
        return "+}" in self.path


def _path_pattern(path: str) -> re.Pattern[str]:
    regex = ""
    for part in re.split(r"(\{[^}]+\})", path):
        if part.startswith("{") and part.endswith("+}"):
            regex += r".+"
        elif part.startswith("{"):
            regex += r"[^/]+"
        else:
            regex += re.escape(part)
    return re.compile(f"^{regex}$")


def http_routes(template: dict[str, Any]) -> list[HttpRoute]:
    """Every HttpApi route, most specific first, as API Gateway prefers them: a path of
    fixed segments over one with variables (`/v1/memories/export` over
    `/v1/memories/{memory_id}`), and any path over a greedy one."""
    default_auth = bool(
        next(
            (
                res["Properties"].get("Auth", {}).get("DefaultAuthorizer")
                for res in template.get("Resources", {}).values()
                if res.get("Type") == "AWS::Serverless::HttpApi"
            ),
            None,
        )
    )
    routes = []
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        properties = resource.get("Properties", {})
        for event in properties.get("Events", {}).values():
            if event.get("Type") != "HttpApi":
                continue
            spec = event.get("Properties", {})
            authorizer = spec.get("Auth", {}).get("Authorizer")
            method = str(spec["Method"]).upper()
            path = str(spec["Path"])
            routes.append(
                HttpRoute(
                    method="ANY" if method == "ANY" else method,
                    path=path,
                    function=logical_id,
                    code_uri=str(properties["CodeUri"]),
                    handler=str(properties["Handler"]),
                    authorized=default_auth and authorizer != "NONE",
                    pattern=_path_pattern(path),
                )
            )
    return sorted(
        routes, key=lambda r: (r.is_greedy, r.method == "ANY", r.path.count("{"), -len(r.path))
    )


def match_route(routes: list[HttpRoute], method: str, path: str) -> HttpRoute | None:
    return next((route for route in routes if route.matches(method, path)), None)
