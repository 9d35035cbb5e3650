"""A deep extraction through the real SDK: the same call as a normal one, on the deep model,
with twice the output budget, room for twice the memories and a longer timeout."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from chatmemory.adapters.claude import DEFAULT_DEEP_MODEL, DEFAULT_FAST_MODEL
from chatmemory.adapters.claude.clients import DEEP_TIMEOUT_SECONDS
from chatmemory.adapters.claude.parsing import candidates
from chatmemory.domain.extraction import DEEP_MAX_CANDIDATES, MAX_CANDIDATES
from tests.adapters.test_claude_model import RECORDINGS, FakeClaude, claude, slice_to_extract

EXTRACT_MAX_TOKENS = 8192


def test_a_deep_extraction_asks_the_deep_model_with_twice_the_budget() -> None:
    # Given the deep tier (it thinks, so it cannot be forced to call the tool)
    fake = FakeClaude(FakeClaude.json("extract_after_thinking.json"))
    model = claude(fake, deep_model=DEFAULT_DEEP_MODEL)

    # When it extracts in deep mode
    result = model.extract(dataclasses.replace(slice_to_extract(), deep=True))

    # Then one request went to the deep model with the doubled budget, its thinking left on
    [body] = fake.bodies()
    assert body["model"] == DEFAULT_DEEP_MODEL == "claude-opus-5-5"
    assert body["max_tokens"] == 2 * EXTRACT_MAX_TOKENS
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert "thinking" not in body
    # And the tool and the rules allow twice the memories
    [tool] = body["tools"]
    assert tool["name"] == "record_memories"
    assert tool["input_schema"]["properties"]["memories"]["maxItems"] == DEEP_MAX_CANDIDATES == 24
    [system] = body["system"]
    assert f"at most {DEEP_MAX_CANDIDATES} items" in system["text"]
    # And the request waits longer than a fast call's 30 seconds
    timeout = fake.requests[0].extensions["timeout"]
    assert timeout["read"] == DEEP_TIMEOUT_SECONDS
    # And the answer is read as a normal one is
    assert [c.text for c in result.candidates] == ["Moved to Bengaluru in November 2026."]


def test_a_normal_extraction_is_unchanged_by_deep_mode() -> None:
    fake = FakeClaude(FakeClaude.json("extract_memories.json"))

    claude(fake, deep_model=DEFAULT_DEEP_MODEL).extract(slice_to_extract())

    [body] = fake.bodies()
    assert body["model"] == DEFAULT_FAST_MODEL
    assert body["max_tokens"] == EXTRACT_MAX_TOKENS
    [tool] = body["tools"]
    assert tool["input_schema"]["properties"]["memories"]["maxItems"] == MAX_CANDIDATES
    assert f"at most {MAX_CANDIDATES} items" in body["system"][0]["text"]
    # the client's own timeout, not the deep one
    assert fake.requests[0].extensions["timeout"]["read"] != DEEP_TIMEOUT_SECONDS


def test_without_a_deep_model_deep_reads_go_to_the_chat_model() -> None:
    fake = FakeClaude(FakeClaude.json("extract_after_thinking.json"))

    claude(fake).extract(dataclasses.replace(slice_to_extract(), deep=True))

    [body] = fake.bodies()
    assert body["model"] == "claude-sonnet-5-5"


def test_a_deep_answer_keeps_up_to_its_own_cap() -> None:
    # Given an answer of thirty good items about line 1
    answer = json.loads((RECORDINGS / "extract_memories.json").read_text("utf-8"))
    item: dict[str, Any] = next(
        block["input"]["memories"][0] for block in answer["content"] if block["type"] == "tool_use"
    )
    items = [{**item, "text": f"Likes thing number {n}.", "evidence": [1]} for n in range(30)]

    # Then a normal read keeps twelve, a deep one twenty-four, the rest dropped over the cap
    normal = candidates(items, ["msg_1"])
    deep = candidates(items, ["msg_1"], cap=DEEP_MAX_CANDIDATES)
    assert len(normal.kept) == MAX_CANDIDATES
    assert len(deep.kept) == DEEP_MAX_CANDIDATES
    assert deep.dropped["over_cap"] == 30 - DEEP_MAX_CANDIDATES
