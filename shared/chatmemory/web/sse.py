"""Server-Sent Events: what a streamed call answers, and how each event is framed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

EVENT_STREAM = "text/event-stream"
_HEADERS = {
    "Content-Type": f"{EVENT_STREAM}; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # proxies must not buffer a stream
}


@dataclass(frozen=True, slots=True)
class StreamedResponse:
    """A status, its headers and a body sent piece by piece as it is produced."""

    status: int
    headers: dict[str, str]
    body: Iterator[bytes]


def wants_stream(accept: str | None) -> bool:
    return bool(accept) and EVENT_STREAM in (accept or "")


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One event, its data as JSON on a single `data:` line."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def event_stream(events: Iterator[bytes]) -> StreamedResponse:
    """A 200 that streams `events` (each already framed by `sse`)."""
    return StreamedResponse(HTTPStatus.OK.value, dict(_HEADERS), events)
