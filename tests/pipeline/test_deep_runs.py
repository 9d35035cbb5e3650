"""Deep runs on AWS's shape: the idle Lambda and the daily sweep start the shipped write
pipeline (moto) with `"deep": true` in the execution's input, Extract reads it, and the run
record says so; a normal start's input is what it always was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.extraction import ExtractionRun, run_id_for
from chatmemory.local.server import LocalLambdaContext
from chatmemory.tasks.payloads import ExtractTask
from tests.pipeline.conftest import REGION, USER, Pipeline, say
from tests.support.functions import load_handler


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock, pipeline: Pipeline) -> Iterator[Container]:
    """Configured as the template configures IdleFunction and SweepFunction."""
    settings = Settings(
        state_dir=tmp_path,
        embedder="hashing",
        region=REGION,
        pipeline="stepfunctions",
        write_pipeline_arn=pipeline.arn,
    )
    built = Container(settings, clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def idle_handler() -> Any:
    return load_handler("pipeline/idle")


@pytest.fixture(scope="module")
def sweep_handler() -> Any:
    return load_handler("pipeline/sweep")


def idle_check(handler: Any, conversation_id: str) -> None:
    body = json.dumps({"user_id": USER, "conversation_id": conversation_id})
    record = {
        "messageId": "00000000-0000-4000-8000-000000000001",
        "receiptHandle": "handle-1",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:123456789012:chatmemory-IdleQueue",
        "awsRegion": REGION,
    }
    result = handler({"Records": [record]}, LocalLambdaContext(function_name="IdleFunction"))
    assert result["batchItemFailures"] == []


def started_inputs(pipeline: Pipeline) -> list[dict[str, Any]]:
    """The input of every execution, once each has ended."""
    inputs = []
    for execution in pipeline.executions():
        assert pipeline.wait(execution["executionArn"]).status == "SUCCEEDED"
        described = pipeline.client.describe_execution(executionArn=execution["executionArn"])
        inputs.append(json.loads(described["input"]))
    return inputs


def the_run(container: Container, conversation_id: str, upto_seq: int) -> ExtractionRun:
    run = container.stores.runs.get_extraction_run(
        USER, run_id_for(USER, conversation_id, upto_seq)
    )
    assert run is not None
    return run


def test_remember_this_conversation_starts_a_deep_execution_at_once(
    idle_handler: Any, container: Container, pipeline: Pipeline
) -> None:
    # Given a conversation whose last message asks for it to be remembered
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    say(container, "Please remember all of this.", conversation_id)

    # When its check arrives at once (the turn armed the timer for now)
    idle_check(idle_handler, conversation_id)

    # Then one execution ran with `deep` in its input, and its run is deep
    [given] = started_inputs(pipeline)
    assert given["deep"] is True
    assert the_run(container, conversation_id, given["upto_seq"]).deep is True


def test_a_normal_start_carries_no_deep_key(
    idle_handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    conversation_id = say(container, "I'm vegetarian and I live in Pune")
    clock.advance(timedelta(minutes=10))

    idle_check(idle_handler, conversation_id)

    [given] = started_inputs(pipeline)
    assert set(given) == {"user_id", "conversation_id", "upto_seq"}
    assert the_run(container, conversation_id, given["upto_seq"]).deep is False


def test_the_daily_sweep_starts_deep_executions(
    sweep_handler: Any, container: Container, clock: ManualClock, pipeline: Pipeline
) -> None:
    # Given a conversation whose idle check was lost
    conversation_id = say(container, "I have a cat named Miso")
    clock.advance(timedelta(hours=2))

    # When the scheduled sweep runs
    result = sweep_handler({}, LocalLambdaContext(function_name="Sweep"))

    # Then it started a deep execution for it
    assert result["started"] == 1
    [given] = started_inputs(pipeline)
    assert given["deep"] is True
    assert the_run(container, conversation_id, given["upto_seq"]).deep is True


def test_an_extract_payload_without_deep_is_a_normal_one() -> None:
    task = ExtractTask.model_validate({"user_id": USER, "conversation_id": "conv_1", "upto_seq": 3})

    assert task.deep is False
    assert task.log_keys()["deep"] is False
