"""The SDK clients ClaudeModel talks through (Claude API, Bedrock), with bounded timeouts,
and the model ids used when the settings name none."""

from __future__ import annotations

import anthropic
import httpx2

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


def deep_timeout() -> httpx2.Timeout:
    """The timeout of one deep extraction request (the client's own is for fast calls)."""
    return _bounded(DEEP_TIMEOUT_SECONDS)


def _bounded(timeout: float) -> httpx2.Timeout:
    return httpx2.Timeout(timeout, connect=min(CONNECT_TIMEOUT_SECONDS, timeout))
