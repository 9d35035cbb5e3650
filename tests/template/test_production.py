"""The template's production promises: alarms that arrive, limits that hold, data that stays."""

from __future__ import annotations

import copy
import json
from fnmatch import fnmatchcase
from typing import Any

import pytest
from samtranslator.translator.transform import transform

from chatmemory.tasks.handler import PIPELINE_BUDGET_SECONDS
from tests.support.template import ROOT, load_template, resource_properties
from tests.template.test_template import (
    _NoManagedPolicies,
    _routes_in_source,
    _with_s3_placeholders,
)

CLOUDWATCH = "cloudwatch.amazonaws.com"
# Routes whose every call may reach the model or rank a user's memories.
MODEL_ROUTES = {"POST /v1/chat", "POST /v1/context", "POST /v1/rooms/{room_id}/turn"}


def _allows(policy: dict[str, Any], service: str, action: str) -> bool:
    """Whether a statement of this resource policy lets the service principal do the action."""
    for statement in policy["Statement"]:
        if statement["Effect"] != "Allow":
            continue
        principal = statement.get("Principal", {})
        services = principal.get("Service", []) if isinstance(principal, dict) else []
        services = [services] if isinstance(services, str) else services
        actions = statement["Action"]
        actions = [actions] if isinstance(actions, str) else actions
        if service in services and any(fnmatchcase(action, pattern) for pattern in actions):
            return True
    return False


def _transformed_with(parameters: dict[str, Any]) -> dict[str, Any]:
    source = _with_s3_placeholders(copy.deepcopy(load_template()))
    result: dict[str, Any] = transform(source, parameters, _NoManagedPolicies())
    return result


@pytest.fixture
def transformed(aws_env: None) -> dict[str, Any]:
    """The CloudFormation a stack with the parameters' defaults would deploy."""
    return _transformed_with({})


# --- alarms --------------------------------------------------------------------------


def test_the_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use() -> None:
    # Given the alarm topic and the key it is encrypted with
    topic = resource_properties("AlarmTopic")
    key_id = topic["KmsMasterKeyId"]

    # Then the key is the stack's own (an AWS-managed alias would refuse CloudWatch)
    assert key_id == {"Ref": "AlarmTopicKey"}
    key = load_template()["Resources"]["AlarmTopicKey"]
    assert key["Type"] == "AWS::KMS::Key"
    # And its policy lets CloudWatch encrypt what it publishes
    policy = key["Properties"]["KeyPolicy"]
    assert _allows(policy, CLOUDWATCH, "kms:GenerateDataKey")
    assert _allows(policy, CLOUDWATCH, "kms:Decrypt")
    assert key["Properties"]["EnableKeyRotation"] is True


def test_cloudwatch_may_publish_to_the_alarm_topic_for_this_account_only() -> None:
    policies = [
        resource["Properties"]
        for resource in load_template()["Resources"].values()
        if resource["Type"] == "AWS::SNS::TopicPolicy"
        and {"Ref": "AlarmTopic"} in resource["Properties"]["Topics"]
    ]

    assert len(policies) == 1
    document = policies[0]["PolicyDocument"]
    assert _allows(document, CLOUDWATCH, "sns:Publish")
    for statement in document["Statement"]:
        assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == {
            "Ref": "AWS::AccountId"
        }


