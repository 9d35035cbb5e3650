"""The write pipeline's tasks and its triggers, driven by their sample events
(events/pipeline/): each sample, given this test's own ids, is what the state machine,
the idle queue or the schedule hands the real handler, and each answer has the keys the
next state reads (statemachines/write_pipeline.asl.json's ResultSelectors)."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel, SqsModel
from pydantic import BaseModel, ValidationError

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.extraction import run_id_for
from chatmemory.domain.rooms import NewRoomMessage, RoomKind
from chatmemory.local.server import LocalLambdaContext
from chatmemory.ports.memories import MemoryQuery
from chatmemory.services.chat import ChatRequest, ChatResult
from chatmemory.services.memories import NewMemory
from chatmemory.services.room_service import NewRoom
from chatmemory.tasks.payloads import TaskPayload
from tests.support.functions import EVENTS, ROOT, load_function, load_handler, sample_event

TASKS = ("extract", "route", "rebuild_profile", "notify", "record_failure")
TRIGGERS = ("idle", "sweep", "nightly", "reindex")
ASL = json.loads((ROOT / "statemachines" / "write_pipeline.asl.json").read_text())

#: which function each sample under events/pipeline/ is for
SAMPLE_FOR = {
    "extract": ("extract",),
    "route": ("route",),
    "rebuild_profile": ("rebuild_profile",),
    "notify": ("notify",),
    "record_failure": ("record_failure",),
    "idle_check": ("idle",),
    "room_quiet": ("idle",),
    "sweep": ("sweep",),
    "nightly": ("nightly",),
    "reindex": ("reindex",),
    "purge": ("purge_plan", "purge_vectors", "purge_rows", "purge_mark"),
    "purge_profile": ("purge_profile",),
    "purge_summary": ("purge_summary",),
}
#: what the triggers' events are: the queue's records, the schedule's event
TRIGGER_EVENTS: dict[str, type[BaseModel]] = {
    "idle_check": SqsModel,
    "room_quiet": SqsModel,
    "sweep": EventBridgeModel,
    "nightly": EventBridgeModel,
    # an operator's invocation: the function's own model
    "reindex": load_function("pipeline/reindex").ReindexEvent,
}


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handlers() -> dict[str, Any]:
    return {name: load_handler(f"pipeline/{name}") for name in TASKS + TRIGGERS}


def run(handlers: dict[str, Any], name: str, event: dict[str, Any]) -> Any:
    return handlers[name](event, LocalLambdaContext(function_name=name))


def sample(name: str, **ids: Any) -> dict[str, Any]:
    """events/pipeline/<name>.json with this test's ids in place of the sample's."""
    return {**sample_event("pipeline", name), **ids}


def queued(name: str, **ids: Any) -> dict[str, Any]:
    """An SQS sample whose message body names this test's ids."""
    event = copy.deepcopy(sample_event("pipeline", name))
    (record,) = event["Records"]
    record["body"] = json.dumps({**json.loads(record["body"]), **ids})
    record["md5OfBody"] = hashlib.md5(record["body"].encode()).hexdigest()  # noqa: S324
    return event


