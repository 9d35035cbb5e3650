"""StepFunctionsStarter against moto's Step Functions: one execution per slice, by name."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.config import DefaultConfig

from chatmemory.adapters.stepfunctions_starter import StepFunctionsStarter, execution_name

REGION = "eu-west-1"
# StartExecution's rule for names: 1-80 characters, letters, digits, - and _.
EXECUTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
# A stand-in machine that ends at once: these tests are about starting, not running.
DONE_AT_ONCE = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})


@pytest.fixture
def client(aws_env: None) -> Iterator[Any]:
    config: DefaultConfig = {"stepfunctions": {"execute_state_machine": True}}
    with mock_aws(config=config):
        yield boto3.client("stepfunctions", region_name=REGION)


@pytest.fixture
def machine_arn(client: Any) -> str:
    created = client.create_state_machine(
        name="write-pipeline",
        definition=DONE_AT_ONCE,
        roleArn="arn:aws:iam::123456789012:role/write-pipeline",
        type="EXPRESS",
    )
    arn: str = created["stateMachineArn"]
    return arn


@pytest.fixture
def starter(client: Any, machine_arn: str) -> StepFunctionsStarter:
    return StepFunctionsStarter(client, state_machine_arn=machine_arn)


def finished(client: Any, execution_arn: str) -> dict[str, Any]:
    for _ in range(500):
        described: dict[str, Any] = client.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.01)
    pytest.fail("the execution never finished")


@pytest.mark.parametrize(
    ("user_id", "conversation_id"),
    [
        ("user-123", "conv_4422ba00e69b48c9b978ff74f8e109ee"),
        # an issuer's subject may be long and hold characters no execution name may
        ("auth0|" + "x" * 200 + " é/[*]", "conv_4422ba00e69b48c9b978ff74f8e109ee"),
    ],
)
def test_execution_names_are_valid_and_derived_from_the_slice(
    user_id: str, conversation_id: str
) -> None:
    name = execution_name(user_id, conversation_id, 7)

    assert EXECUTION_NAME.match(name)
    assert name == execution_name(user_id, conversation_id, 7)
    assert name != execution_name(user_id, conversation_id, 8)
    assert name != execution_name(user_id, "conv_other", 7)
    assert user_id[:8] not in name  # no user id shows in the console


def test_a_start_runs_the_machine_with_ids_only(
    starter: StepFunctionsStarter, client: Any, machine_arn: str
) -> None:
    # When the pipeline is started for a slice
    started = starter.start_write("user-123", "conv_1", 7)

    # Then one execution runs under the slice's name, with the slice's ids as input
    assert started is True
    (execution,) = client.list_executions(stateMachineArn=machine_arn)["executions"]
    assert execution["name"] == execution_name("user-123", "conv_1", 7)
    described = finished(client, execution["executionArn"])
    assert json.loads(described["input"]) == {
        "user_id": "user-123",
        "conversation_id": "conv_1",
        "upto_seq": 7,
    }


def test_a_repeat_start_for_the_same_slice_is_a_no_op(
    starter: StepFunctionsStarter, client: Any, machine_arn: str
) -> None:
    # Given a slice whose execution has run
    assert starter.start_write("user-123", "conv_1", 7) is True
    (execution,) = client.list_executions(stateMachineArn=machine_arn)["executions"]
    finished(client, execution["executionArn"])

    # When it is started again (a check delivered twice, the sweep after a lost timer)
    again = starter.start_write("user-123", "conv_1", 7)

    # Then the name is refused and nothing new runs
    assert again is False
    assert len(client.list_executions(stateMachineArn=machine_arn)["executions"]) == 1


def test_a_newer_slice_of_the_same_conversation_starts_its_own_run(
    starter: StepFunctionsStarter, client: Any, machine_arn: str
) -> None:
    assert starter.start_write("user-123", "conv_1", 7) is True
    assert starter.start_write("user-123", "conv_1", 9) is True

    assert len(client.list_executions(stateMachineArn=machine_arn)["executions"]) == 2
