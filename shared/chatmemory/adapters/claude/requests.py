"""How each request to Claude is shaped: the thinking setting and the tool choice a model
gets, the SDK params for prompt blocks, messages and tools, and the text of the
extraction (one-to-one, and from a persona's seat in a room), routing and uses requests.

Choices worth knowing:
- The request mirrors the rendered prompt exactly: one text block per system block and
  per message, `cache_control: ephemeral` wherever the prompt set a cache breakpoint.
  Tools go first in the cache prefix, so the tool list never changes within a turn.
- Thinking: Sonnet 5.5 thinks by default and, when it does, returns the text it writes
  between tool calls inside thinking blocks, which a chat would not show; the chat asks it
  for `between_tools` (no up-front thinking) so that text streams like any other and no
  output budget goes to thinking. Haiku 5.5 (the fold) runs with thinking disabled, so
  `max_tokens` bounds the summary itself. Other models get their own default.
- Structured output (extract, route): the answer is the input of one tool call
  (`record_memories`, `route_memories`). Where the model allows it the call is forced
  (`tool_choice: tool`), and a forced call needs thinking off: the API refuses forced tool
  use while thinking is on. So the fast tier, Haiku 5.5, runs with thinking disabled (it
  accepts that at its default effort) and a forced tool. The models that refuse a forced
  tool outright (Sonnet 5.5, Opus 5.5, Fable 5.1) or cannot turn thinking off (the Opus
  5.5 / Fable / Mythos 5.x lines) get `tool_choice: auto` and their usual thinking, and
  the prompt asks for exactly one call; see `structured_call_for`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from anthropic.types import (
    CacheControlEphemeralParam,
    MessageParam,
    TextBlockParam,
    ThinkingConfigParam,
    ToolChoiceParam,
    ToolParam,
)

from chatmemory.domain.extraction import ExtractionInput, KnownThread, RoomSeat
from chatmemory.domain.prompt import PromptMessage, neutralise, one_line
from chatmemory.ports.model import RoutingCase, ToolSpec, UsesRequest

_CACHE_BREAKPOINT: CacheControlEphemeralParam = {"type": "ephemeral"}

# Families that answer a forced tool choice with a 400: Sonnet 5.5, Opus 5.5 and Fable 5.1
# refuse forced tool use outright; Opus 5.5 and the Fable / Mythos 5.x lines cannot turn
# thinking off, and the API refuses forced tool use while thinking is on. Matched on the
# family so the Claude API and Bedrock ids behave alike.
_NO_FORCED_TOOL = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-fable-5", "claude-mythos-5")


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


def text_block(text: str, cache: bool) -> TextBlockParam:
    """One text block, with a cache breakpoint after it when `cache` is set."""
    block: TextBlockParam = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = _CACHE_BREAKPOINT
    return block


def message_param(message: PromptMessage) -> MessageParam:
    """A rendered prompt message as one text block from its role."""
    content = [text_block(message.content, message.cache)]
    if message.role == "user":
        return {"role": "user", "content": content}
    if message.role == "assistant":
        return {"role": "assistant", "content": content}
    raise ValueError(
        f"a prompt message must be from the user or the assistant, not {message.role!r}"
    )


def tool_param(spec: ToolSpec) -> ToolParam:
    """A tool the chat offers, as the SDK declares it."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}


def _indented(text: str) -> str:
    """Continuation lines indented, so only the renderer starts a line with "[n]", and
    neutralised, so quoted text cannot close the section it sits in."""
    return "\n    ".join(neutralise(text).strip().splitlines())


def threads_section(threads: Sequence[KnownThread], *, whose: bool = False) -> str:
    """The `<threads>` section: one known thread per line, by its number, never its id —
    `T1 (live, last heard 2026-12-01): <current state>`; with `whose` (a room) the story's
    owner follows the number, `T1 u:42 (…)`. A thread's text is kept on one line, so it
    cannot pass for another thread or close the section."""
    lines = []
    for thread in threads:
        owner = f" {one_line(thread.subject)}" if whose and thread.subject.strip() else ""
        lines.append(
            f"{thread.number}{owner} ({one_line(thread.status)}, last heard "
            f"{thread.last_heard.isoformat()}): {one_line(thread.text)}"
        )
    return "<threads>\n" + ("\n".join(lines) or "(none)") + "\n</threads>"


def extraction_request(request: ExtractionInput) -> str:
    """The extraction's user message: today, the profile, the known memories, the threads
    already followed and the transcript, its lines numbered from 1 (the numbers evidence
    and reports name)."""
    known = "\n".join(f"- {_indented(text)}" for text in request.known) or "(none)"
    transcript = "\n".join(
        f"[{number}] {line.role}: {_indented(line.content)}"
        for number, line in enumerate(request.transcript, start=1)
    )
    return (
        f"<today>{request.today.isoformat()}</today>\n\n"
        f"<profile>\n{neutralise(request.profile.strip()) or '(none)'}\n</profile>\n\n"
        f"<known>\n{known}\n</known>\n\n"
        f"{threads_section(request.threads)}\n\n"
        f"<transcript>\n{transcript}\n</transcript>"
    )


def room_extraction_request(request: ExtractionInput, seat: RoomSeat) -> str:
    """A room extraction's user message: whose seat, the kind of room, who is present (by
    `u:` id), today, the known memories, the threads already followed (each with whose
    story it is) and the transcript, each line numbered from 1 (the numbers evidence and
    reports name) with its speaker ("u:<id>" or "p:<persona>")."""
    present = "\n".join(f"u:{neutralise(user)}" for user in seat.present) or "(no one)"
    known = "\n".join(f"- {_indented(text)}" for text in request.known) or "(none)"
    transcript = "\n".join(
        f"[{number}] {neutralise(line.speaker) or line.role}: {_indented(line.content)}"
        for number, line in enumerate(request.transcript, start=1)
    )
    return (
        f"<persona>{seat.persona}</persona>\n"
        f"<room>{'group' if seat.group else 'private'}</room>\n"
        f"<today>{request.today.isoformat()}</today>\n\n"
        f"<present>\n{present}\n</present>\n\n"
        f"<known>\n{known}\n</known>\n\n"
        f"{threads_section(request.threads, whose=True)}\n\n"
        f"<transcript>\n{transcript}\n</transcript>"
    )


def routing_request(cases: Sequence[RoutingCase]) -> str:
    """The routing's user message: one JSON line per case, numbered from 1, each with its
    neighbours as `view()` shows them (numbers, never ids)."""
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


def uses_request(items: Sequence[UsesRequest]) -> str:
    """The uses call's user message: one JSON line per memory, numbered from 1 (the
    numbers the answer names), with its category and its words, never its id."""
    lines = [
        json.dumps(
            {"memory": number, "category": item.category, "text": neutralise(item.text)},
            ensure_ascii=False,
        )
        for number, item in enumerate(items, start=1)
    ]
    return "<memories>\n" + "\n".join(lines) + "\n</memories>"
