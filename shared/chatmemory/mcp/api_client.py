"""The HTTP API as the MCP tools call it: one request, bounded in time, its failure in the
contract's words.

Every failure becomes an `ApiError(code, message)`: the API's own `{"error": {"code",
"message"}}` when it answered one, else a code of our own for what happened on the way —
`unreachable` (nothing listens there), `timeout` (no answer within the deadline),
`bad_answer` (something answered that is not this API). Messages never quote what was sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx2

#: a bearer token, or None for a call with none (the API then answers 401)
TokenSource = Callable[[], str | None]

DEFAULT_TIMEOUT_S = 10.0
_CONNECT_TIMEOUT_S = 3.0


class ApiError(Exception):
    """A call that did not succeed: the contract's code and message."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def path_id(value: str) -> str:
    """An id placed in a path, escaped so it stays one segment whatever it holds."""
    return quote(value, safe="")


class MemoryApi:
    """Calls the API at `base_url` (`http://127.0.0.1:3000`, or a stage's URL)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._transport = transport

    async def call(
        self,
        method: str,
        path: str,
        token: str | None,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, str | int] | None = None,
    ) -> Any:
        """The decoded JSON of a 2xx answer (None for an empty one); ApiError otherwise."""
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        timeout = httpx2.Timeout(self.timeout_s, connect=min(_CONNECT_TIMEOUT_S, self.timeout_s))
        try:
            async with httpx2.AsyncClient(
                base_url=self.base_url, timeout=timeout, transport=self._transport
            ) as client:
                answer = await client.request(
                    method, path, json=body, params=dict(query or {}), headers=headers
                )
        except httpx2.TimeoutException:
            raise ApiError("timeout", self._late()) from None
        except httpx2.TransportError:
            raise ApiError(
                "unreachable",
                f"chatmemory is not reachable at {self.base_url}; is the server running?",
            ) from None
        return _decoded(answer)

    def _late(self) -> str:
        return (
            f"chatmemory did not answer within {self.timeout_s:g} s; the call may or may not "
            "have been applied"
        )


def _decoded(answer: httpx2.Response) -> Any:
    if answer.status_code == 204 or not answer.content:
        if answer.is_success:
            return None
        raise ApiError("bad_answer", f"the API answered {answer.status_code} with no body")
    try:
        payload = answer.json()
    except ValueError:
        raise ApiError(
            "bad_answer", f"the API answered {answer.status_code} with something that is not JSON"
        ) from None
    if answer.is_success:
        return payload
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        raise ApiError(error["code"], str(error.get("message") or ""), answer.status_code)
    raise ApiError("bad_answer", f"the API answered {answer.status_code} outside its contract")
