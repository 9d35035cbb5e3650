"""Request bodies are JSON: what a Content-Type header may say, checked before any parsing.

Media types are case-insensitive (`APPLICATION/JSON` is JSON) and may carry parameters;
a body sent as a form, as multipart or as plain text is refused with 415 before anything
reads it, so its content can never be echoed back in an error or half-applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus

JSON = "application/json"


@dataclass(frozen=True, slots=True)
class MediaTypeRefusal:
    status: HTTPStatus
    code: str
    message: str


def media_type(content_type: str | None) -> tuple[str, dict[str, str]]:
    """The lower-cased media type and its parameters ("" when there is none)."""
    if not content_type:
        return "", {}
    kind, *parameters = content_type.split(";")
    parsed: dict[str, str] = {}
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip():
            parsed[name.strip().lower()] = value.strip().strip('"').lower()
    return kind.strip().lower(), parsed


def is_json(content_type: str | None) -> bool:
    kind, _ = media_type(content_type)
    return kind == JSON or (kind.startswith("application/") and kind.endswith("+json"))


def refuse_body(content_type: str | None, has_body: bool) -> MediaTypeRefusal | None:
    """Why a request body cannot be read as JSON, or None if it can (or there is none).

    A body must say it is JSON: one without a Content-Type is refused like a form (a
    browser sends a typeless body cross-site with no preflight; nothing reads it here).
    """
    if not has_body:
        return None
    if not content_type or not is_json(content_type):
        return MediaTypeRefusal(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "request bodies are JSON: send Content-Type: application/json",
        )
    charset = media_type(content_type)[1].get("charset")
    if charset not in (None, "utf-8", "utf8"):
        return MediaTypeRefusal(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "request bodies are UTF-8 JSON: send Content-Type: application/json; charset=utf-8",
        )
    return None


def header(headers: Mapping[str, str] | None, name: str) -> str | None:
    """A header's value whatever the case of its name (API Gateway lower-cases them)."""
    wanted = name.lower()
    for key, value in (headers or {}).items():
        if key.lower() == wanted:
            return value
    return None
