"""The purge's ASL, executed by moto's Step Functions engine over our handlers.

The state machine is the shipped `statemachines/purge.asl.json` with the template's
DefinitionSubstitutions (see conftest). Deletes go through the real memories service,
configured as on AWS: it starts the purge on Step Functions. Failures are injected
behind the real handlers, in the services they call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.errors import ConcurrentChange, ModelUnavailable
from chatmemory.domain.memory import Memory
from chatmemory.domain.purge import PurgeRequest
from chatmemory.ports.memories import MemoryQuery
from chatmemory.services.folding import Rewrite
from chatmemory.services.memories import NewMemory
from chatmemory.services.purge import PURGE_GRACE
from tests.pipeline.conftest import REGION, USER, Pipeline, say

FULL_PATH = [
    "Plan",
    "AnythingToPurge",
    "RemoveVectors",
    "DeleteRows",
    "RebuildProfiles",
    "RebuildProfile",
    "RewriteSummaries",
    "RewriteSummary",
    "MarkPurged",
    "Purged",
]
# What the shipped Retry on ModelUnavailable allows: 4 retries, waiting at most 10 s, 30 s,
# 90 s and 270 s (IntervalSeconds 10, BackoffRate 3, full jitter, capped at 300 s).
MODEL_RETRIES = 4
MODEL_WAIT_CEILINGS = (10.0, 30.0, 90.0, 270.0)
SMALL_TALK = [
    f"Tell me about {topic} please, I have been wondering lately."
    for topic in (
        "the moon landing",
        "volcanoes",
        "tea",
        "bridges",
        "octopuses",
        "printing",
        "jazz",
        "deserts",
        "computers",
        "tides",
        "castles",
        "honeybees",
    )
]


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock, purge_pipeline: Pipeline) -> Iterator[Container]:
    settings = Settings(
        state_dir=tmp_path,
        embedder="hashing",
        region=REGION,
        purge="stepfunctions",
        purge_pipeline_arn=purge_pipeline.arn,
    )
    built = Container(settings, clock)
    use_container(built)
    yield built
    use_container(None)


def folded_conversation(container: Container, fact: str) -> str:
    """A conversation that saved `fact` on its first turn and folded that turn since."""
    conversation_id = say(container, f"Please remember that {fact}.")
    for line in SMALL_TALK:
        say(container, line, conversation_id)
        container.jobs.run_pending()  # type: ignore[attr-defined]  # the local fold queue
    return conversation_id


def memory_with(container: Container, fragment: str) -> Memory:
    (memory,) = [m for m in container.stores.memories.iter_memories(USER) if fragment in m.text]
    return memory


def summary(container: Container, conversation_id: str) -> str:
    conversation = container.stores.conversations.get_conversation(USER, conversation_id)
    assert conversation is not None
    return conversation.summary


def only_execution(pipeline: Pipeline) -> Any:
    (started,) = pipeline.executions()
    return pipeline.wait(started["executionArn"])


def test_a_delete_starts_a_purge_that_removes_every_copy(
    container: Container, purge_pipeline: Pipeline
) -> None:
    # Given a saved fact that a summary folded in and a profile was built from
    conversation_id = folded_conversation(container, "my tortoise is called Quizzleberry")
    memory = memory_with(container, "Quizzleberry")
    container.pipeline.rebuild_profile(USER, "assistant")
    profile = container.stores.user_state.get_profile(USER, "assistant")
    assert profile is not None and "Quizzleberry" in profile.text
    assert "Quizzleberry" in summary(container, conversation_id)

    # When the user deletes it (the memories function, configured as on AWS)
    container.memories.delete(USER, memory.memory_id)

    # Then one purge execution ran every step, a profile and a summary included
    execution = only_execution(purge_pipeline)
    assert execution.status == "SUCCEEDED"
    assert execution.states == FULL_PATH
    output = execution.output
    assert output["plan"] == {
        "tombstones": 1,
        "personas": ["assistant"],
        "conversations": [conversation_id],
    }
    assert output["rows"]["rows"] == 1
    assert output["summaries"] == [{"rewritten": True, "turns_left_out": 1}]
    assert output["purged"]["purged"] == 1
    # And no copy is left: row, profile, summary; the tombstone is marked purged
    assert list(container.stores.memories.iter_memories(USER, MemoryQuery(status=None))) == []
    rebuilt = container.stores.user_state.get_profile(USER, "assistant")
    assert rebuilt is None or "Quizzleberry" not in rebuilt.text
    assert "Quizzleberry" not in summary(container, conversation_id)
    tombstone = container.stores.tombstones.get_tombstone(USER, memory.memory_id)
    assert tombstone is not None and tombstone.purged_at is not None


def test_the_purges_payloads_carry_ids_and_times_never_what_was_said(
    container: Container, purge_pipeline: Pipeline
) -> None:
    # Given a purge over a fact with distinctive words
    conversation_id = folded_conversation(container, "my tortoise is called Quizzleberry")
    container.pipeline.rebuild_profile(USER, "assistant")
    container.memories.delete(USER, memory_with(container, "Quizzleberry").memory_id)

    # When it has run
    execution = only_execution(purge_pipeline)

    # Then every task payload and the output are small and hold no text of the user's
    payloads = [json.dumps(call.payload) for call in purge_pipeline.lambdas.invocations]
    assert payloads
    for text in [*payloads, json.dumps(execution.output)]:
        assert len(text.encode()) < 2048
        assert "quizzleberry" not in text.lower() and "tortoise" not in text.lower()
    assert conversation_id in json.dumps(execution.output)


def test_forget_everything_is_one_purge_execution(
    container: Container, purge_pipeline: Pipeline
) -> None:
    # Given many memories
    for n in range(40):
        container.memories.create(USER, NewMemory(text=f"Keeps a jar of marbles number {n}."))

    # When the user forgets everything
    container.memories.forget_everything(USER)

    # Then one execution purges all of them, naming none (the input stays small)
    execution = only_execution(purge_pipeline)
    assert execution.status == "SUCCEEDED"
    assert execution.output["memory_ids"] == []
    assert execution.output["purged"]["purged"] == 40
    assert container.stores.tombstones.list_tombstones(USER, unpurged_only=True) == []


def test_a_repeated_start_runs_nothing_twice(
    container: Container, purge_pipeline: Pipeline
) -> None:
    # Given a purged delete
    memory = container.memories.create(USER, NewMemory(text="Owns a kayak named Splashwick."))
    tombstone = container.memories.delete(USER, memory.memory.memory_id)
    only_execution(purge_pipeline)
    request = PurgeRequest(
        user_id=USER, as_of=tombstone.deleted_at, memory_ids=(memory.memory.memory_id,)
    )

    # When the same purge is started again (Standard workflows keep names for 90 days)
    again = container.purge_starter.start_purge(request)

    # Then no second execution starts
    assert again is False
    assert len(purge_pipeline.executions()) == 1
    # And a run for the same deletions under another name finds nothing left to do
    rerun = purge_pipeline.run(request.to_payload())
    assert rerun.states == ["Plan", "AnythingToPurge", "NothingToPurge"]


def test_a_summary_rewrite_racing_a_fold_is_retried(
    container: Container, purge_pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a fold that wins the race against the summary rewrite once
    conversation_id = folded_conversation(container, "my kite is called Zumbrella")
    folder = container.folder
    rewrite = folder.rewrite_without_deleted
    calls = {"n": 0}

    def racing(user_id: str, conversation: str) -> Rewrite:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConcurrentChange("the summary moved")
        return rewrite(user_id, conversation)

    monkeypatch.setattr(folder, "rewrite_without_deleted", racing)

    # When the fact is deleted
    container.memories.delete(USER, memory_with(container, "Zumbrella").memory_id)

    # Then the rewrite was tried again and the purge finished
    execution = only_execution(purge_pipeline)
    assert execution.status == "SUCCEEDED"
    summaries = purge_pipeline.lambdas.calls_to("PurgeSummaryFunction")
    assert [call.error_type for call in summaries] == ["ConcurrentChange", None]
    assert "Zumbrella" not in summary(container, conversation_id)


def test_a_purge_that_keeps_failing_is_visible_and_the_sweep_finishes_it(
    container: Container,
    purge_pipeline: Pipeline,
    monkeypatch: pytest.MonkeyPatch,
    clock: ManualClock,
) -> None:
    # Given the model stays down while the summary is rewritten
    conversation_id = folded_conversation(container, "my boat is named Plinkaroo")
    memory = memory_with(container, "Plinkaroo")

    def down(*_: Any) -> Rewrite:
        raise ModelUnavailable("overloaded")

    working = container.folder.rewrite_without_deleted
    monkeypatch.setattr(container.folder, "rewrite_without_deleted", down)

    # When the fact is deleted
    container.memories.delete(USER, memory.memory_id)

    # Then the rewrite is retried as the policy allows, waits recorded, not slept
    failed = only_execution(purge_pipeline)
    summaries = purge_pipeline.lambdas.calls_to("PurgeSummaryFunction")
    assert [c.error_type for c in summaries] == ["ModelUnavailable"] * (1 + MODEL_RETRIES)
    assert len(purge_pipeline.waits.seconds) == MODEL_RETRIES
    for waited, ceiling in zip(purge_pipeline.waits.seconds, MODEL_WAIT_CEILINGS, strict=True):
        assert 0 <= waited <= ceiling
    # And the execution fails at that step, with its error, for the console and the alarm
    assert failed.status == "FAILED"
    assert failed.error == "ModelUnavailable"
    assert "MarkPurged" not in failed.states
    # And the tombstone says why and stays unpurged: the read path keeps filtering
    tombstone = container.stores.tombstones.get_tombstone(USER, memory.memory_id)
    assert tombstone is not None
    assert (tombstone.purge_error, tombstone.purged_at) == ("ModelUnavailable", None)
    assert container.stores.memories.get_memory(USER, memory.memory_id) is None

    # When the model is back and the daily sweep runs
    monkeypatch.setattr(container.folder, "rewrite_without_deleted", working)
    clock.advance(PURGE_GRACE + timedelta(hours=1))
    assert container.purge_sweep.sweep() == 1

    # Then a fresh execution finishes the purge
    finished = [
        purge_pipeline.wait(started["executionArn"])
        for started in purge_pipeline.executions()
        if started["executionArn"] != failed.arn
    ]
    assert [execution.status for execution in finished] == ["SUCCEEDED"]
    tombstone = container.stores.tombstones.get_tombstone(USER, memory.memory_id)
    assert tombstone is not None and tombstone.purged_at is not None
    assert tombstone.purge_error is None
    assert "Plinkaroo" not in summary(container, conversation_id)
