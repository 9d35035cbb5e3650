"""Claude through the Anthropic SDK: the chat model on the Claude API or on Amazon Bedrock.

`reply` streams one chat turn with `messages.stream`, running the tools the model calls
and continuing the turn with their results; `summarize` folds turns into a conversation's
summary with one `messages.create` on the fast model.

Choices worth knowing:
- The request mirrors the rendered prompt exactly: one text block per system block and
  per message, `cache_control: ephemeral` wherever the prompt set a cache breakpoint.
  Tools go first in the cache prefix, so the tool list never changes within a turn.
- After `max_tool_rounds` rounds of tool calls the last request still carries the tools
  but sets `tool_choice: none`. Dropping the tools instead would change the start of the
  cached prefix (tools come before the system prompt) and so miss the prompt cache, and a
  conversation that holds tool_use / tool_result blocks is meant to keep defining its
  tools. `none` is also one of the two tool choices Sonnet 5.5 accepts (`any` and `tool`
  are refused there).
- Thinking: Sonnet 5.5 thinks by default and, when it does, returns the text it writes
  between tool calls inside thinking blocks, which a chat would not show; the chat asks it
  for `between_tools` (no up-front thinking) so that text streams like any other and no
  output budget goes to thinking. Haiku 5.5 (the fold) runs with thinking disabled, so
  `max_tokens` bounds the summary itself. Other models get their own default.
- The assistant turn sent back after a tool call is the model's message exactly as
  received (`Message.to_param()`), thinking blocks included, as the API requires.
- Every failure of the model (HTTP errors, overload, rate limits, timeouts, a stream that
  breaks or ends early) becomes ModelUnavailable whose message names the kind of failure
  and never quotes the request; even after some text was streamed (the caller drops the
  partial turn). Errors raised by `run_tool` are the caller's own and pass through.
- Nothing here logs prompt or reply text: only model ids, counts and failure kinds. (The
  SDK itself logs whole requests at DEBUG: keep the `anthropic` logger above DEBUG.)
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator, Sequence
from importlib import resources

import anthropic
import httpx2
from anthropic.types import (
    CacheControlEphemeralParam,
    MessageParam,
    TextBlockParam,
    ThinkingConfigParam,
    ToolChoiceNoneParam,
    ToolParam,
    ToolResultBlockParam,
)
from anthropic.types.parsed_message import ParsedMessage

from chatmemory.domain.errors import ModelUnavailable
from chatmemory.domain.prompt import PromptMessage, RenderedPrompt, Turn
from chatmemory.ports import (
    Model,
    ReplyDelta,
    ReplyDone,
    ToolCall,
    ToolRunner,
    ToolSpec,
    Usage,
)

log = logging.getLogger(__name__)

# Current ids from the SDK's own `ModelParam` literal list (anthropic 2.14.0), none of them
# in its DEPRECATED_MODELS: the Sonnet tier chats, the Haiku tier folds summaries.
DEFAULT_CHAT_MODEL = "claude-sonnet-5-5"
DEFAULT_FAST_MODEL = "claude-haiku-5-5"
# The same models on Bedrock's Messages-API endpoint (`bedrock_mantle_client`).
DEFAULT_BEDROCK_CHAT_MODEL = "anthropic.claude-sonnet-5-5"
DEFAULT_BEDROCK_FAST_MODEL = "anthropic.claude-haiku-5-5"

#: a dead endpoint fails fast; a slow stream may still take `timeout` between two chunks
CONNECT_TIMEOUT_SECONDS = 3.0

ClaudeClient = anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicBedrockMantle

_CACHE_BREAKPOINT: CacheControlEphemeralParam = {"type": "ephemeral"}
_NO_MORE_TOOLS: ToolChoiceNoneParam = {"type": "none"}
_SDK_FAILURES = (anthropic.AnthropicError, httpx2.HTTPError, ValueError)


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


def _bounded(timeout: float) -> httpx2.Timeout:
    return httpx2.Timeout(timeout, connect=min(CONNECT_TIMEOUT_SECONDS, timeout))


def thinking_for(model: str) -> ThinkingConfigParam | None:
    """The thinking setting sent to `model`, or None to leave the model's default.

    Matched on the family so the Claude API and Bedrock ids behave alike.
    """
    if "claude-sonnet-5-5" in model:
        return {"type": "between_tools"}  # Sonnet 5.5 refuses "disabled"
    if "claude-haiku-5-5" in model:
        return {"type": "disabled"}
    return None


def fold_prompt(max_tokens: int) -> str:
    """The fold rules (prompts/fold_summary.txt) with the summary's token budget filled in."""
    text = resources.files("chatmemory.prompts").joinpath("fold_summary.txt").read_text("utf-8")
    return (
        text.replace("{max_tokens}", str(max_tokens))
        .replace("{max_words}", str(max_tokens * 3 // 4))
        .strip()
    )


class ClaudeModel(Model):
    """Claude as the chat `Model`: streamed replies with tool calls, and summary folds."""

    offline = False

    def __init__(
        self,
        *,
        client: ClaudeClient,
        chat_model: str,
        fast_model: str,
        max_tokens: int = 1024,
        max_tool_rounds: int = 3,
    ) -> None:
        self._client = client
        self._chat_model = chat_model
        self._fast_model = fast_model
        self._max_tokens = max_tokens
        self._max_tool_rounds = max_tool_rounds
        self.name = chat_model

    # ---- the chat turn --------------------------------------------------------------

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        """Stream the reply: a ReplyDelta per piece of text, then one ReplyDone.

        Tool calls are run with `run_tool` between rounds; ReplyDone carries the text of
        every round (rounds joined by a blank line, streamed too) and the summed usage.
        """
        system = [_text_block(block.text, block.cache) for block in prompt.system]
        messages = [_message_param(message) for message in prompt.messages]
        tool_params = [_tool_param(spec) for spec in tools]
        parts: list[str] = []
        usage = Usage()
        rounds = 0
        while True:
            last_round = bool(tool_params) and rounds >= self._max_tool_rounds
            # The previous round's text ended at a tool call: a blank line before the next.
            lead = "\n\n" if parts else ""
            message = yield from self._stream_round(system, messages, tool_params, last_round, lead)
            usage = _add_usage(usage, message)
            text = "".join(block.text for block in message.content if block.type == "text")
            if text:
                parts.append(text)
            calls = [block for block in message.content if block.type == "tool_use"]
            if message.stop_reason != "tool_use" or not calls or last_round:
                break
            rounds += 1
            results: list[ToolResultBlockParam] = [
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": run_tool(ToolCall(name=call.name, arguments=dict(call.input))),
                }
                for call in calls
            ]
            messages.append(message.to_param())
            messages.append({"role": "user", "content": results})
        stop_reason = message.stop_reason or "end_turn"
        log.info(
            "claude reply: model=%s tool_rounds=%d stop=%s input=%d output=%d cache_read=%d",
            self._chat_model,
            rounds,
            stop_reason,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
        )
        yield ReplyDone(text="\n\n".join(parts), usage=usage, stop_reason=stop_reason)

    def _stream_round(
        self,
        system: list[TextBlockParam],
        messages: list[MessageParam],
        tools: list[ToolParam],
        last_round: bool,
        lead: str,
    ) -> Generator[ReplyDelta, None, ParsedMessage[None]]:
        """One streamed request: its text deltas (`lead` before the first), then its message."""
        thinking = thinking_for(self._chat_model)
        try:
            with self._client.messages.stream(
                model=self._chat_model,
                max_tokens=self._max_tokens,
                system=system,
                messages=messages,
                tools=tools if tools else anthropic.omit,
                tool_choice=_NO_MORE_TOOLS if last_round else anthropic.omit,
                thinking=thinking if thinking is not None else anthropic.omit,
            ) as stream:
                stopped = False
                for event in stream:
                    if event.type == "text":
                        if lead:
                            yield ReplyDelta(lead)
                            lead = ""
                        yield ReplyDelta(event.text)
                    elif event.type == "message_stop":
                        stopped = True
                if not stopped:
                    raise _unavailable("the stream ended before message_stop")
                return stream.get_final_message()
        except _SDK_FAILURES as error:
            raise _unavailable(_failure_kind(error)) from None

    # ---- the fold -----------------------------------------------------------------

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        """The new running summary: `turns` folded into `summary`, by the fast model."""
        transcript = "\n\n".join(f"{turn.role}: {turn.content}" for turn in turns)
        request = (
            f"<summary>\n{summary.strip()}\n</summary>\n\n<new_turns>\n{transcript}\n</new_turns>"
        )
        thinking = thinking_for(self._fast_model)
        try:
            message = self._client.messages.create(
                model=self._fast_model,
                max_tokens=max_tokens,
                system=fold_prompt(max_tokens),
                messages=[{"role": "user", "content": request}],
                thinking=thinking if thinking is not None else anthropic.omit,
            )
        except _SDK_FAILURES as error:
            raise _unavailable(_failure_kind(error)) from None
        text = "".join(block.text for block in message.content if block.type == "text").strip()
        log.info(
            "claude fold: model=%s turns=%d stop=%s output=%d",
            self._fast_model,
            len(turns),
            message.stop_reason,
            message.usage.output_tokens,
        )
        if message.stop_reason == "refusal":
            raise _unavailable("the fold was refused")
        if not text:
            raise _unavailable("the fold came back empty")
        return text


# ---- request and response pieces ------------------------------------------------------


def _text_block(text: str, cache: bool) -> TextBlockParam:
    block: TextBlockParam = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = _CACHE_BREAKPOINT
    return block


def _message_param(message: PromptMessage) -> MessageParam:
    content = [_text_block(message.content, message.cache)]
    if message.role == "user":
        return {"role": "user", "content": content}
    if message.role == "assistant":
        return {"role": "assistant", "content": content}
    raise ValueError(
        f"a prompt message must be from the user or the assistant, not {message.role!r}"
    )


def _tool_param(spec: ToolSpec) -> ToolParam:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}


def _add_usage(total: Usage, message: ParsedMessage[None]) -> Usage:
    used = message.usage
    return Usage(
        input_tokens=total.input_tokens + used.input_tokens,
        output_tokens=total.output_tokens + used.output_tokens,
        cache_read_tokens=total.cache_read_tokens + (used.cache_read_input_tokens or 0),
        cache_write_tokens=total.cache_write_tokens + (used.cache_creation_input_tokens or 0),
    )


# ---- failures ---------------------------------------------------------------------------


def _unavailable(kind: str) -> ModelUnavailable:
    log.warning("claude unavailable: %s", kind)
    return ModelUnavailable(f"the model is unavailable: {kind}")


def _failure_kind(error: Exception) -> str:
    """What went wrong, from the error's class, status and codes: never its message text,
    which may quote the request."""
    if isinstance(error, anthropic.APITimeoutError | httpx2.TimeoutException):
        return "timeout"
    if isinstance(error, anthropic.APIConnectionError):
        return "connection error"
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
