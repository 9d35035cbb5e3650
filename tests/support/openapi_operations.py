"""The operations a served OpenAPI document declares, read so tests can cover every one of them.

Tests that must hold "on every route" enumerate from here instead of keeping their own list,
so a route added later is covered (or makes them fail) without anyone remembering to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

METHODS = ("get", "put", "post", "delete", "patch", "options", "head")


@dataclass(frozen=True)
class Operation:
    method: str  # "GET", …
    path: str  # "/v1/memories/{memory_id}"
    path_params: tuple[str, ...]
    body_schema: dict[str, Any] | None  # resolved, None when it takes no body
    needs_token: bool

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    def url(self, **ids: str) -> str:
        """The path with each parameter filled in (KeyError names a parameter nobody gave)."""
        return re.sub(r"\{([^}]+)\}", lambda match: ids[match.group(1)], self.path)

    @property
    def body_fields(self) -> dict[str, dict[str, Any]]:
        return dict((self.body_schema or {}).get("properties", {}))


def operations(document: dict[str, Any]) -> list[Operation]:
    """Every operation of the document, in its order."""
    default_security = document.get("security", [])
    found = []
    for path, item in document["paths"].items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            parameters = [*item.get("parameters", []), *operation.get("parameters", [])]
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            found.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    path_params=tuple(p["name"] for p in parameters if p["in"] == "path"),
                    body_schema=resolve(document, body["schema"]) if body else None,
                    needs_token=_needs_token(operation.get("security", default_security)),
                )
            )
    return found


def _needs_token(security: list[dict[str, list[str]]]) -> bool:
    """A requirement list needs a token unless it is empty or offers the empty requirement."""
    return bool(security) and all(requirement for requirement in security)


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The schema itself, following a local `$ref`."""
    while "$ref" in schema:
        node: Any = document
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def field_type(document: dict[str, Any], field: dict[str, Any]) -> dict[str, Any]:
    """The non-null alternative of a field (`anyOf: [X, null]` is how optional fields read)."""
    field = resolve(document, field)
    choices = [resolve(document, c) for c in field.get("anyOf", [field])]
    concrete = [c for c in choices if c.get("type") != "null"]
    return concrete[0] if concrete else field


def minimal_body(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The smallest body the schema accepts: its required fields, each with a plain value
    (the field's own example when the document gives one, an enum's first value)."""
    body: dict[str, Any] = {}
    for name in schema.get("required", []):
        examples = schema["properties"][name].get("examples")
        kind = field_type(document, schema["properties"][name])
        if examples:
            body[name] = examples[0]
        elif "const" in kind:
            body[name] = kind["const"]
        elif kind.get("type") == "array" and not kind.get("minItems"):
            body[name] = []
        elif kind.get("enum"):
            body[name] = kind["enum"][0]
        elif kind.get("type") == "string" and "pattern" not in kind and "format" not in kind:
            body[name] = "Has a plain test value."[: kind.get("maxLength", 200)]
        elif kind.get("type") == "boolean":
            body[name] = False
        elif kind.get("type") == "integer":
            body[name] = kind.get("minimum", 0)
        else:
            raise AssertionError(f"no plain value for required field {name!r}: {kind}")
    return body
