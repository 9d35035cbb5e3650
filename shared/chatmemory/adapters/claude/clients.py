"""The SDK clients ClaudeModel talks through (Claude API, Bedrock), with bounded timeouts,
and the model ids used when the settings name none."""

from __future__ import annotations

from collections.abc import Callable

import anthropic
import httpx2

#: seconds the current request has left (≤ 0 once past), or None when it is unbounded
TimeLeft = Callable[[], float | None]


def unbounded() -> float | None:
    """No deadline: outside a request, and wherever none is wired in."""
    return None


# Current ids from the SDK's own `ModelParam` literal list (anthropic 2.14.0), none of them
# in its DEPRECATED_MODELS: the Sonnet tier chats, the Haiku tier folds summaries and
# extracts, the Opus tier extracts in deep mode ("remember this conversation", the sweep).
DEFAULT_CHAT_MODEL = "claude-sonnet-5-5"
DEFAULT_FAST_MODEL = "claude-haiku-5-5"
DEFAULT_DEEP_MODEL = "claude-opus-5-5"
# The same models on Bedrock's Messages-API endpoint (`bedrock_mantle_client`).
DEFAULT_BEDROCK_CHAT_MODEL = "anthropic.claude-sonnet-5-5"
DEFAULT_BEDROCK_FAST_MODEL = "anthropic.claude-haiku-5-5"
DEFAULT_BEDROCK_DEEP_MODEL = "anthropic.claude-opus-5-5"

#: a dead endpoint fails fast; a slow stream may still take `timeout` between two chunks
CONNECT_TIMEOUT_SECONDS = 3.0
#: a deep extraction (the stronger model thinking over a whole conversation, a doubled
#: budget) may take well past the 30 s a fast call is given; it runs off the request path
DEEP_TIMEOUT_SECONDS = 120.0

ClaudeClient = anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicBedrockMantle


def anthropic_client(
    api_key: str, *, timeout: float = 30.0, max_retries: int = 2
) -> anthropic.Anthropic:
    """A Claude API client with bounded timeouts and retries (the SDK waits 10 minutes)."""
    return anthropic.Anthropic(api_key=api_key, timeout=_bounded(timeout), max_retries=max_retries)


def bedrock_client(
    region: str, *, timeout: float = 30.0, max_retries: int = 2
) -> anthropic.AnthropicBedrock:
    """A client for Bedrock's InvokeModel integration, credentials from the AWS chain.

    Anthropic documents that integration for Claude Opus 4.6 and earlier; the current
    models are served by Bedrock's Messages-API endpoint: see `bedrock_mantle_client`.
    """
    return anthropic.AnthropicBedrock(
        aws_region=region, timeout=_bounded(timeout), max_retries=max_retries
    )


def bedrock_mantle_client(
    region: str, *, timeout: float = 30.0, max_retries: int = 2
) -> anthropic.AnthropicBedrockMantle:
    """A client for Bedrock's Messages-API endpoint (Claude Opus 4.7 and later models)."""
    return anthropic.AnthropicBedrockMantle(
        aws_region=region, timeout=_bounded(timeout), max_retries=max_retries
    )


#: below this a model call cannot answer anything useful: fail at once, in the contract's shape
MIN_CALL_SECONDS = 2.0


class OutOfTime(Exception):
    """The request has too little time left for another model call."""


def deep_timeout() -> httpx2.Timeout:
    """The timeout of one deep extraction request (the client's own is for fast calls)."""
    return _bounded(DEEP_TIMEOUT_SECONDS)


def within_deadline(
    client: ClaudeClient, time_left: TimeLeft, *, deep: bool = False
) -> ClaudeClient:
    """The client to make one call with: given at most the request's time left, and retries
    only where every attempt still fits (OutOfTime when too little is left).

    A Lambda behind the HTTP API has 29 s; the SDK's 30 s per attempt and two retries would
    outlive it, and the caller would meet the gateway's bare 503.
    """
    per_attempt = DEEP_TIMEOUT_SECONDS if deep else _read_seconds(client.timeout)
    left = time_left()
    if left is None:
        return client.with_options(timeout=deep_timeout()) if deep else client
    if left < MIN_CALL_SECONDS:
        raise OutOfTime(f"{left:.1f} s left")
    per_attempt = min(per_attempt, left)
    retries = client.max_retries if (client.max_retries + 1) * per_attempt <= left else 0
    return client.with_options(timeout=_bounded(per_attempt), max_retries=retries)


def _read_seconds(timeout: object) -> float:
    if isinstance(timeout, httpx2.Timeout):
        return timeout.read if timeout.read is not None else DEEP_TIMEOUT_SECONDS
    if isinstance(timeout, int | float):
        return float(timeout)
    return DEEP_TIMEOUT_SECONDS


def _bounded(timeout: float) -> httpx2.Timeout:
    return httpx2.Timeout(timeout, connect=min(CONNECT_TIMEOUT_SECONDS, timeout))