def test_every_alarm_publishes_to_the_topic_cloudwatch_may_use() -> None:
    alarms = [
        resource["Properties"]
        for resource in load_template()["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    ]

    assert alarms
    for alarm in alarms:
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


# --- limits --------------------------------------------------------------------------


def test_the_streaming_function_runs_at_most_its_reserved_concurrency(
    transformed: dict[str, Any],
) -> None:
    stream = transformed["Resources"]["ChatStreamFunction"]["Properties"]
    parameter = load_template()["Parameters"]["StreamConcurrency"]

    assert stream["ReservedConcurrentExecutions"] == {"Ref": "StreamConcurrency"}
    assert 1 <= parameter["Default"] <= parameter["MaxValue"]


def test_every_model_route_has_its_own_throttle_within_the_default(
    transformed: dict[str, Any],
) -> None:
    stage = transformed["Resources"]["HttpApiStage"]["Properties"]
    per_route = stage["RouteSettings"]

    # Every route throttled by name exists, so a typo cannot silently drop its limit
    declared = {f"{method} {path}" for method, path in _routes_in_source()}
    assert set(per_route) <= declared
    assert set(per_route) >= MODEL_ROUTES
    # And each limit is a rate with a burst at least as large
    for limits in [*per_route.values(), stage["DefaultRouteSettings"]]:
        assert 0 < limits["ThrottlingRateLimit"] <= limits["ThrottlingBurstLimit"]


def test_forgetting_everything_is_throttled_harder_than_reading(
    transformed: dict[str, Any],
) -> None:
    stage = transformed["Resources"]["HttpApiStage"]["Properties"]

    forget_all = stage["RouteSettings"]["DELETE /v1/memories"]["ThrottlingRateLimit"]
    assert forget_all < stage["DefaultRouteSettings"]["ThrottlingRateLimit"]


# --- data that stays ------------------------------------------------------------------


def test_the_table_refuses_deletion_and_is_kept_when_the_stack_goes() -> None:
    table = load_template()["Resources"]["MemoryTable"]

    assert table["Properties"]["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


def test_the_vector_collection_names_its_standby_replicas() -> None:
    collection = resource_properties("VectorCollection")
    parameter = load_template()["Parameters"]["VectorStandbyReplicas"]

    assert collection["StandbyReplicas"] == {"Ref": "VectorStandbyReplicas"}
    assert parameter["Default"] == "ENABLED"


# --- CORS ------------------------------------------------------------------------------


def _api_cors(transformed: dict[str, Any]) -> Any:
    return transformed["Resources"]["HttpApi"]["Properties"]["Body"]["x-amazon-apigateway-cors"]


def _url_cors(transformed: dict[str, Any]) -> Any:
    return transformed["Resources"]["ChatStreamFunctionUrl"]["Properties"]["Cors"]


@pytest.mark.usefixtures("aws_env")
def test_browsers_of_the_configured_origins_may_call_the_api_and_the_streaming_url() -> None:
    transformed = _transformed_with({"CorsAllowOrigins": "https://app.example.com"})

    for cors in (_api_cors(transformed), _url_cors(transformed)):
        condition, when_given, otherwise = cors["Fn::If"]
        assert condition == "HasCorsOrigins"
        origins = when_given.get("allowOrigins", when_given.get("AllowOrigins"))
        # (the transform may or may not substitute the parameter; a list comes out either way)
        separator, origin_list = origins["Fn::Split"]
        assert separator == ","
        assert origin_list in ({"Ref": "CorsAllowOrigins"}, "https://app.example.com")
        headers = when_given.get("allowHeaders", when_given.get("AllowHeaders"))
        assert "authorization" in headers
        assert otherwise == {"Ref": "AWS::NoValue"}


def test_no_origin_is_allowed_unless_the_stack_names_one() -> None:
    template = load_template()
    parameter = template["Parameters"]["CorsAllowOrigins"]
    condition = template["Conditions"]["HasCorsOrigins"]

    assert parameter["Default"] == ""
    assert condition == {"Fn::Not": [{"Fn::Equals": [{"Ref": "CorsAllowOrigins"}, ""]}]}


def test_every_queue_consumer_has_a_maximum_concurrency(transformed: dict[str, Any]) -> None:
    resources = transformed["Resources"]
    queues = {name for name, resource in resources.items() if resource["Type"] == "AWS::SQS::Queue"}
    mappings = [
        resource["Properties"]
        for resource in resources.values()
        if resource["Type"] == "AWS::Lambda::EventSourceMapping"
        and resource["Properties"]["EventSourceArn"]["Fn::GetAtt"][0] in queues
    ]

    assert mappings
    for mapping in mappings:
        # SQS's floor is 2; past the ceiling, messages wait in the queue instead of
        # taking the account's concurrency from the chat path
        assert 2 <= mapping["ScalingConfig"]["MaximumConcurrency"] <= 50


# --- the write pipeline within Express's five minutes --------------------------------

EXPRESS_LIMIT_SECONDS = 300


def _max_waits(retry: dict[str, Any]) -> float:
    """The longest a Retry can make a state wait in all (FULL jitter waits at most this)."""
    waits, interval = 0.0, float(retry.get("IntervalSeconds", 1))
    for _ in range(retry.get("MaxAttempts", 3)):
        waits += min(interval, retry.get("MaxDelaySeconds", interval))
        interval *= retry.get("BackoffRate", 2.0)
    return waits


def _function_timeouts() -> dict[str, float]:
    template = load_template()
    default = template["Globals"]["Function"]["Timeout"]
    return {
        name: float(resource["Properties"].get("Timeout", default))
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


def test_a_write_pipeline_run_ends_within_expresss_five_minutes_whatever_fails() -> None:
    # Given the shipped definition, each step's Lambda timeout and the run's budget
    definition = json.loads((ROOT / "statemachines" / "write_pipeline.asl.json").read_text())
    states = definition["States"]
    timeouts = _function_timeouts()
    substitutions = resource_properties("WritePipeline")["DefinitionSubstitutions"]

    def function_of(state: str) -> str:
        placeholder = states[state]["Parameters"]["FunctionName"].strip("${}")
        return str(substitutions[placeholder]["Fn::GetAtt"][0])

    def throttle_waits(state: str) -> float:
        return sum(
            _max_waits(retry)
            for retry in states[state]["Retry"]
            if "ModelUnavailable" not in retry["ErrorEquals"]
        )

    def model_retry(state: str) -> dict[str, Any]:
        return next(r for r in states[state]["Retry"] if "ModelUnavailable" in r["ErrorEquals"])

    # Extract, first, has no run budget: every attempt may take its whole Lambda timeout
    extract = model_retry("Extract")
    extract_worst = (
        (1 + extract["MaxAttempts"]) * timeouts[function_of("Extract")]
        + _max_waits(extract)
        + throttle_waits("Extract")
    )
    # The later steps stop calling the model once the budget is spent: after it, one
    # step's remaining retries fail at once (only their waits), then RecordFailure runs
    later = ("Route", "RebuildProfile", "Notify")
    after_budget = max(_max_waits(model_retry(state)) for state in later)
    record_failure = timeouts[function_of("RecordFailure")] + throttle_waits("RecordFailure")
    worst = max(extract_worst, PIPELINE_BUDGET_SECONDS) + after_budget + record_failure

    # Then even the worst run ends (recorded as failed) before Express cuts it off
    assert worst < EXPRESS_LIMIT_SECONDS
    # And each later step is told when its run started, so it can keep to the budget
    for state in later:
        payload = states[state]["Parameters"]["Payload"]
        assert payload["pipeline_started_at.$"] == "$$.Execution.StartTime"


def test_the_api_functions_resume_from_a_snapshot_through_their_alias(
    transformed: dict[str, Any],
) -> None:
    resources = transformed["Resources"]
    for function in ("ChatFunction", "MemoriesFunction", "RoomsFunction"):
        properties = resources[function]["Properties"]
        assert properties["SnapStart"] == {"ApplyOn": "PublishedVersions"}
        # And the HTTP API invokes the alias (a snapshot exists only for a published version)
        alias = resources[f"{function}Aliaslive"]["Properties"]
        assert alias["FunctionName"] == {"Ref": function}
        permissions = [
            resource["Properties"]
            for resource in resources.values()
            if resource["Type"] == "AWS::Lambda::Permission"
            and resource["Properties"]["FunctionName"] == {"Ref": f"{function}Aliaslive"}
        ]
        assert permissions, f"the HTTP API may not invoke {function}'s alias"


def test_every_function_gets_the_stacks_per_user_quota() -> None:
    template = load_template()
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    parameter = template["Parameters"]["UserTurnsPerMinute"]

    assert variables["CHATMEMORY_QUOTA_TURNS_PER_MINUTE"] == {"Ref": "UserTurnsPerMinute"}
    assert parameter["Default"] == 30 and parameter["MinValue"] == 0
    observed = template["Parameters"]["UserObservedTurnsPerMinute"]
    assert variables["CHATMEMORY_QUOTA_OBSERVED_PER_MINUTE"] == {
        "Ref": "UserObservedTurnsPerMinute"
    }
    assert observed["Default"] == 60 and observed["MinValue"] == 0
