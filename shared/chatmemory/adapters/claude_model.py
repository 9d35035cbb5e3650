"""Claude through the Anthropic SDK: the chat model on the Claude API or on Amazon Bedrock.

`reply` streams one chat turn with `messages.stream`, running the tools the model calls
and continuing the turn with their results; `summarize` folds turns into a conversation's
summary with one `messages.create` on the fast model; `extract` and `route` (the write
path's two calls) are one `messages.create` each on the fast model, whose structured
answer is the input of a tool the model is made to call.

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
- Structured output (extract, route): the answer is the input of one tool call
  (`record_memories`, `route_memories`). Where the model allows it the call is forced
  (`tool_choice: tool`), and a forced call needs thinking off: the API refuses forced tool
  use while thinking is on. So the fast tier, Haiku 5.5, runs with thinking disabled (it
  accepts that at its default effort) and a forced tool. The models that refuse a forced
  tool outright (Sonnet 5.5, Opus 5.5, Fable 5.1) or cannot turn thinking off (the Opus
  5.5 / Fable / Mythos 5.x lines) get `tool_choice: auto` and their usual thinking, and
  the prompt asks for exactly one call; see `structured_call_for`. No call, a cut-off or
  refused answer, or a malformed top level is ModelUnavailable (the step retries); a bad
  item inside a good answer is dropped, never repaired.
- Nothing here logs prompt or reply text: only model ids, counts and failure kinds. (The
  SDK itself logs whole requests at DEBUG: keep the `anthropic` logger above DEBUG.)
"""

from __future__ import annotations

import functools
import json
import logging
from collections import Counter
from collections.abc import Generator, Iterator, Sequence
from datetime import datetime
from importlib import resources

import anthropic
import httpx2
from anthropic.types import (
    CacheControlEphemeralParam,
    MessageParam,
    TextBlockParam,
    ThinkingConfigParam,
    ToolChoiceNoneParam,
    ToolChoiceParam,
    ToolParam,
    ToolResultBlockParam,
)
from anthropic.types.parsed_message import ParsedMessage

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField, ModelRefused, ModelUnavailable
from chatmemory.domain.extraction import (
    IMPORTANCE_FLOOR,
    MAX_CANDIDATES,
    SENSITIVE_CATEGORIES,
    Candidate,
    ExtractionInput,
)
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.prompt import PromptMessage, RenderedPrompt, Turn, neutralise
from chatmemory.domain.routing import Action, RouteDecision
from chatmemory.domain.time import parse_instant
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS
from chatmemory.ports import (
    Model,
    ReplyDelta,
    ReplyDone,
    RoutingCase,
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

# ---- the write path's structured calls ------------------------------------------------------

RECORD_MEMORIES = "record_memories"
ROUTE_MEMORIES = "route_memories"
#: room for up to 12 memories with their uses (and for thinking, where it cannot be off)
EXTRACT_MAX_TOKENS = 8192
ROUTE_MAX_TOKENS = 4096
#: what the extractor may propose (a `thread` is not the extractor's to make)
EXTRACTED_KINDS: tuple[str, ...] = tuple(
    kind.value
    for kind in (
        Kind.FACT,
        Kind.PREFERENCE,
        Kind.EVENT,
        Kind.PROMISE,
        Kind.OPEN_LOOP,
        Kind.RELATIONSHIP,
    )
)
#: the recommended categories: the described ones, every sensitive one (so the write
#: filter's sensitive gate sees them by name), and the default
EXTRACTED_CATEGORIES: tuple[str, ...] = (
    *CATEGORY_DESCRIPTIONS,
    *sorted(SENSITIVE_CATEGORIES - set(CATEGORY_DESCRIPTIONS)),
    rules.DEFAULT_CATEGORY,
)
# Families that answer a forced tool choice with a 400: Sonnet 5.5, Opus 5.5 and Fable 5.1
# refuse forced tool use outright; Opus 5.5 and the Fable / Mythos 5.x lines cannot turn
# thinking off, and the API refuses forced tool use while thinking is on. Matched on the
# family so the Claude API and Bedrock ids behave alike.
_NO_FORCED_TOOL = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-fable-5", "claude-mythos-5")

RECORD_MEMORIES_TOOL: ToolParam = {
    "name": RECORD_MEMORIES,
    "description": (
        "Record what this stretch of conversation taught you about the user: only new, "
        "durable memories, from the user's own lines. An empty list when there is nothing."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "maxItems": MAX_CANDIDATES,
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {
                            "type": "string",
                            "maxLength": rules.EXTRACTED_TEXT_MAX,
                            "description": "one standalone sentence, third person, no name",
                        },
                        "category": {"type": "string", "enum": list(EXTRACTED_CATEGORIES)},
                        "key": {
                            "type": "string",
                            "description": (
                                "snake_case conflict key of a standing fact a newer "
                                "statement replaces (home_city, diet, job …)"
                            ),
                        },
                        "kind": {"type": "string", "enum": list(EXTRACTED_KINDS)},
                        "importance": {"type": "integer", "minimum": 1, "maximum": 10},
                        "stated_by": {"type": "string", "enum": [s.value for s in StatedBy]},
                        "valid_from": {
                            "type": "string",
                            "format": "date",
                            "description": "YYYY-MM-DD it became true; only when a time is stated",
                        },
                        "valid_until": {
                            "type": "string",
                            "format": "date",
                            "description": "YYYY-MM-DD it stops being true; only when stated",
                        },
                        "evidence": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 1},
                            "minItems": 1,
                            "description": "the numbers of the transcript lines it came from",
                        },
                        "uses": {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 3,
                            "maxItems": 6,
                        },
                    },
                    "required": [
                        "text",
                        "category",
                        "kind",
                        "importance",
                        "stated_by",
                        "evidence",
                        "uses",
                    ],
                },
            }
        },
        "required": ["memories"],
    },
}

