"""The shipped write pipeline, run by moto's Step Functions engine over our real handlers.

The state machine is built from `statemachines/write_pipeline.asl.json` exactly as the
template declares it (type, logging, tracing, DefinitionSubstitutions), so the
definition that ships is the definition tested. Each substitution is a fake Lambda ARN
named for the template's function (`…:function:ExtractFunction`); moto's Lambda backend
is patched to call that function's `app.py` handler in-process, the way the Lambda
runtime would: a returned dict is the payload, a raised exception becomes a function
error whose `errorType` is the exception's class name (what Retry and Catch match).
"""

from __future__ import annotations

import json
import time
import types
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.config import DefaultConfig
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.local.server import LocalLambdaContext
from chatmemory.services.chat import ChatRequest, ChatResult
from tests.support.functions import load_handler
from tests.support.template import ROOT, resource_properties

REGION = "eu-west-1"
ACCOUNT = "123456789012"
USER = "user-123"
MACHINE = "WritePipeline"
PURGE_MACHINE = "PurgePipeline"
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}


def _function_arn(logical_id: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{logical_id}"


def _function_name(name_or_arn: str) -> str:
    """`ExtractFunction` from a bare name or a function ARN (no qualifier is ever used)."""
    return name_or_arn.split(":")[6] if name_or_arn.startswith("arn:") else name_or_arn


def shipped_definition(logical_id: str = MACHINE) -> str:
    """The ASL file the template ships, with its DefinitionSubstitutions applied."""
    machine = resource_properties(logical_id)
    text: str = (ROOT / machine["DefinitionUri"]).read_text()
    for key, value in machine["DefinitionSubstitutions"].items():
        logical_id, attribute = value["Fn::GetAtt"]
        assert attribute == "Arn"
        text = text.replace("${" + key + "}", _function_arn(logical_id))
    return text


def step_handlers(*machines: str) -> dict[str, Any]:
    """Each function the state machines invoke → the handler its CodeUri ships."""
    handlers = {}
    substitutions = [
        value
        for machine in machines or (MACHINE,)
        for value in resource_properties(machine)["DefinitionSubstitutions"].values()
    ]
    for value in substitutions:
        logical_id = value["Fn::GetAtt"][0]
        code_uri = resource_properties(logical_id)["CodeUri"]
        folder = code_uri.removeprefix("functions/").strip("/")
        handlers[logical_id] = load_handler(folder)
    return handlers


@dataclass
class Invocation:
    function: str
    payload: dict[str, Any]
    error_type: str | None = None


@dataclass
class LambdaDispatcher:
    """Stands in for the Lambda service: runs our handlers, records every invocation."""

    handlers: dict[str, Any]
    invocations: list[Invocation] = field(default_factory=list)

    def invoke(
        self,
        function_name: str,
        body: str | bytes | None,
        response_headers: dict[str, Any],
    ) -> bytes:
        name = _function_name(function_name)
        event = json.loads(body or "{}")
        call = Invocation(name, event)
        self.invocations.append(call)
        try:
            result = self.handlers[name](event, LocalLambdaContext(function_name=name))
        except Exception as exc:  # what the Lambda runtime reports for an unhandled error
            call.error_type = type(exc).__name__
            response_headers["x-amz-function-error"] = "Unhandled"
            error = {"errorType": call.error_type, "errorMessage": str(exc)}
            return json.dumps(error).encode()
        return json.dumps(result).encode()

    def calls_to(self, function: str) -> list[Invocation]:
        return [call for call in self.invocations if call.function == function]


@dataclass
class RetryWaits:
    """The waits the Retry policies asked for (seconds), recorded instead of slept."""

    seconds: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.seconds.append(seconds)


@dataclass
class Execution:
    arn: str
    status: str
    output: dict[str, Any] | None
    error: str | None
    cause: str | None
    states: list[str]


@dataclass
class Pipeline:
    """The deployed write pipeline, in moto."""

    client: Any
    arn: str
    lambdas: LambdaDispatcher
    waits: RetryWaits

    def run(self, payload: dict[str, Any], *, timeout: float = 30.0) -> Execution:
        """Start an execution with `payload` and wait for it to end."""
        started = self.client.start_execution(
            stateMachineArn=self.arn, name=f"test-{uuid.uuid4().hex}", input=json.dumps(payload)
        )
        return self.wait(started["executionArn"], timeout=timeout)

    def wait(self, execution_arn: str, *, timeout: float = 30.0) -> Execution:
        # Executions run on a thread of their own; poll until they end.
        deadline = time.monotonic() + timeout
        while True:
            described = self.client.describe_execution(executionArn=execution_arn)
            if described["status"] in TERMINAL:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"execution still {described['status']} after {timeout} s")
            time.sleep(0.02)
        return Execution(
            arn=execution_arn,
            status=described["status"],
            output=json.loads(described["output"]) if described.get("output") else None,
            error=described.get("error"),
            cause=described.get("cause"),
            states=self.states_entered(execution_arn),
        )

    def states_entered(self, execution_arn: str) -> list[str]:
        history = self.client.get_execution_history(executionArn=execution_arn)["events"]
        return [
            event["stateEnteredEventDetails"]["name"]
            for event in history
            if "stateEnteredEventDetails" in event
        ]

    def executions(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.client.list_executions(stateMachineArn=self.arn)[
            "executions"
        ]
        return listed


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    # SQLite, the hashing embedder, no model key: the offline stand-in extracts and routes.
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="session")
def handlers() -> dict[str, Any]:
    return step_handlers(MACHINE, PURGE_MACHINE)


