"""The idle Lambda: SQS idle checks start the shipped write pipeline (moto) only when due.

The container is configured as on AWS (CHATMEMORY_PIPELINE=stepfunctions): a check that
finds the conversation quiet starts an execution of the state machine through
StepFunctionsStarter, and moto runs it over the real step handlers (see conftest).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.stepfunctions_starter import execution_name
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.rooms import NewRoomMessage, RoomKind
from chatmemory.local.server import LocalLambdaContext
from chatmemory.ports.memories import MemoryQuery
from chatmemory.services.room_service import NewRoom
from tests.pipeline.conftest import REGION, USER, Pipeline, say
from tests.support.functions import load_handler

IDLE = timedelta(seconds=600)
QUEUE_ARN = f"arn:aws:sqs:{REGION}:123456789012:chatmemory-IdleQueue-1A2B3C4D5E6F"


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock, pipeline: Pipeline) -> Iterator[Container]:
    """Configured as the template configures IdleFunction: the pipeline on Step Functions."""
    settings = Settings(
        state_dir=tmp_path,
        embedder="hashing",
        region=REGION,
        pipeline="stepfunctions",
        write_pipeline_arn=pipeline.arn,
        idle_seconds=int(IDLE.total_seconds()),
        # one delay for cold and warm profiles alike: these tests are about the timer
        # (tests/services/test_write_cadence.py is about the two delays)
        idle_cold_seconds=int(IDLE.total_seconds()),
    )
    built = Container(settings, clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("pipeline/idle")


def check_body(conversation_id: str, user_id: str = USER) -> str:
    return json.dumps({"user_id": user_id, "conversation_id": conversation_id})


def sqs_event(*bodies: str) -> dict[str, Any]:
    """An SQS event from the idle queue with one record per body."""
    records = [
        {
            "messageId": f"00000000-0000-4000-8000-{number:012d}",
            "receiptHandle": f"handle-{number}",
            "body": body,
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": "1796030100000",
                "SenderId": "AROAEXAMPLEID:chatmemory-ChatFunction",
                "ApproximateFirstReceiveTimestamp": "1796030100012",
            },
            "messageAttributes": {},
            "md5OfBody": hashlib.md5(body.encode()).hexdigest(),  # noqa: S324 - SQS's checksum
            "eventSource": "aws:sqs",
            "eventSourceARN": QUEUE_ARN,
            "awsRegion": REGION,
        }
        for number, body in enumerate(bodies, start=1)
    ]
    return {"Records": records}


def invoke(handler: Any, event: dict[str, Any]) -> list[str]:
    """The ids of the records the handler reports as failed."""
    result = handler(event, LocalLambdaContext(function_name="IdleFunction"))
    return [failure["itemIdentifier"] for failure in result["batchItemFailures"]]


def memory_texts(container: Container) -> str:
    return " ".join(
        m.text for m in container.stores.memories.iter_memories(USER, MemoryQuery())
    ).lower()


def test_a_quiet_conversation_starts_the_write_pipeline(
    handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    # Given a conversation that has been quiet for the idle period
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    clock.advance(IDLE)
    conversation = container.stores.conversations.get_conversation(USER, conversation_id)
    assert conversation is not None

    # When its idle check arrives
    failed = invoke(handler, sqs_event(check_body(conversation_id)))

    # Then one execution starts, named for the slice, and learns from it
    assert failed == []
    (started,) = pipeline.executions()
    assert started["name"] == execution_name(USER, conversation_id, conversation.last_seq)
    execution = pipeline.wait(started["executionArn"])
    assert execution.status == "SUCCEEDED"
    assert execution.states[-1] == "Done"
    assert "vegetarian" in memory_texts(container)


def test_a_conversation_still_going_starts_nothing(
    handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    # Given a message five minutes ago
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    clock.advance(IDLE / 2)

    # When a check arrives (one armed by an earlier message)
    failed = invoke(handler, sqs_event(check_body(conversation_id)))

    # Then nothing starts: the latest message's own check will come later
    assert failed == []
    assert pipeline.executions() == []


def test_a_burst_of_messages_is_read_once_after_the_last(
    handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    # Given three messages a minute apart, each arming a check due ten minutes later
    conversation_id = say(container, "I'm vegetarian")
    clock.advance(timedelta(minutes=1))
    say(container, "I live in Pune", conversation_id)
    clock.advance(timedelta(minutes=1))
    say(container, "I have a cat named Miso", conversation_id)

    # When each check arrives at its due time
    clock.advance(IDLE - timedelta(minutes=2))
    assert invoke(handler, sqs_event(check_body(conversation_id))) == []
    clock.advance(timedelta(minutes=1))
    assert invoke(handler, sqs_event(check_body(conversation_id))) == []
    assert pipeline.executions() == []
    clock.advance(timedelta(minutes=1))
    assert invoke(handler, sqs_event(check_body(conversation_id))) == []

    # Then only the last one started the pipeline, for the whole burst
    (started,) = pipeline.executions()
    assert pipeline.wait(started["executionArn"]).status == "SUCCEEDED"
    texts = memory_texts(container)
    assert "vegetarian" in texts and "pune" in texts


def test_a_check_for_a_conversation_already_read_starts_nothing(
    handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    # Given a conversation the pipeline has already read
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    clock.advance(IDLE)
    invoke(handler, sqs_event(check_body(conversation_id)))
    (first,) = pipeline.executions()
    pipeline.wait(first["executionArn"])

    # When the same check is delivered again (SQS delivers at least once)
    failed = invoke(handler, sqs_event(check_body(conversation_id)))

    # Then no second execution starts
    assert failed == []
    assert len(pipeline.executions()) == 1


def test_a_message_that_is_no_check_fails_alone(
    handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    # Given a batch with a malformed message between two good ones
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    clock.advance(IDLE)
    event = sqs_event(
        check_body("conv_unknown"),
        json.dumps({"user_id": USER}),
        check_body(conversation_id),
    )

    # When the batch is handled
    failed = invoke(handler, event)

    # Then only the malformed one goes back to the queue (and, in time, the DLQ)
    assert failed == [event["Records"][1]["messageId"]]
    assert len(pipeline.executions()) == 1


def _room_with_a_line(container: Container, text: str) -> str:
    room = container.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=["warren"], members=[USER]))
    container.rooms.post(room.room_id, [NewRoomMessage(f"u:{USER}", text)])
    return room.room_id


def test_a_quiet_rooms_check_runs_each_seated_personas_write(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    # Given a private room whose last line was said longer ago than the quiet period
    room_id = _room_with_a_line(container, "I live in Pune.")
    clock.advance(IDLE + timedelta(seconds=1))

    # When its quiet check arrives on the idle queue
    failed = invoke(handler, sqs_event(json.dumps({"type": "room_quiet", "room_id": room_id})))

    # Then Warren learned it, in the user's partition
    assert failed == []
    rows = container.stores.memories.iter_memories(USER, MemoryQuery(persona="warren"))
    assert [m.text for m in rows] == ["Lives in Pune."]


def test_a_rooms_check_that_comes_early_writes_nothing(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    room_id = _room_with_a_line(container, "I live in Pune.")
    clock.advance(IDLE - timedelta(seconds=5))  # a newer line re-armed the timer

    failed = invoke(handler, sqs_event(json.dumps({"type": "room_quiet", "room_id": room_id})))

    assert failed == []
    assert list(container.stores.memories.iter_memories(USER, MemoryQuery())) == []
