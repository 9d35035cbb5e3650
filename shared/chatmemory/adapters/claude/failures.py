"""Every failure of the model as ModelUnavailable, named by its kind and never by its text.

Every failure of the model (HTTP errors, overload, rate limits, timeouts, a stream that
breaks or ends early) becomes ModelUnavailable whose message names the kind of failure
and never quotes the request; even after some text was streamed (the caller drops the
partial turn). Errors raised by `run_tool` are the caller's own and pass through.
"""

from __future__ import annotations

import logging

import anthropic
import httpx2

from chatmemory.domain.errors import ModelUnavailable

log = logging.getLogger(__name__)

#: what a call through the SDK may raise when the model, the network or the answer fails
SDK_FAILURES = (anthropic.AnthropicError, httpx2.HTTPError, ValueError)


def unavailable(kind: str) -> ModelUnavailable:
    """ModelUnavailable for a failure of `kind`, logged as a warning (the kind only)."""
    log.warning("claude unavailable: %s", kind)
    return ModelUnavailable(f"the model is unavailable: {kind}")


def failure_kind(error: Exception) -> str:
    """What went wrong, from the error's class, status and codes: never its message text,
    which may quote the request."""
    if isinstance(error, anthropic.APITimeoutError | httpx2.TimeoutException):
        return "timeout"
    if isinstance(error, anthropic.APIConnectionError):
        # Newer SDKs wrap a connection that dropped while the body was being read.
        dropped = isinstance(error.__cause__, httpx2.RemoteProtocolError | httpx2.ReadError)
        return "the stream broke off" if dropped else "connection error"
    if isinstance(error, httpx2.HTTPError):
        return "the stream broke off"
    if isinstance(error, anthropic.APIStatusError):
        kind = str(error.type or "api_error")
        # An `event: error` inside a stream arrives on a 200 response.
        where = f"HTTP {error.status_code}" if error.status_code >= 400 else "mid-stream"
        details = [where]
        if error.error_code:
            details.append(f"code {error.error_code}")
        if error.request_id:
            details.append(f"request {error.request_id}")
        return f"{kind} ({', '.join(details)})"
    if isinstance(error, anthropic.AnthropicError):
        return type(error).__name__
    return "malformed response"
