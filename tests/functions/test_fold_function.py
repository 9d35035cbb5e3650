"""The fold Lambda, driven by SQS events shaped like events/fold/fold_job.json and
events/fold/uses_job.json: folds, and the uses of memories stored without their own."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.conversation import Conversation
from chatmemory.local.server import LocalLambdaContext
from chatmemory.services.chat import ChatRequest, ChatResult
from chatmemory.services.folding import FOLD_TURNS, WINDOW_TURNS
from chatmemory.services.memories import NewMemory
from tests.support.functions import Wired, load_handler, sample_event
from tests.support.scripted_uses import DEFAULT_USES, ScriptedUses

USER = "user-123"


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    # No model key in the settings: the container picks the offline stand-in.
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("fold")


def a_full_conversation(container: Container, clock: ManualClock) -> str:
    """A conversation whose verbatim window is full: a fold is due (and queued, not run)."""
    conversation_id: str | None = None
    for turn in range(1, WINDOW_TURNS + 1):
        message = f"Turn {turn}: let's keep planning my study schedule for topic {turn}."
        request = ChatRequest(user_id=USER, message=message, conversation_id=conversation_id)
        result = list(container.chat.turn(request))[-1]
        assert isinstance(result, ChatResult)
        conversation_id = result.conversation_id
        clock.advance(timedelta(seconds=30))
    assert conversation_id is not None
    return conversation_id


def fold_body(conversation_id: str, user_id: str = USER) -> str:
    return json.dumps({"type": "fold", "user_id": user_id, "conversation_id": conversation_id})


def sqs_event(*bodies: str) -> dict[str, Any]:
    """An SQS event with one record per body, each shaped like the sample's record."""
    template = sample_event("fold", "fold_job")["Records"][0]
    records = []
    for number, body in enumerate(bodies, start=1):
        record = copy.deepcopy(template)
        record["messageId"] = f"00000000-0000-4000-8000-{number:012d}"
        record["body"] = body
        record["md5OfBody"] = hashlib.md5(body.encode()).hexdigest()  # noqa: S324 - SQS's own checksum
        records.append(record)
    return {"Records": records}


def invoke(handler: Any, event: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = handler(event, LocalLambdaContext(function_name="fold"))
    return result


def failed_ids(result: dict[str, Any]) -> list[str]:
    return [failure["itemIdentifier"] for failure in result["batchItemFailures"]]


def state(container: Container, conversation_id: str) -> Conversation:
    conversation = container.stores.conversations.get_conversation(USER, conversation_id)
    assert conversation is not None
    return conversation


def test_the_offline_model_stands_in_when_no_key_is_set(container: Container) -> None:
    assert isinstance(container.model, OfflineModel)


def test_a_fold_job_folds_and_a_malformed_message_fails_alone(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    # Given a conversation whose window is full, and a batch with its fold job and a message
    # that is no job at all
    conversation_id = a_full_conversation(container, clock)
    before = state(container, conversation_id)
    assert before.summary_upto_seq == 0 and before.fold_count == 0
    event = sqs_event(fold_body(conversation_id), "{not json")

    # When the fold Lambda receives the batch
    result = invoke(handler, event)

    # Then the fold applied: the oldest turns moved into the summary
    after = state(container, conversation_id)
    assert after.summary_upto_seq == FOLD_TURNS * 2  # a user message and a reply per turn
    assert after.fold_count == 1
    assert after.summary
    # And only the malformed message is reported back, to be retried and dead-lettered
    assert failed_ids(result) == [event["Records"][1]["messageId"]]


def test_a_redelivered_fold_job_changes_nothing(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    # Given a fold job that was already processed once
    conversation_id = a_full_conversation(container, clock)
    event = sqs_event(fold_body(conversation_id))
    assert failed_ids(invoke(handler, event)) == []
    folded = state(container, conversation_id)

    # When SQS delivers the same message again (at-least-once delivery)
    result = invoke(handler, event)

    # Then it succeeds and the conversation is exactly as the first delivery left it
    assert failed_ids(result) == []
    again = state(container, conversation_id)
    assert (again.summary, again.summary_upto_seq, again.fold_count) == (
        folded.summary,
        folded.summary_upto_seq,
        folded.fold_count,
    )


def test_a_job_for_a_conversation_that_is_gone_succeeds_without_a_fold(
    handler: Any, container: Container
) -> None:
    # Given the sample event, whose conversation does not exist (expired or never stored)
    event = sample_event("fold", "fold_job")

    # When the fold Lambda receives it
    result = invoke(handler, event)

    # Then there is nothing to fold and nothing to retry
    assert failed_ids(result) == []


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"type": "purge", "user_id": USER, "conversation_id": "conv_x"}),
        json.dumps({"type": "fold", "user_id": USER}),
        json.dumps(["fold", USER, "conv_x"]),
    ],
    ids=["unknown type", "no conversation", "not an object"],
)
def test_a_message_that_is_not_a_fold_job_is_reported_as_failed(
    handler: Any, container: Container, clock: ManualClock, body: str
) -> None:
    # Given a batch with a well-formed job and a message that is not one
    conversation_id = a_full_conversation(container, clock)
    event = sqs_event(fold_body(conversation_id), body)

    # When the fold Lambda receives it
    result = invoke(handler, event)

    # Then only that message fails
    assert failed_ids(result) == [event["Records"][1]["messageId"]]


