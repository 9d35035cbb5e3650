"""The chat model: replies with tools, folds summaries, extracts and routes memories, and
writes the uses of memories that came without them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chatmemory.domain.extraction import Candidate, ExtractionInput, ExtractionResult
from chatmemory.domain.prompt import RenderedPrompt, Turn
from chatmemory.domain.routing import Neighbour, RouteDecision


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model; `input_schema` is JSON Schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


#: runs a tool the model called and returns the result text the model reads next; a
#: failure it expects (bad arguments, a secret) comes back as text, not as an exception
ToolRunner = Callable[[ToolCall], str]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ReplyDelta:
    """A piece of the reply, as soon as the model produced it."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyDone:
    """The whole reply (text across every tool round) and what it cost."""

    text: str
    usage: Usage
    stop_reason: str


class Model(ABC):
    """A chat model: streams a reply, calling tools on the way; also folds summaries."""

    #: the model's id ("claude-…") or "offline"
    name: str
    #: True for the offline stand-in, which must never be mistaken for a real model
    offline: bool = False

    @abstractmethod
    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        """Stream the reply to `prompt`; ends with exactly one ReplyDone.

        When the model calls a tool, `run_tool` runs it and the reply continues with the
        result. `stop_reason == "refusal"` means the model declined: the turn is not kept.
        Raises ModelUnavailable if the model cannot answer.
        """

    @abstractmethod
    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        """Fold `turns` into `summary` (empty: summarize from scratch), within max_tokens."""

    @abstractmethod
    def extract(self, request: ExtractionInput) -> ExtractionResult:
        """Candidate memories from a transcript slice, and the report of each known thread
        the persona raised in it: one call (fast tier).

        Evidence must name message ids of the slice; a thread is named by the number it was
        offered under ("T1"), never by id. Items the model got wrong (bad fields, unknown
        evidence, a report on a line that is not the persona's) are dropped, not repaired.
        ModelUnavailable on failure.
        """

    @abstractmethod
    def route(self, cases: Sequence[RoutingCase]) -> list[RouteDecision]:
        """One decision per case, in order: one call for all of them (fast tier)."""

    @abstractmethod
    def write_uses(self, items: Sequence[UsesRequest]) -> list[tuple[str, ...]]:
        """The uses of each memory, in order (domain/uses.py, the rule in
        prompts/memory_uses_rule.txt): one call for all of them (fast tier).

        An item the model could not do (declined, answered badly or not at all) is `()`,
        so the memory keeps the uses it has. ModelUnavailable on failure.
        """


@dataclass(frozen=True, slots=True)
class RoutingCase:
    """A candidate and its numbered neighbours, as the router sees them."""

    candidate: Candidate
    neighbours: tuple[Neighbour, ...]


@dataclass(frozen=True, slots=True)
class UsesRequest:
    """A memory as the uses writer sees it: its words and its category, never an id."""

    text: str
    category: str