def started_now() -> str:
    """`$$.Execution.StartTime` of an execution that started just now (the step's budget
    is counted from it on the wall clock)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def selected(state: str, answer: dict[str, Any]) -> dict[str, Any]:
    """What the state's ResultSelector keeps of the Lambda's answer (each key must be there)."""
    kept = {}
    for key, path in ASL["States"][state]["ResultSelector"].items():
        field = path.removeprefix("$.Payload.")
        assert field in answer, f"{state} answered without {field!r}"
        kept[key.removesuffix(".$")] = answer[field]
    return kept


def seeded(container: Container, user_id: str, message: str) -> tuple[str, int]:
    """A conversation the user had through the chat service: its id and last seq."""
    result = list(container.chat.turn(ChatRequest(user_id=user_id, message=message)))[-1]
    assert isinstance(result, ChatResult)
    conversation = container.stores.conversations.get_conversation(user_id, result.conversation_id)
    assert conversation is not None
    return result.conversation_id, conversation.last_seq


def test_the_samples_run_the_write_pipeline_from_extract_to_a_notice(
    container: Container, handlers: dict[str, Any]
) -> None:
    # Given the sample's user said something worth remembering
    execution_input = sample("extract")
    user_id = execution_input["user_id"]
    conversation_id, last_seq = seeded(container, user_id, "I'm vegetarian and I live in Pune")
    execution_input.update(conversation_id=conversation_id, upto_seq=last_seq)

    # When each task's sample runs, in the state machine's order, with what it passes on
    extract = selected("Extract", run(handlers, "extract", execution_input))
    route = selected(
        "Route",
        run(
            handlers,
            "route",
            sample("route", run_id=extract["run_id"], pipeline_started_at=started_now()),
        ),
    )
    profile = selected(
        "RebuildProfile",
        run(
            handlers,
            "rebuild_profile",
            sample("rebuild_profile", persona=route["persona"], pipeline_started_at=started_now()),
        ),
    )
    notify = selected(
        "Notify",
        run(
            handlers,
            "notify",
            sample("notify", run_id=extract["run_id"], pipeline_started_at=started_now()),
        ),
    )

    # Then the run learned the slice, rebuilt the profile and raised the user a notice
    assert extract["candidates"] > 0
    assert route["written"] > 0 and route["profile_affected"] is True
    assert profile == {"rebuilt": True}
    assert notify["notice_id"] is not None
    assert container.stores.notices.get_notice(user_id, notify["notice_id"]) is not None
    learned = container.stores.memories.iter_memories(user_id, MemoryQuery())
    assert "vegetarian" in " ".join(m.text for m in learned).lower()


def test_the_record_failure_sample_keeps_the_error_on_the_run(
    container: Container, handlers: dict[str, Any]
) -> None:
    # Given Extract wrote a run, and then Route failed for good
    failed = sample("record_failure")
    user_id = failed["user_id"]
    conversation_id, last_seq = seeded(container, user_id, "I'm vegetarian and I live in Pune")
    slice_ids = {"user_id": user_id, "conversation_id": conversation_id, "upto_seq": last_seq}
    extract = selected("Extract", run(handlers, "extract", sample("extract", **slice_ids)))
    failed.update(slice_ids, extract=extract)

    # When RecordFailure gets the whole state with the Catch's error
    answer = run(handlers, "record_failure", failed)

    # Then the error's kind is kept on the run, and the cursor stays for the sweep
    assert answer == {"recorded": True, "error": failed["error"]["Error"]}
    stored = container.stores.runs.get_extraction_run(user_id, extract["run_id"])
    assert stored is not None and stored.failure == "ModelUnavailable"
    conversation = container.stores.conversations.get_conversation(user_id, conversation_id)
    assert conversation is not None and conversation.extracted_upto_seq < last_seq


def test_the_idle_sample_starts_the_pipeline_once_the_conversation_is_quiet(
    container: Container, clock: ManualClock, handlers: dict[str, Any]
) -> None:
    # Given a conversation of the sample's user
    (record,) = sample_event("pipeline", "idle_check")["Records"]
    user_id = json.loads(record["body"])["user_id"]
    conversation_id, last_seq = seeded(container, user_id, "I'm vegetarian and I live in Pune")
    event = queued("idle_check", conversation_id=conversation_id)

    # When its check arrives before the conversation went quiet, and again after
    early = run(handlers, "idle", event)
    before = container.stores.conversations.get_conversation(user_id, conversation_id)
    clock.advance(timedelta(seconds=container.settings.idle_seconds + 1))
    late = run(handlers, "idle", event)

    # Then the early check skipped it; the late one read the slice to its end
    assert early == late == {"batchItemFailures": []}
    assert before is not None and before.extracted_upto_seq < last_seq
    after = container.stores.conversations.get_conversation(user_id, conversation_id)
    assert after is not None and after.extracted_upto_seq == last_seq
    assert any(
        "vegetarian" in m.text.lower()
        for m in container.stores.memories.iter_memories(user_id, MemoryQuery())
    )


def test_the_room_quiet_sample_runs_the_seated_personas_writes(
    container: Container, clock: ManualClock, handlers: dict[str, Any]
) -> None:
    # Given the sample's room, where a member said something a while ago
    (record,) = sample_event("pipeline", "room_quiet")["Records"]
    room_id = json.loads(record["body"])["room_id"]
    container.rooms.open(
        NewRoom(kind=RoomKind.PRIVATE, personas=["warren"], members=["user-123"], room_id=room_id)
    )
    container.rooms.post(room_id, [NewRoomMessage("u:user-123", "I live in Pune.")])
    clock.advance(timedelta(hours=1))

    # When its quiet check arrives
    answer = run(handlers, "idle", queued("room_quiet"))

    # Then Warren learned it, in the member's partition
    assert answer == {"batchItemFailures": []}
    rows = container.stores.memories.iter_memories("user-123", MemoryQuery(persona="warren"))
    assert [m.text for m in rows] == ["Lives in Pune."]


def test_the_sweep_sample_starts_what_fell_behind(
    container: Container, clock: ManualClock, handlers: dict[str, Any]
) -> None:
    # Given a conversation whose idle check was lost a day ago
    conversation_id, last_seq = seeded(container, "user-123", "I'm vegetarian and I live in Pune")
    clock.advance(timedelta(days=1))

    # When the daily schedule's event arrives
    counts = run(handlers, "sweep", sample("sweep"))

    # Then it started that conversation's run, and says how many of each it started (the
    # offline extractor's two memories wait for their own uses: their jobs are queued)
    assert counts == {"started": 1, "rooms": 0, "purges": 0, "uses": 2, "without_vectors": 0}
    conversation = container.stores.conversations.get_conversation("user-123", conversation_id)
    assert conversation is not None and conversation.extracted_upto_seq == last_seq


def test_the_nightly_sample_puts_a_quiet_thread_to_sleep(
    container: Container, clock: ManualClock, handlers: dict[str, Any]
) -> None:
    # Given a thread planted a month ago and never raised again
    seeded(container, "user-123", "I have a job interview at Acme on Thursday.")
    clock.advance(timedelta(seconds=container.settings.idle_seconds + 1))
    assert container.idle.sweep() == 1  # what the idle check does on AWS
    clock.advance(timedelta(days=30))

    # When the nightly schedule's event arrives
    counts = run(handlers, "nightly", sample("nightly"))

    # Then the review went through the thread and put it to sleep
    assert counts == {"checked": 1, "dormant": 1}


def test_the_reindex_sample_gives_vectors_to_a_memory_stored_without_them(
    container: Container, handlers: dict[str, Any]
) -> None:
    # Given the sample's user has a memory stored while the embedder failed
    remembered = container.memories.create("user-123", NewMemory(text="Keeps bees on the roof."))
    stored = container.stores.memories.get_memory("user-123", remembered.memory.memory_id)
    assert stored is not None
    container.stores.memories.put_memory(dataclasses.replace(stored, embedding=None))

    # When an operator invokes the re-index with the sample
    counts = run(handlers, "reindex", sample("reindex"))

    # Then it has vectors again and is in the index
    assert (counts["users"], counts["embedded"], counts["published"]) == (1, 1, 1)
    (again,) = container.stores.memories.iter_memories("user-123")
    assert again.embedding is not None


def test_a_reindex_event_of_another_shape_is_refused(handlers: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        run(handlers, "reindex", {"segment": 3, "segments": 2})
    with pytest.raises(ValidationError):
        run(handlers, "reindex", {"users": ["user-123"]})


def test_the_samples_describe_one_run() -> None:
    # Given the samples of one execution's tasks
    execution_input = sample_event("pipeline", "extract")
    (record,) = sample_event("pipeline", "idle_check")["Records"]

    # Then the idle check names the slice's conversation, the later tasks Extract's run
    assert json.loads(record["body"]) == {
        key: execution_input[key] for key in ("user_id", "conversation_id")
    }
    run_id = run_id_for(**execution_input)
    assert sample_event("pipeline", "route")["run_id"] == run_id
    assert sample_event("pipeline", "notify")["run_id"] == run_id
    assert sample_event("pipeline", "record_failure")["extract"]["run_id"] == run_id


def declared_payload(function: str) -> type[TaskPayload]:
    """The payload model a task's app.py validates its event with."""
    module = load_function(f"pipeline/{function}")
    (model,) = {
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, TaskPayload) and value is not TaskPayload
    }
    return model


def test_every_pipeline_function_has_a_sample() -> None:
    functions = {path.name for path in (ROOT / "functions" / "pipeline").iterdir() if path.is_dir()}
    samples = {path.stem for path in (EVENTS / "pipeline").glob("*.json")}
    assert samples == set(SAMPLE_FOR)
    assert functions == {function for covered in SAMPLE_FOR.values() for function in covered}


@pytest.mark.parametrize("name", sorted(SAMPLE_FOR))
def test_every_sample_parses_as_what_its_function_reads(name: str) -> None:
    event = sample_event("pipeline", name)
    if name in TRIGGER_EVENTS:
        parsed = TRIGGER_EVENTS[name].model_validate(event)
        if isinstance(parsed, SqsModel):
            (record,) = parsed.Records
            if name == "room_quiet":
                assert Container.read_room_quiet(record.body)
            else:
                assert Container.read_idle_check(record.body)
        return
    for function in SAMPLE_FOR[name]:
        model = declared_payload(function)
        assert model.model_validate(event), function