ROUTE_MEMORIES_TOOL: ToolParam = {
    "name": ROUTE_MEMORIES,
    "description": "Record one decision for every candidate memory, in order.",
    "input_schema": {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "candidate": {"type": "integer", "minimum": 1},
                        "event": {"type": "string", "enum": [action.value for action in Action]},
                        "id": {
                            "type": "string",
                            "description": "the neighbour updated or closed (UPDATE, CLOSE)",
                        },
                    },
                    "required": ["candidate", "event"],
                },
            }
        },
        "required": ["decisions"],
    },
}


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


def structured_call_for(
    model: str, tool_name: str
) -> tuple[ToolChoiceParam, ThinkingConfigParam | None]:
    """How `model` is made to answer through `tool_name`: the tool choice, and the thinking
    setting to send (None: the model's default).

    Forced (`tool`) with thinking disabled wherever that is allowed: the API refuses forced
    tool use while thinking is on. A model that refuses either gets `auto` and its usual
    thinking setting; the prompt then asks for exactly one call.
    """
    if any(family in model for family in _NO_FORCED_TOOL):
        return {"type": "auto", "disable_parallel_tool_use": True}, thinking_for(model)
    forced: ToolChoiceParam = {"type": "tool", "name": tool_name, "disable_parallel_tool_use": True}
    return forced, {"type": "disabled"}


@functools.cache
def extract_prompt() -> str:
    """The extraction rules (prompts/extract.txt) with the limits, the categories and the
    rule for `uses` and `importance` (prompts/memory_uses_rule.txt, verbatim) filled in."""
    prompts = resources.files("chatmemory.prompts")
    text = prompts.joinpath("extract.txt").read_text("utf-8")
    uses_rule = prompts.joinpath("memory_uses_rule.txt").read_text("utf-8").strip()
    described = [
        f"  {name}{' (sensitive)' if name in SENSITIVE_CATEGORIES else ''}: {description}"
        for name, description in CATEGORY_DESCRIPTIONS.items()
    ]
    undescribed = [
        f"  {name} (sensitive)"
        for name in sorted(SENSITIVE_CATEGORIES - set(CATEGORY_DESCRIPTIONS))
    ]
    fallback = [f"  {rules.DEFAULT_CATEGORY}: anything that fits no other category"]
    return (
        text.replace("{max_candidates}", str(MAX_CANDIDATES))
        .replace("{max_chars}", str(rules.EXTRACTED_TEXT_MAX))
        .replace("{importance_floor}", str(IMPORTANCE_FLOOR))
        .replace("{sensitive_categories}", ", ".join(sorted(SENSITIVE_CATEGORIES)))
        .replace("{categories}", "\n".join(described + undescribed + fallback))
        .replace("{uses_rule}", uses_rule)
        .strip()
    )