# ---- uses jobs: the same queue, the same consumer ------------------------------------------

VEGETARIAN = NewMemory(text="Is vegetarian.", category="diet")


@pytest.fixture
def writing(tmp_path: Path, clock: ManualClock) -> Iterator[tuple[Container, ScriptedUses]]:
    """The wiring with a model that writes uses (scripted), as the deployed fold function
    has with its key."""
    model = ScriptedUses()
    settings = Settings(state_dir=tmp_path, embedder="hashing", anthropic_api_key="test-key")
    built = Wired(settings, clock, model)
    use_container(built)
    yield built, model
    use_container(None)


def uses_body(memory_ids: list[str], user_id: str = USER) -> str:
    return json.dumps({"type": "uses", "user_id": user_id, "memory_ids": memory_ids})


def test_a_uses_job_writes_the_memorys_own_uses_beside_a_fold_in_one_batch(
    handler: Any, writing: tuple[Container, ScriptedUses], clock: ManualClock
) -> None:
    # Given a typed memory waiting for its uses, a conversation due a fold, and a batch
    # with both jobs and a uses job naming no memory
    built, model = writing
    memory = built.memories.create(USER, VEGETARIAN).memory
    conversation_id = a_full_conversation(built, clock)
    event = sqs_event(
        uses_body([memory.memory_id]),
        fold_body(conversation_id),
        json.dumps({"type": "uses", "user_id": USER, "memory_ids": []}),
    )

    # When the fold Lambda receives the batch
    result = invoke(handler, event)

    # Then the memory's own uses landed, the fold applied, and only the malformed job
    # is reported back
    stored = built.stores.memories.get_memory(USER, memory.memory_id)
    assert stored is not None and stored.meta == {"uses": list(DEFAULT_USES)}
    assert [[item.text for item in call] for call in model.asked] == [[VEGETARIAN.text]]
    assert state(built, conversation_id).fold_count == 1
    assert failed_ids(result) == [event["Records"][2]["messageId"]]


def test_a_redelivered_uses_job_changes_nothing(
    handler: Any, writing: tuple[Container, ScriptedUses]
) -> None:
    built, model = writing
    memory = built.memories.create(USER, VEGETARIAN).memory
    event = sqs_event(uses_body([memory.memory_id]))
    assert failed_ids(invoke(handler, event)) == []
    written = built.stores.memories.get_memory(USER, memory.memory_id)

    assert failed_ids(invoke(handler, event)) == []

    assert built.stores.memories.get_memory(USER, memory.memory_id) == written
    assert len(model.asked) == 1


def test_a_uses_job_for_a_memory_that_is_gone_succeeds_without_a_model_call(
    handler: Any, writing: tuple[Container, ScriptedUses]
) -> None:
    # Given the sample uses job, whose memory does not exist (deleted, or never stored)
    _, model = writing

    result = invoke(handler, sample_event("fold", "uses_job"))

    assert failed_ids(result) == [] and model.asked == []


def test_a_model_that_fails_fails_no_message(
    handler: Any, writing: tuple[Container, ScriptedUses]
) -> None:
    # Given a model that is overloaded when the job runs
    built, model = writing
    memory = built.memories.create(USER, VEGETARIAN).memory
    model.failing = True

    # When the job arrives
    result = invoke(handler, sqs_event(uses_body([memory.memory_id])))

    # Then the memory keeps its category's uses and nothing is retried or dead-lettered
    assert failed_ids(result) == []
    assert built.stores.memories.get_memory(USER, memory.memory_id) == memory


def test_a_profile_job_rebuilds_the_profile_from_the_memories_written_outside_a_chat(
    handler: Any, container: Container
) -> None:
    # Given memories typed through the API (no chat, so no write pipeline ran)
    container.memories.create(USER, NewMemory(text="Lives in Lisbon.", category="location"))
    container.memories.create(USER, NewMemory(text="Plays the cello.", category="hobbies"))
    assert container.stores.user_state.get_profile(USER) is None

    # When the fold queue delivers the profile job those writes asked for (the sample's)
    result = invoke(handler, sample_event("fold", "profile_job"))

    # Then the profile holds them, and a second delivery changes nothing
    assert failed_ids(result) == []
    profile = container.stores.user_state.get_profile(USER)
    assert profile is not None
    assert sorted(profile.text.splitlines()) == ["- Lives in Lisbon.", "- Plays the cello."]
    assert failed_ids(invoke(handler, sample_event("fold", "profile_job"))) == []
    assert container.stores.user_state.get_profile(USER) == profile