@pytest.fixture
def machines(
    aws_env: None, monkeypatch: pytest.MonkeyPatch, handlers: dict[str, Any]
) -> Iterator[dict[str, Pipeline]]:
    """Both pipelines deployed in moto, their tasks served by our handlers."""
    lambdas = LambdaDispatcher(handlers)
    waits = RetryWaits()

    def invoke(  # noqa: PLR0917 - LambdaSimpleBackend.invoke's own signature
        self: LambdaSimpleBackend,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> bytes:
        return lambdas.invoke(function_name, body, response_headers)

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    # The shipped Retry intervals stay as they are; moto's wait between attempts is
    # recorded instead of slept (moto, like AWS, refuses an IntervalSeconds below 1, so
    # the intervals cannot be shortened in a copy of the definition either).
    monkeypatch.setattr(retrier_decl, "time", types.SimpleNamespace(sleep=waits.sleep))

    config: DefaultConfig = {
        "stepfunctions": {"execute_state_machine": True},
        "lambda": {"use_docker": False},
    }
    with mock_aws(config=config):
        logs = boto3.client("logs", region_name=REGION)
        client = boto3.client("stepfunctions", region_name=REGION)
        deployed = {}
        for logical_id, name in ((MACHINE, "write-pipeline"), (PURGE_MACHINE, "purge-pipeline")):
            machine = resource_properties(logical_id)
            group = f"/aws/vendedlogs/states/test/{name}"
            logs.create_log_group(logGroupName=group)
            (described,) = logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]
            created = client.create_state_machine(
                name=name,
                definition=shipped_definition(logical_id),
                roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}",
                type=machine["Type"],
                loggingConfiguration={
                    "level": machine["Logging"]["Level"],
                    "includeExecutionData": machine["Logging"]["IncludeExecutionData"],
                    "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": described["arn"]}}],
                },
                tracingConfiguration={"enabled": machine["Tracing"]["Enabled"]},
            )
            deployed[logical_id] = Pipeline(client, created["stateMachineArn"], lambdas, waits)
        yield deployed


@pytest.fixture
def pipeline(machines: dict[str, Pipeline]) -> Pipeline:
    """The write pipeline deployed in moto."""
    return machines[MACHINE]


@pytest.fixture
def purge_pipeline(machines: dict[str, Pipeline]) -> Pipeline:
    """The purge pipeline deployed in moto."""
    return machines[PURGE_MACHINE]


def say(container: Container, message: str, conversation_id: str | None = None) -> str:
    """One chat turn through the real chat service; the conversation's id."""
    request = ChatRequest(user_id=USER, message=message, conversation_id=conversation_id)
    result = list(container.chat.turn(request))[-1]
    assert isinstance(result, ChatResult)
    return result.conversation_id


def slice_input(container: Container, conversation_id: str) -> dict[str, Any]:
    """What the idle trigger starts the pipeline with: the conversation up to its last seq."""
    conversation = container.stores.conversations.get_conversation(USER, conversation_id)
    assert conversation is not None
    return {"user_id": USER, "conversation_id": conversation_id, "upto_seq": conversation.last_seq}
