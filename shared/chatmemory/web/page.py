"""The manage page's files, answered as the gateway's routes name them.

The page is a few static files in `static/`, shipped inside the package (no build step, no
CDN). Only the files listed here are ever served, each under its own route with its own
content type: no path from a request is joined to a folder, so nothing else can be read.
Every answer carries headers that keep the page to its own files and its own origin (no
inline script, no framing, no referrer, no content sniffing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

# Scripts, styles, images and calls only from the page's own origin; nothing inline.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    # Always asked again: a page from an older deploy must not meet a newer API.
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True, slots=True)
class PageFile:
    """One file of the page: where it lives in `static/` and what it is."""

    name: str
    content_type: str


# The route (as template.yaml declares it) → the file it serves. The whole allow-list.
PAGE_FILES = {
    "/": PageFile("index.html", "text/html; charset=utf-8"),
    "/app.js": PageFile("app.js", "text/javascript; charset=utf-8"),
    "/app.css": PageFile("app.css", "text/css; charset=utf-8"),
    "/favicon.svg": PageFile("favicon.svg", "image/svg+xml"),
}


@cache
def _text(name: str) -> str:
    """The file's text, read once per process (the files are part of the package)."""
    return (files("chatmemory.web") / "static" / name).read_text(encoding="utf-8")


def page_response(route_key: str) -> dict[str, Any]:
    """The gateway response for `GET <path>` of the page; a 404 for anything else."""
    method, _, path = route_key.partition(" ")
    page_file = PAGE_FILES.get(path) if method == "GET" else None
    if page_file is None:
        body = json.dumps({"error": {"code": "not_found", "message": "no such route"}})
        return {
            "statusCode": 404,
            "headers": {"Content-Type": "application/json", **SECURITY_HEADERS},
            "body": body,
        }
    return {
        "statusCode": 200,
        "headers": {"Content-Type": page_file.content_type, **SECURITY_HEADERS},
        "body": _text(page_file.name),
    }
