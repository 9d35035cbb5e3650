"""A model call gets only the request's time left, so a slow model ends in the contract's shape.

Driven through anthropic's real client over an httpx2 MockTransport; the request's clock is
the deadline module's, moved by hand.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from chatmemory.adapters.claude import ClaudeModel
from chatmemory.adapters.claude.clients import DEFAULT_CHAT_MODEL, DEFAULT_FAST_MODEL
from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Settings, use_container
from chatmemory.deadline import ANSWER_MARGIN_SECONDS, request_deadline, time_left
from chatmemory.domain.errors import ModelUnavailable
from chatmemory.domain.prompt import ContextBlocks, Turn, render
from chatmemory.local.server import LocalLambdaContext
from tests.adapters.test_claude_model import FakeClaude, Runner, collect
from tests.support.functions import Wired, invoke, load_handler, sample_event


class Clock:
    """time.monotonic for the deadline module, advanced by the test (or by each stream chunk)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def monotonic(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr("chatmemory.deadline.monotonic", fake)
    return fake


def claude(fake: FakeClaude, *, max_retries: int = 2) -> ClaudeModel:
    client = anthropic.Anthropic(
        api_key="test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(fake.handler)),
        max_retries=max_retries,
        timeout=httpx2.Timeout(30.0, connect=3.0),
    )
    return ClaudeModel(
        client=client,
        chat_model=DEFAULT_CHAT_MODEL,
        fast_model=DEFAULT_FAST_MODEL,
        time_left=time_left,  # the request deadline, as config wires it
    )


def summarize(model: ClaudeModel) -> str:
    return model.summarize("", [Turn("user", "I moved to Pune.")], max_tokens=200)


def read_timeout(request: httpx2.Request) -> float:
    timeouts: dict[str, Any] = request.extensions["timeout"]
    return float(timeouts["read"])


def test_a_call_within_a_request_waits_no_longer_than_the_time_left(monotonic: Clock) -> None:
    # Given a request with 12 s left and a client that would wait 30 s
    fake = FakeClaude(FakeClaude.json("fold_summary.json"))

    # When the model is called
    with request_deadline(12.0):
        summarize(claude(fake))

    # Then the call was given the time left (less the margin kept to answer), not 30 s
    assert read_timeout(fake.requests[0]) == pytest.approx(12.0 - ANSWER_MARGIN_SECONDS)


def test_outside_any_request_a_call_keeps_the_clients_own_timeout(monotonic: Clock) -> None:
    fake = FakeClaude(FakeClaude.json("fold_summary.json"))

    summarize(claude(fake))

    assert read_timeout(fake.requests[0]) == 30.0


def test_no_retry_is_made_that_could_not_finish_in_time(monotonic: Clock) -> None:
    # Given an overloaded model and a request with 20 s left (three 30 s attempts won't fit)
    fake = FakeClaude(
        FakeClaude.json("error_overloaded_529.json", 529),
        FakeClaude.json("fold_summary.json"),
    )

    # When the model is called
    with request_deadline(20.0), pytest.raises(ModelUnavailable, match="overloaded"):
        summarize(claude(fake))

    # Then it failed at once, in one attempt, instead of retrying past the deadline
    assert len(fake.requests) == 1


def test_with_too_little_time_left_the_model_is_not_called_at_all(monotonic: Clock) -> None:
    fake = FakeClaude(FakeClaude.json("fold_summary.json"))

    with request_deadline(2.0), pytest.raises(ModelUnavailable, match="timeout"):
        summarize(claude(fake))

    assert fake.requests == []


def test_a_stream_still_going_when_the_time_runs_out_ends_as_unavailable(monotonic: Clock) -> None:
    # Given a reply whose every chunk arrives two seconds after the last
    fake = FakeClaude(FakeClaude.stream("reply_plain.sse"))
    blocks = ContextBlocks(system="You are helpful.")
    events = claude(fake, max_retries=0).reply(render(blocks, "Dinner ideas?"), [], Runner())

    def slow() -> Iterator[object]:
        for event in events:
            monotonic.now += 2.0
            yield event

    # When the request has only 6 s
    with request_deadline(6.0), pytest.raises(ModelUnavailable, match="timeout"):
        collect(slow())  # type: ignore[arg-type]


def test_a_chat_turn_out_of_time_is_a_502_in_the_contracts_shape(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given the chat function, backed by Claude, invoked with 2 s of its time left
    fake = FakeClaude(FakeClaude.stream("reply_plain.sse"))
    model = claude(fake)
    container = Wired(Settings(state_dir=tmp_path, embedder="hashing"), clock, model)
    use_container(container)
    context = LocalLambdaContext(function_name="test", deadline=time.monotonic() + 2.0)
    try:
        reply = invoke(
            load_handler("chat"),
            sample_event("chat", "chat"),
            body={"message": "Dinner ideas?"},
            lambda_context=context,
        )
    finally:
        use_container(None)

    # Then the caller hears model_unavailable, the model was never called, nothing is kept
    assert (reply.status, reply.error_code) == (502, "model_unavailable")
    assert fake.requests == []
    assert container.stores.conversations.list_conversations("user-123") == []