@functools.cache
def route_prompt() -> str:
    """The router's rules (prompts/route.txt)."""
    return resources.files("chatmemory.prompts").joinpath("route.txt").read_text("utf-8").strip()


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
        # What the user typed cannot close the section it is quoted in (domain/prompt.py).
        transcript = "\n\n".join(f"{turn.role}: {neutralise(turn.content)}" for turn in turns)
        request = (
            f"<summary>\n{neutralise(summary.strip())}\n</summary>\n\n"
            f"<new_turns>\n{transcript}\n</new_turns>"
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

    # ---- the write path -------------------------------------------------------------

    def extract(self, request: ExtractionInput) -> list[Candidate]:
        """Candidate memories from the slice, by the fast model through `record_memories`.

        Transcript lines are numbered from 1 in the request; evidence numbers map back to
        their message ids. An item that names a line not offered, breaks a field rule or
        leaves the offered values is dropped, never repaired.
        """
        if not request.transcript:
            return []
        answer = self._structured_call(
            extract_prompt(),
            _extraction_request(request),
            RECORD_MEMORIES_TOOL,
            EXTRACT_MAX_TOKENS,
            "extraction",
        )
        items = answer.get("memories")
        if not isinstance(items, list):
            raise _unavailable("the extraction came back without a list of memories")
        line_ids = [line.message_id for line in request.transcript]
        kept: list[Candidate] = []
        dropped: Counter[str] = Counter()
        for item in items:
            try:
                candidate = _candidate(item, line_ids)
            except ValueError as error:  # InvalidField is a ValueError
                dropped[error.field if isinstance(error, InvalidField) else "value"] += 1
                continue
            if len(kept) == MAX_CANDIDATES:
                dropped["over_cap"] += 1
                continue
            kept.append(candidate)
        log.info(
            "claude extraction: lines=%d returned=%d kept=%d dropped=%s",
            len(line_ids),
            len(items),
            len(kept),
            dict(sorted(dropped.items())),
        )
        return kept

    def route(self, cases: Sequence[RoutingCase]) -> list[RouteDecision]:
        """One decision per case, in order, by the fast model through `route_memories`.

        Cases are numbered from 1; neighbours show only their numbers. A case the model
        skipped, answered more than once or answered with an unknown event is NONE. The
        neighbour id is passed through as a string: `resolve` refuses numbers not offered.
        """
        if not cases:
            return []
        answer = self._structured_call(
            route_prompt(),
            _routing_request(cases),
            ROUTE_MEMORIES_TOOL,
            ROUTE_MAX_TOKENS,
            "routing",
        )
        items = answer.get("decisions")
        if not isinstance(items, list):
            raise _unavailable("the routing came back without a list of decisions")
        answers: dict[int, list[RouteDecision | None]] = {}
        stray = 0
        for item in items:
            number = _integer(item.get("candidate")) if isinstance(item, dict) else None
            if number is None or not 1 <= number <= len(cases):
                stray += 1
                continue
            answers.setdefault(number, []).append(_decision(item))
        decisions: list[RouteDecision] = []
        defaulted = 0
        for number in range(1, len(cases) + 1):
            given = answers.get(number, [])
            decision = given[0] if len(given) == 1 else None
            if decision is None:  # skipped, answered twice, or not a decision
                defaulted += 1
                decision = RouteDecision(Action.NONE)
            decisions.append(decision)
        log.info(
            "claude routing: cases=%d returned=%d defaulted_to_none=%d stray=%d",
            len(cases),
            len(items),
            defaulted,
            stray,
        )
        return decisions

    def _structured_call(
        self, system: str, request: str, tool: ToolParam, max_tokens: int, what: str
    ) -> dict[str, object]:
        """One non-streaming call to the fast model whose answer is the input of `tool`."""
        tool_choice, thinking = structured_call_for(self._fast_model, tool["name"])
        try:
            message = self._client.messages.create(
                model=self._fast_model,
                max_tokens=max_tokens,
                system=[_text_block(system, cache=True)],
                messages=[{"role": "user", "content": request}],
                tools=[tool],
                tool_choice=tool_choice,
                thinking=thinking if thinking is not None else anthropic.omit,
            )
        except _SDK_FAILURES as error:
            raise _unavailable(_failure_kind(error)) from None
        log.info(
            "claude %s call: model=%s stop=%s input=%d output=%d cache_read=%d",
            what,
            self._fast_model,
            message.stop_reason,
            message.usage.input_tokens,
            message.usage.output_tokens,
            message.usage.cache_read_input_tokens or 0,
        )
        if message.stop_reason == "refusal":
            raise ModelRefused(f"the {what} was refused")
        if message.stop_reason in ("max_tokens", "model_context_window_exceeded"):
            raise _unavailable(f"the {what} was cut off ({message.stop_reason})")
        calls = [
            block
            for block in message.content
            if block.type == "tool_use" and block.name == tool["name"]
        ]
        if len(calls) != 1:
            raise _unavailable(f"the {what} made {len(calls)} {tool['name']} calls, not one")
        return calls[0].input


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


def _indented(text: str) -> str:
    """Continuation lines indented, so only the renderer starts a line with "[n]", and
    neutralised, so quoted text cannot close the section it sits in."""
    return "\n    ".join(neutralise(text).strip().splitlines())


def _extraction_request(request: ExtractionInput) -> str:
    known = "\n".join(f"- {_indented(text)}" for text in request.known) or "(none)"
    transcript = "\n".join(
        f"[{number}] {line.role}: {_indented(line.content)}"
        for number, line in enumerate(request.transcript, start=1)
    )
    return (
        f"<today>{request.today.isoformat()}</today>\n\n"
        f"<profile>\n{neutralise(request.profile.strip()) or '(none)'}\n</profile>\n\n"
        f"<known>\n{known}\n</known>\n\n"
        f"<transcript>\n{transcript}\n</transcript>"
    )


def _routing_request(cases: Sequence[RoutingCase]) -> str:
    lines = []
    for number, case in enumerate(cases, start=1):
        candidate = case.candidate
        entry: dict[str, object] = {
            "candidate": number,
            "text": neutralise(candidate.text),
            "stated_by": candidate.stated_by.value,
        }
        if candidate.valid_from is not None:
            entry["valid_from"] = candidate.valid_from.date().isoformat()
        entry["neighbours"] = [
            {**view, "text": neutralise(view["text"])}
            for view in (neighbour.view() for neighbour in case.neighbours)
        ]
        lines.append(json.dumps(entry, ensure_ascii=False))
    return "<candidates>\n" + "\n".join(lines) + "\n</candidates>"


def _integer(value: object) -> int | None:
    """A JSON integer, or one written as plain ASCII digits; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.strip().isdigit():
        return int(value)
    return None


def _one_of(field: str, value: object, offered: Sequence[str]) -> str:
    if isinstance(value, str) and value in offered:
        return value
    raise InvalidField(field, "must be one of the values offered")


def _optional_text(field: str, value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidField(field, "must be a string")
    return value.strip()


def _optional_date(field: str, value: object) -> datetime | None:
    text = _optional_text(field, value)
    return None if text is None else parse_instant(field, text)


def _candidate(item: object, line_ids: Sequence[str]) -> Candidate:
    """One `record_memories` item as a Candidate; InvalidField if anything is wrong."""
    if not isinstance(item, dict):
        raise InvalidField("item", "must be an object")
    numbers = item.get("evidence")
    if not isinstance(numbers, list):
        raise InvalidField("evidence", "must be a list of line numbers")
    evidence: list[str] = []
    for value in numbers:
        number = _integer(value)
        if number is None or not 1 <= number <= len(line_ids):
            raise InvalidField("evidence", "names a line that was not offered")
        if line_ids[number - 1] not in evidence:
            evidence.append(line_ids[number - 1])
    text = item.get("text")
    if not isinstance(text, str):
        raise InvalidField("text", "must be a string")
    importance = _integer(item.get("importance"))
    if importance is None:
        raise InvalidField("importance", "must be an integer")
    uses = item.get("uses")
    if uses is None:
        uses = []
    if not isinstance(uses, list) or not all(isinstance(use, str) for use in uses):
        raise InvalidField("uses", "must be a list of strings")
    valid_from = _optional_date("valid_from", item.get("valid_from"))
    valid_until = _optional_date("valid_until", item.get("valid_until"))
    if valid_from is not None and valid_until is not None and valid_until <= valid_from:
        raise InvalidField("valid_until", "must be after valid_from")
    return Candidate(
        text=text.strip(),
        category=_one_of("category", item.get("category"), EXTRACTED_CATEGORIES),
        kind=Kind(_one_of("kind", item.get("kind"), EXTRACTED_KINDS)),
        importance=importance,
        stated_by=StatedBy(_one_of("stated_by", item.get("stated_by"), tuple(StatedBy))),
        evidence=tuple(evidence),
        key=_optional_text("key", item.get("key")),
        valid_from=valid_from,
        valid_until=valid_until,
        uses=tuple(uses),
    )


def _decision(item: dict[str, object]) -> RouteDecision | None:
    """One `route_memories` decision, or None if it is not one."""
    event = item.get("event")
    if not isinstance(event, str) or event not in tuple(Action):
        return None
    action = Action(event)
    if action in (Action.ADD, Action.NONE):
        return RouteDecision(action)
    neighbour = item.get("id")
    if neighbour is None or isinstance(neighbour, str):
        return RouteDecision(action, neighbour)
    if isinstance(neighbour, int) and not isinstance(neighbour, bool):
        return RouteDecision(action, str(neighbour))
    return None


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
