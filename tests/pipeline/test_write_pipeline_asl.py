"""The write pipeline's ASL, executed by moto's Step Functions engine over our handlers.

The state machine is the shipped `statemachines/write_pipeline.asl.json` with the
template's DefinitionSubstitutions (see conftest); nothing in it is altered for a test.
Failures are injected behind the real handlers, in the pipeline service they call, so
the error a task reports is the one the Lambda runtime would report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from chatmemory.config import Container
from chatmemory.domain.errors import ModelUnavailable
from chatmemory.ports.memories import MemoryQuery
from tests.pipeline.conftest import USER, Pipeline, say, slice_input

FULL_PATH = ["Extract", "AnyCandidates", "Route", "ProfileAffected", "RebuildProfile", "Notify"]
STEP_FUNCTIONS = {
    "ExtractFunction",
    "RouteFunction",
    "RebuildProfileFunction",
    "NotifyFunction",
    "RecordFailureFunction",
}
# What the shipped Retry on ModelUnavailable allows: 2 retries, 5 s then 10 s at most
# (IntervalSeconds 5, BackoffRate 2, full jitter).
MODEL_RETRIES = 2
MODEL_WAIT_CEILINGS = (5.0, 10.0)


def active_texts(container: Container) -> list[str]:
    return sorted(m.text for m in container.stores.memories.iter_memories(USER, MemoryQuery()))


def cursor(container: Container, conversation_id: str) -> int:
    conversation = container.stores.conversations.get_conversation(USER, conversation_id)
    assert conversation is not None
    return conversation.extracted_upto_seq


def failing(times: int, error: Exception, then: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in for a pipeline step that raises `error` `times` times, then calls `then`."""
    calls = {"count": 0}

    def step(*args: Any) -> Any:
        calls["count"] += 1
        if calls["count"] <= times:
            raise error
        return then(*args)

    return step


def test_a_slice_with_news_runs_every_step_and_learns_from_it(
    pipeline: Pipeline, container: Container
) -> None:
    # Given a conversation in which the user said something worth remembering
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    given = slice_input(container, conversation_id)

    # When the write pipeline runs for its slice
    execution = pipeline.run(given)

    # Then it takes the whole path, the profile rebuild included
    assert execution.status == "SUCCEEDED"
    assert execution.states == [*FULL_PATH, "Done"]
    # And its output is the input plus what each step reported: ids and counts
    output = execution.output
    assert output is not None
    assert {key: output[key] for key in given} == given
    assert output["extract"]["candidates"] >= 2
    assert output["extract"]["run_id"].startswith("run_")
    assert output["route"] == {
        "persona": "assistant",
        "written": output["extract"]["candidates"],
        "profile_affected": True,
    }
    assert output["profile"] == {"rebuilt": True}
    assert output["notify"]["notice_id"].startswith("ntc_")
    # And the store holds what was learned, the profile and the notice
    texts = " ".join(active_texts(container)).lower()
    assert "vegetarian" in texts and "pune" in texts
    profile = container.stores.user_state.get_profile(USER, "assistant")
    assert profile is not None and "vegetarian" in profile.text.lower()
    (notice,) = container.stores.notices.list_notices(USER)
    assert notice.notice_id == output["notify"]["notice_id"]
    # And the conversation's cursor moved past the slice
    assert cursor(container, conversation_id) == given["upto_seq"]


def test_the_tasks_pass_ids_and_counts_never_what_was_said(
    pipeline: Pipeline, container: Container
) -> None:
    # Given a run over a slice with personal details in it
    conversation_id = say(container, "I'm vegetarian and I live in Pune")

    # When the pipeline runs
    execution = pipeline.run(slice_input(container, conversation_id))

    # Then every task payload and the execution's output are small and free of the text
    payloads = [json.dumps(call.payload) for call in pipeline.lambdas.invocations]
    assert {call.function for call in pipeline.lambdas.invocations} == STEP_FUNCTIONS - {
        "RecordFailureFunction"
    }
    for text in [*payloads, json.dumps(execution.output)]:
        assert len(text.encode()) < 1024  # far below Step Functions' 256 KB
        assert "vegetarian" not in text.lower() and "pune" not in text.lower()


