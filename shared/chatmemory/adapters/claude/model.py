"""Claude as the chat `Model`, through the Anthropic SDK (on the Claude API or Bedrock).

`reply` streams one chat turn with `messages.stream`, running the tools the model calls
and continuing the turn with their results; `summarize` folds turns into a conversation's
summary with one `messages.create` on the fast model; `extract` and `route` (the write
path's two calls) are one `messages.create` each on the fast model, whose structured
answer is the input of a tool the model is made to call. In a room (`request.seat` set)
the extraction is written from that persona's seat: its own prompt, request and tool.
The extraction's answer also reports, post hoc, the known threads the persona raised in
the stretch; known threads are offered by number ("T1"), so the answer names numbers and
the service maps them back to ids. A deep extraction (`request.deep`) is the same call on
the deep model, with twice the output budget, room for DEEP_MAX_CANDIDATES and a longer
timeout.
`write_uses` is one more such call: the memories offered by number (never by id), the
answer through `record_uses`.

Choices worth knowing (how requests are shaped: requests.py; failures: failures.py):
- After `max_tool_rounds` rounds of tool calls the last request still carries the tools
  but sets `tool_choice: none`. Dropping the tools instead would change the start of the
  cached prefix (tools come before the system prompt) and so miss the prompt cache, and a
  conversation that holds tool_use / tool_result blocks is meant to keep defining its
  tools. `none` is also one of the two tool choices Sonnet 5.5 accepts (`any` and `tool`
  are refused there).
- The assistant turn sent back after a tool call is the model's message exactly as
  received (`Message.to_param()`), thinking blocks included, as the API requires.
- Structured output (extract, route): no call, a cut-off or refused answer, or a
  malformed top level is ModelUnavailable (the step retries); a bad item inside a good
  answer is dropped, never repaired (parsing.py).
- Uses (`write_uses`) are an improvement, never a step anything waits on: a refused or
  malformed answer gives the memories it covers no uses (they keep their category's);
  only a failure to answer at all (an API error, no call, a cut-off) is ModelUnavailable.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator, Sequence

import anthropic
from anthropic.types import (
    MessageParam,
    TextBlockParam,
    ToolChoiceNoneParam,
    ToolParam,
    ToolResultBlockParam,
)
from anthropic.types.parsed_message import ParsedMessage

from chatmemory.adapters.claude import parsing
from chatmemory.adapters.claude.answer_tools import (
    DEEP_EXTRACT_MAX_TOKENS,
    EXTRACT_MAX_TOKENS,
    RECORD_MEMORIES_DEEP_TOOL,
    RECORD_MEMORIES_TOOL,
    RECORD_ROOM_MEMORIES_TOOL,
    RECORD_USES_TOOL,
    ROUTE_MAX_TOKENS,
    ROUTE_MEMORIES_TOOL,
    USES_MAX_TOKENS,
)
from chatmemory.adapters.claude.clients import (
    ClaudeClient,
    OutOfTime,
    TimeLeft,
    unbounded,
    within_deadline,
)
from chatmemory.adapters.claude.failures import SDK_FAILURES, failure_kind, unavailable
from chatmemory.adapters.claude.prompts import (
    extract_prompt,
    extract_room_prompt,
    fold_prompt,
    route_prompt,
    write_uses_prompt,
)
from chatmemory.adapters.claude.requests import (
    extraction_request,
    message_param,
    room_extraction_request,
    routing_request,
    structured_call_for,
    text_block,
    thinking_for,
    tool_param,
    uses_request,
)
from chatmemory.domain.errors import ModelRefused
from chatmemory.domain.extraction import ExtractionInput, ExtractionResult, RoomSeat
from chatmemory.domain.prompt import RenderedPrompt, Turn, neutralise
from chatmemory.domain.routing import RouteDecision
from chatmemory.ports.model import (
    Model,
    ReplyDelta,
    ReplyDone,
    RoutingCase,
    ToolCall,
    ToolRunner,
    ToolSpec,
    Usage,
    UsesRequest,
)

log = logging.getLogger(__name__)

_NO_MORE_TOOLS: ToolChoiceNoneParam = {"type": "none"}


class ClaudeModel(Model):
    """Claude as the chat `Model`: streamed replies with tool calls, and summary folds."""

    offline = False

    def __init__(
        self,
        *,
        client: ClaudeClient,
        chat_model: str,
        fast_model: str,
        deep_model: str | None = None,
        max_tokens: int = 1024,
        max_tool_rounds: int = 3,
        time_left: TimeLeft = unbounded,
    ) -> None:
        """`deep_model`: what deep extractions run on (None: the chat model, the stronger
        of the two others)."""
        self._client = client
        self._chat_model = chat_model
        self._fast_model = fast_model
        self._deep_model = deep_model or chat_model
        self._max_tokens = max_tokens
        self._max_tool_rounds = max_tool_rounds
        # How long the current request may still take (config wires the request deadline).
        self._time_left = time_left
        self.name = chat_model

    def _bounded_client(self, *, deep: bool = False) -> ClaudeClient:
        """The client for one call, within the request's time left (see `within_deadline`)."""
        try:
            return within_deadline(self._client, self._time_left, deep=deep)
        except OutOfTime as exc:
            raise unavailable(f"timeout (no time left: {exc})") from None

    # ---- the chat turn --------------------------------------------------------------

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        """Stream the reply: a ReplyDelta per piece of text, then one ReplyDone.

        Tool calls are run with `run_tool` between rounds; ReplyDone carries the text of
        every round (rounds joined by a blank line, streamed too) and the summed usage.
        """
        system = [text_block(block.text, block.cache) for block in prompt.system]
        messages = [message_param(message) for message in prompt.messages]
        tool_params = [tool_param(spec) for spec in tools]
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
            with self._bounded_client().messages.stream(
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
                    left = self._time_left()
                    if left is not None and left <= 0:  # chunks still coming, time gone
                        raise unavailable("timeout (the request's time ran out mid-stream)")
                if not stopped:
                    raise unavailable("the stream ended before message_stop")
                return stream.get_final_message()
        except SDK_FAILURES as error:
            raise unavailable(failure_kind(error)) from None

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
            message = self._bounded_client().messages.create(
                model=self._fast_model,
                max_tokens=max_tokens,
                system=fold_prompt(max_tokens),
                messages=[{"role": "user", "content": request}],
                thinking=thinking if thinking is not None else anthropic.omit,
            )
        except SDK_FAILURES as error:
            raise unavailable(failure_kind(error)) from None
        text = "".join(block.text for block in message.content if block.type == "text").strip()
        log.info(
            "claude fold: model=%s turns=%d stop=%s output=%d",
            self._fast_model,
            len(turns),
            message.stop_reason,
            message.usage.output_tokens,
        )
        if message.stop_reason == "refusal":
            raise unavailable("the fold was refused")
        if not text:
            raise unavailable("the fold came back empty")
        return text

    # ---- the write path -------------------------------------------------------------

    def extract(self, request: ExtractionInput) -> ExtractionResult:
        """Candidate memories from the slice, and the report of each known thread the
        assistant raised in it, by the fast model through `record_memories` (in deep mode
        by the deep model, with the larger budget and cap).

        Transcript lines are numbered from 1 in the request; evidence and report line
        numbers map back to their message ids; threads stay numbers. An item that names a
        line not offered, breaks a field rule or leaves the offered values is dropped,
        never repaired.
        """
        if not request.transcript:
            return ExtractionResult()
        if request.seat is not None:
            return self._extract_room(request, request.seat)
        deep = request.deep
        answer = self._structured_call(
            extract_prompt(deep=deep),
            extraction_request(request),
            RECORD_MEMORIES_DEEP_TOOL if deep else RECORD_MEMORIES_TOOL,
            DEEP_EXTRACT_MAX_TOKENS if deep else EXTRACT_MAX_TOKENS,
            "deep extraction" if deep else "extraction",
            deep=deep,
        )
        items = answer.get("memories")
        if not isinstance(items, list):
            raise unavailable("the extraction came back without a list of memories")
        offered = {thread.number: thread.subject for thread in request.threads}
        line_ids = [line.message_id for line in request.transcript]
        extracted = parsing.candidates(items, line_ids, offered, cap=request.max_candidates)
        reported = parsing.thread_reports(answer.get("threads_raised"), request.transcript, offered)
        log.info(
            "claude extraction: lines=%d threads=%d returned=%d kept=%d reports=%d "
            "dropped=%s cleared=%s",
            len(line_ids),
            len(offered),
            len(items),
            len(extracted.kept),
            len(reported.reports),
            dict(sorted((extracted.dropped + reported.dropped).items())),
            dict(sorted(extracted.cleared.items())),
        )
        return ExtractionResult(tuple(extracted.kept), tuple(reported.reports))

    def _extract_room(self, request: ExtractionInput, seat: RoomSeat) -> ExtractionResult:
        """Candidates from the persona's seat through `record_room_memories`: each with its
        subject, read as in the one-to-one call, and the reports of the threads this
        persona (not another one) raised; who may be remembered is the room filter's to
        decide (domain/room_extraction.py)."""
        answer = self._structured_call(
            extract_room_prompt(),
            room_extraction_request(request, seat),
            RECORD_ROOM_MEMORIES_TOOL,
            EXTRACT_MAX_TOKENS,
            "room extraction",
        )
        items = answer.get("memories")
        if not isinstance(items, list):
            raise unavailable("the room extraction came back without a list of memories")
        offered = {thread.number: thread.subject for thread in request.threads}
        line_ids = [line.message_id for line in request.transcript]
        extracted = parsing.room_candidates(items, line_ids, offered)
        reported = parsing.thread_reports(
            answer.get("threads_raised"),
            request.transcript,
            offered,
            persona_speaker=f"p:{seat.persona}",
        )
        log.info(
            "claude room extraction: group=%s present=%d lines=%d threads=%d returned=%d "
            "kept=%d reports=%d dropped=%s cleared=%s",
            seat.group,
            len(seat.present),
            len(line_ids),
            len(offered),
            len(items),
            len(extracted.kept),
            len(reported.reports),
            dict(sorted((extracted.dropped + reported.dropped).items())),
            dict(sorted(extracted.cleared.items())),
        )
        return ExtractionResult(tuple(extracted.kept), tuple(reported.reports))

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
            routing_request(cases),
            ROUTE_MEMORIES_TOOL,
            ROUTE_MAX_TOKENS,
            "routing",
        )
        items = answer.get("decisions")
        if not isinstance(items, list):
            raise unavailable("the routing came back without a list of decisions")
        routed = parsing.decisions(items, len(cases))
        log.info(
            "claude routing: cases=%d returned=%d defaulted_to_none=%d stray=%d",
            len(cases),
            len(items),
            routed.defaulted,
            routed.stray,
        )
        return routed.decisions

    def write_uses(self, items: Sequence[UsesRequest]) -> list[tuple[str, ...]]:
        """The uses of each memory, in order, by the fast model through `record_uses`.

        Memories are numbered from 1 and shown by category and words only. A memory the
        model left out, answered twice or answered with anything but a list of enough
        strings gets `()`; so does every memory of a refused or malformed answer.
        """
        if not items:
            return []
        try:
            answer = self._structured_call(
                write_uses_prompt(), uses_request(items), RECORD_USES_TOOL, USES_MAX_TOKENS, "uses"
            )
        except ModelRefused:  # asking again would be refused again: they keep what they have
            log.info("claude uses: memories=%d refused", len(items))
            return [() for _ in items]
        entries = answer.get("memories")
        if not isinstance(entries, list):
            log.info("claude uses: memories=%d malformed answer", len(items))
            return [() for _ in items]
        read = parsing.uses(entries, len(items))
        log.info(
            "claude uses: memories=%d returned=%d written=%d stray=%d dropped=%s",
            len(items),
            len(entries),
            sum(1 for uses in read.uses if uses),
            read.stray,
            dict(sorted(read.dropped.items())),
        )
        return read.uses

    def _structured_call(
        self,
        system: str,
        request: str,
        tool: ToolParam,
        max_tokens: int,
        what: str,
        *,
        deep: bool = False,
    ) -> dict[str, object]:
        """One non-streaming call whose answer is the input of `tool`: to the fast model,
        or with `deep` to the deep model, given the longer deep timeout."""
        model = self._deep_model if deep else self._fast_model
        tool_choice, thinking = structured_call_for(model, tool["name"])
        try:
            message = self._bounded_client(deep=deep).messages.create(
                model=model,
                max_tokens=max_tokens,
                system=[text_block(system, cache=True)],
                messages=[{"role": "user", "content": request}],
                tools=[tool],
                tool_choice=tool_choice,
                thinking=thinking if thinking is not None else anthropic.omit,
            )
        except SDK_FAILURES as error:
            raise unavailable(failure_kind(error)) from None
        log.info(
            "claude %s call: model=%s stop=%s input=%d output=%d cache_read=%d",
            what,
            model,
            message.stop_reason,
            message.usage.input_tokens,
            message.usage.output_tokens,
            message.usage.cache_read_input_tokens or 0,
        )
        if message.stop_reason == "refusal":
            raise ModelRefused(f"the {what} was refused")
        if message.stop_reason in ("max_tokens", "model_context_window_exceeded"):
            raise unavailable(f"the {what} was cut off ({message.stop_reason})")
        calls = [
            block
            for block in message.content
            if block.type == "tool_use" and block.name == tool["name"]
        ]
        if len(calls) != 1:
            raise unavailable(f"the {what} made {len(calls)} {tool['name']} calls, not one")
        return calls[0].input


def _add_usage(total: Usage, message: ParsedMessage[None]) -> Usage:
    """`total` with the usage of `message` added, cache reads and writes included."""
    used = message.usage
    return Usage(
        input_tokens=total.input_tokens + used.input_tokens,
        output_tokens=total.output_tokens + used.output_tokens,
        cache_read_tokens=total.cache_read_tokens + (used.cache_read_input_tokens or 0),
        cache_write_tokens=total.cache_write_tokens + (used.cache_creation_input_tokens or 0),
    )
