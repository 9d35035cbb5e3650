"""Claude through the Anthropic SDK: the chat model on the Claude API or on Amazon Bedrock.

One module per piece: `clients` (SDK clients, timeouts, default model ids), `requests`
(how each request is shaped: thinking, tool choice, params, request text), `prompts` (the
prompt files the fast model's calls run on), `answer_tools` (the tools the write path's
answers come back through), `parsing` (those answers as Candidates, ThreadReports,
RouteDecisions and each memory's uses), `failures` (every failure as ModelUnavailable)
and `model` (`ClaudeModel` itself).

Nothing here logs prompt or reply text: only model ids, counts and failure kinds. (The
SDK itself logs whole requests at DEBUG: keep the `anthropic` logger above DEBUG.)
"""

from __future__ import annotations

from chatmemory.adapters.claude.clients import (
    CONNECT_TIMEOUT_SECONDS,
    DEFAULT_BEDROCK_CHAT_MODEL,
    DEFAULT_BEDROCK_DEEP_MODEL,
    DEFAULT_BEDROCK_FAST_MODEL,
    DEFAULT_CHAT_MODEL,
    DEFAULT_DEEP_MODEL,
    DEFAULT_FAST_MODEL,
    ClaudeClient,
    anthropic_client,
    bedrock_client,
    bedrock_mantle_client,
)
from chatmemory.adapters.claude.model import ClaudeModel
from chatmemory.adapters.claude.requests import structured_call_for

__all__ = [
    "CONNECT_TIMEOUT_SECONDS",
    "DEFAULT_BEDROCK_CHAT_MODEL",
    "DEFAULT_BEDROCK_DEEP_MODEL",
    "DEFAULT_BEDROCK_FAST_MODEL",
    "DEFAULT_CHAT_MODEL",
    "DEFAULT_DEEP_MODEL",
    "DEFAULT_FAST_MODEL",
    "ClaudeClient",
    "ClaudeModel",
    "anthropic_client",
    "bedrock_client",
    "bedrock_mantle_client",
    "structured_call_for",
]