def test_a_slice_with_nothing_worth_remembering_ends_after_extract(
    pipeline: Pipeline, container: Container
) -> None:
    # Given a conversation with nothing durable about the user in it
    conversation_id = say(container, "What is the capital of Peru?")
    given = slice_input(container, conversation_id)

    # When the pipeline runs for it
    execution = pipeline.run(given)

    # Then the Choice after Extract ends the run: no routing, no profile, no notice
    assert execution.status == "SUCCEEDED"
    assert execution.states == ["Extract", "AnyCandidates", "Done"]
    assert execution.output is not None
    assert execution.output["extract"]["candidates"] == 0
    assert "route" not in execution.output
    assert [call.function for call in pipeline.lambdas.invocations] == ["ExtractFunction"]
    # And the slice counts as read
    assert cursor(container, conversation_id) == given["upto_seq"]
    assert active_texts(container) == []


def test_a_model_outage_that_passes_is_retried_with_backoff(
    pipeline: Pipeline, container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a model that is unavailable twice while routing, then answers
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    steps = container.pipeline
    outage = ModelUnavailable("overloaded")
    monkeypatch.setattr(steps, "route", failing(MODEL_RETRIES, outage, then=steps.route))

    # When the pipeline runs
    execution = pipeline.run(slice_input(container, conversation_id))

    # Then Route was tried three times and the run went on as if nothing happened
    routes = pipeline.lambdas.calls_to("RouteFunction")
    assert [call.error_type for call in routes] == ["ModelUnavailable"] * 2 + [None]
    assert execution.status == "SUCCEEDED"
    assert execution.states == [*FULL_PATH, "Done"]
    # And the waits between tries followed the shipped backoff (jittered, capped)
    assert len(pipeline.waits.seconds) == MODEL_RETRIES
    for waited, ceiling in zip(pipeline.waits.seconds, MODEL_WAIT_CEILINGS, strict=True):
        assert 0 <= waited <= ceiling


def test_a_step_that_keeps_failing_is_recorded_and_fails_the_run(
    pipeline: Pipeline, container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a model that stays unavailable while routing
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    given = slice_input(container, conversation_id)
    before = cursor(container, conversation_id)
    steps = container.pipeline
    outage = ModelUnavailable("overloaded")
    monkeypatch.setattr(steps, "route", failing(99, outage, then=steps.route))

    # When the pipeline runs
    execution = pipeline.run(given)

    # Then Route is retried as the policy allows, then the Catch records the failure
    assert len(pipeline.lambdas.calls_to("RouteFunction")) == 1 + MODEL_RETRIES
    assert execution.states == ["Extract", "AnyCandidates", "Route", "RecordFailure", "Failed"]
    # And the execution fails with the step's own error name
    assert execution.status == "FAILED"
    assert execution.error == "ModelUnavailable"
    # And RecordFailure got the run id and the error, and kept the error's kind on the run
    (recorded,) = pipeline.lambdas.calls_to("RecordFailureFunction")
    run_id = recorded.payload["extract"]["run_id"]
    assert recorded.payload["error"]["Error"] == "ModelUnavailable"
    run = container.stores.runs.get_extraction_run(USER, run_id)
    assert run is not None and run.failure == "ModelUnavailable"
    # And nothing was written; the cursor stays put, so the sweep offers the slice again
    assert active_texts(container) == []
    assert cursor(container, conversation_id) == before


def test_a_failure_before_any_run_exists_is_recorded_without_a_run_id(
    pipeline: Pipeline, container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an Extract that fails with an error no retry covers (a bug, not an outage)
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    steps = container.pipeline
    monkeypatch.setattr(steps, "extract", failing(99, KeyError("upto_seq"), then=steps.extract))

    # When the pipeline runs
    execution = pipeline.run(slice_input(container, conversation_id))

    # Then it is not retried: straight to RecordFailure, then Failed
    assert len(pipeline.lambdas.calls_to("ExtractFunction")) == 1
    assert pipeline.waits.seconds == []
    assert execution.states == ["Extract", "RecordFailure", "Failed"]
    assert execution.status == "FAILED"
    assert execution.error == "KeyError"
    (recorded,) = pipeline.lambdas.calls_to("RecordFailureFunction")
    assert "extract" not in recorded.payload
    assert recorded.error_type is None


def test_running_the_same_slice_twice_changes_nothing_the_second_time(
    pipeline: Pipeline, container: Container
) -> None:
    # Given a slice the pipeline has already learned from (Express may start a run twice)
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    given = slice_input(container, conversation_id)
    first = pipeline.run(given)
    learned = active_texts(container)

    # When an execution for the same slice runs again
    second = pipeline.run(given)

    # Then it finds the same run, writes no memory twice and raises no second notice
    assert second.status == "SUCCEEDED"
    assert first.output is not None and second.output is not None
    assert second.output["extract"]["run_id"] == first.output["extract"]["run_id"]
    assert second.output["notify"] == first.output["notify"]
    assert active_texts(container) == learned
    assert len(container.stores.notices.list_notices(USER)) == 1
