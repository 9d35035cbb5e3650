"""template.yaml lints clean before and after the SAM transform and keeps the HTTP contract."""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from fnmatch import fnmatchcase
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint, lint_file
from cfnlint.match import Match
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from samtranslator.translator.transform import transform

from chatmemory.aws.stream_server import HEALTH_PATH
from chatmemory.domain.change_events import SILENT_OPS
from tests.support.template import ROOT, TEMPLATE, load_template, resource_properties


def _load_locking() -> ModuleType:
    """layers/dependencies/lock.py, the script `make lock` runs (not a package module)."""
    spec = importlib.util.spec_from_file_location(
        "chatmemory_locking", ROOT / "layers" / "dependencies" / "lock.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOCKING = _load_locking()

# The region the aws_env fixture sets; lint for the same one the transform runs in.
REGION = "eu-west-1"

# The manage page's files hold no data (the page signs in with the user's token).
PAGE_ROUTES = {("GET", "/"), ("GET", "/app.js"), ("GET", "/app.css"), ("GET", "/favicon.svg")}
PUBLIC_ROUTES = {("GET", "/v1/health"), ("GET", "/v1/openapi.json"), *PAGE_ROUTES}

# Every route of docs/api.md and the function that serves it.
ROUTES = {
    ("POST", "/v1/chat"): "ChatFunction",
    ("POST", "/v1/context"): "ChatFunction",
    ("POST", "/v1/recall"): "ChatFunction",
    ("POST", "/v1/observe"): "ChatFunction",
    ("GET", "/v1/memories"): "MemoriesFunction",
    ("POST", "/v1/memories"): "MemoriesFunction",
    ("DELETE", "/v1/memories"): "MemoriesFunction",
    ("GET", "/v1/memories/{memory_id}"): "MemoriesFunction",
    ("PATCH", "/v1/memories/{memory_id}"): "MemoriesFunction",
    ("DELETE", "/v1/memories/{memory_id}"): "MemoriesFunction",
    ("GET", "/v1/memories/{memory_id}/history"): "MemoriesFunction",
    ("GET", "/v1/memories/export"): "MemoriesFunction",
    ("POST", "/v1/memories/import"): "MemoriesFunction",
    ("GET", "/v1/memory/settings"): "MemoriesFunction",
    ("PUT", "/v1/memory/settings"): "MemoriesFunction",
    ("GET", "/v1/notices"): "MemoriesFunction",
    ("POST", "/v1/notices/{notice_id}/undo"): "MemoriesFunction",
    ("DELETE", "/v1/conversations"): "MemoriesFunction",
    ("DELETE", "/v1/conversations/{conversation_id}"): "MemoriesFunction",
    ("GET", "/v1/health"): "MemoriesFunction",
    ("ANY", "/{proxy+}"): "MemoriesFunction",  # unknown route → 404, wrong method → 405
    ("GET", "/v1/openapi.json"): "MemoriesFunction",
    ("POST", "/v1/rooms"): "RoomsFunction",
    ("GET", "/v1/rooms/{room_id}"): "RoomsFunction",
    ("POST", "/v1/rooms/{room_id}/members"): "RoomsFunction",
    ("DELETE", "/v1/rooms/{room_id}/members/{user_id}"): "RoomsFunction",
    ("POST", "/v1/rooms/{room_id}/messages"): "RoomsFunction",
    ("GET", "/v1/rooms/{room_id}/context"): "RoomsFunction",
    ("POST", "/v1/rooms/{room_id}/turn"): "RoomsFunction",
    **dict.fromkeys(PAGE_ROUTES, "WebFunction"),
}

# sam package uploads local folders and swaps in s3:// URIs; the bare transform needs those.
LOCAL_URI_PROPERTIES = ("CodeUri", "ContentUri", "DefinitionUri")


class _NoManagedPolicies:
    """Stands in for samtranslator's IAM lookup: the template names no managed policies itself."""

    def load(self) -> dict[str, str]:
        return {}


def _with_s3_placeholders(template: dict[str, Any]) -> dict[str, Any]:
    for logical_id, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        for key in LOCAL_URI_PROPERTIES:
            uri = properties.get(key)
            if isinstance(uri, str) and not uri.startswith("s3://"):
                properties[key] = f"s3://placeholder-bucket/{logical_id}.zip"
    return template


def _readable(matches: list[Match]) -> str:
    lines = []
    for match in matches:
        path = "/".join(str(part) for part in getattr(match, "path", []) or [])
        source = Path(match.filename).name if match.filename else "<transformed>"
        where = f"{source}:{match.linenumber}:{match.columnnumber}"
        lines.append(f"{match.rule.id} {match.message}\n    at {where} {path}".rstrip())
    return "\n".join(lines)


@pytest.fixture
def transformed(aws_env: None) -> dict[str, Any]:
    """template.yaml after the SAM transform: the CloudFormation that would be deployed."""
    source = _with_s3_placeholders(load_template())
    result: dict[str, Any] = transform(source, {}, _NoManagedPolicies())
    return result


def _routes_in_source() -> dict[tuple[str, str], str]:
    routes = {}
    for logical_id, resource in load_template()["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "HttpApi":
                props = event["Properties"]
                routes[(props["Method"].upper(), props["Path"])] = logical_id
    return routes


def _effective_function_property(name: str) -> dict[str, Any]:
    """Each function's value of a property, the function's own or else the Globals one."""
    template = load_template()
    default = template.get("Globals", {}).get("Function", {}).get(name)
    return {
        logical_id: resource["Properties"].get(name, default)
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


def _python_version(runtime: str) -> tuple[int, ...]:
    return tuple(int(part) for part in runtime.removeprefix("python").split("."))


def _table() -> dict[str, Any]:
    properties: dict[str, Any] = load_template()["Resources"]["MemoryTable"]["Properties"]
    return properties


# --- lint --------------------------------------------------------------------------


def test_template_as_written_passes_cfn_lint() -> None:
    # Given template.yaml as committed
    # When cfn-lint checks it (SAM resources against SAM's own schemas)
    matches = lint_file(TEMPLATE, config=ManualArgs(regions=[REGION]))

    # Then it reports nothing, errors and warnings alike
    if matches:
        pytest.fail(_readable(matches), pytrace=False)


def test_template_after_the_sam_transform_passes_cfn_lint(transformed: dict[str, Any]) -> None:
    # Given the CloudFormation the SAM transform produces (where bad refs inside
    # AWS::Serverless::* resources and circular dependencies first become visible)
    text = json.dumps(transformed, indent=2)

    # When cfn-lint checks it; W3037 misreads some actions SAM's policy templates grant
    matches = lint(text, config=ManualArgs(regions=[REGION], ignore_checks=["W3037"]))

    # Then it reports nothing
    if matches:
        pytest.fail(_readable(matches), pytrace=False)


# --- the API -----------------------------------------------------------------------


def test_every_api_route_is_declared_on_the_function_that_serves_it() -> None:
    assert _routes_in_source() == ROUTES


def test_the_default_authorizer_verifies_jwts_from_the_configured_issuer_and_audience() -> None:
    auth = load_template()["Resources"]["HttpApi"]["Properties"]["Auth"]
    authorizer = auth["Authorizers"][auth["DefaultAuthorizer"]]

    assert authorizer["IdentitySource"] == "$request.header.Authorization"
    assert authorizer["JwtConfiguration"] == {
        "issuer": {"Ref": "JwtIssuer"},
        "audience": {"Ref": "JwtAudience"},
    }


def test_only_health_openapi_and_the_page_are_reachable_without_a_token(
    transformed: dict[str, Any],
) -> None:
    # Given the OpenAPI body API Gateway receives after the transform
    api = transformed["Resources"]["HttpApi"]["Properties"]["Body"]

    # When we read which authorizer guards each route
    security = {
        (method.upper().replace("X-AMAZON-APIGATEWAY-ANY-METHOD", "ANY"), path): operation.get(
            "security"
        )
        for path, operations in api["paths"].items()
        for method, operation in operations.items()
    }

    # Then the public routes opt out and every other route demands the JWT authorizer
    expected = {
        route: [{"NONE": []}] if route in PUBLIC_ROUTES else [{"JwtAuthorizer": []}]
        for route in ROUTES
    }
    assert security == expected


# --- functions and layers ----------------------------------------------------------


def test_every_function_runs_on_python_3_12_or_newer() -> None:
    runtimes = _effective_function_property("Runtime")

    assert runtimes
    old = {
        name: runtime for name, runtime in runtimes.items() if _python_version(runtime) < (3, 12)
    }
    assert not old


def test_layers_are_built_for_the_functions_runtime() -> None:
    # Given the runtime the functions run on
    runtimes = set(_effective_function_property("Runtime").values())

    # When we read how each layer is built and which runtimes it declares
    layers = {
        logical_id: resource
        for logical_id, resource in load_template()["Resources"].items()
        if resource["Type"] == "AWS::Serverless::LayerVersion"
    }

    # Then a wheel built for one Python is never loaded by another
    assert set(layers) == {"SharedCodeLayer", "DependenciesLayer"}
    assert {layers["SharedCodeLayer"]["Metadata"]["BuildMethod"]} == runtimes
    for layer in layers.values():
        assert set(layer["Properties"]["CompatibleRuntimes"]) >= runtimes
    # And the dependencies are the lock's wheels for that Python and architecture
    assert layers["DependenciesLayer"]["Metadata"]["BuildMethod"] == "makefile"
    build = (ROOT / "layers" / "dependencies" / "Makefile").read_text()
    (runtime,) = runtimes
    assert f"--python-version {runtime.removeprefix('python')}" in build
    assert "--platform manylinux2014_aarch64" in build
    assert layers["DependenciesLayer"]["Properties"]["CompatibleArchitectures"] == ["arm64"]


def test_every_function_logs_to_a_group_with_the_configured_retention() -> None:
    resources = load_template()["Resources"]
    logging = _effective_function_property("LoggingConfig")

    for function, config in logging.items():
        assert config, f"{function} has no LoggingConfig"
        group = resources[config["LogGroup"]["Ref"]]
        assert group["Type"] == "AWS::Logs::LogGroup"
        assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not an exact pin"
            pins[canonicalize_name(name)] = version
    return pins


def test_the_layer_ships_exactly_the_locked_versions_the_tests_run_against() -> None:
    # Given the lock and the layer's pins
    lock = _pins(ROOT / "requirements.lock")
    layer = _pins(ROOT / "layers" / "dependencies" / "requirements.txt")

    # Then every layer pin is the lock's version of that package
    assert {name: lock.get(name) for name in layer} == layer
    # And the tests run against the lock: every locked package is installed at its version
    installed = {
        canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions()
    }
    assert {name: installed.get(name) for name in lock} == lock


def test_the_layer_holds_the_whole_runtime_closure_and_nothing_the_runtime_has() -> None:
    layer = set(_pins(ROOT / "layers" / "dependencies" / "requirements.txt"))

    # Exactly the packages the functions need on Lambda (the layer installs with --no-deps)
    assert LOCKING.runtime_closure() == layer
    # boto3 comes from the runtime, opensearch-py's gRPC transport is never imported
    assert not layer & {"boto3", "botocore", "s3transfer", "grpcio", "protobuf"}
    # And every runtime dependency of the project is there, pinned
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    needed = {canonicalize_name(Requirement(pin).name) for pin in project}
    assert needed - LOCKING.RUNTIME_PROVIDED <= layer


# --- the table ---------------------------------------------------------------------


def test_table_bills_per_request() -> None:
    assert _table()["BillingMode"] == "PAY_PER_REQUEST"


def test_table_expires_items_through_the_ttl_attribute() -> None:
    assert _table()["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}


def test_table_can_be_restored_to_a_point_in_time() -> None:
    assert _table()["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_table_is_encrypted_at_rest() -> None:
    assert _table()["SSESpecification"] == {"SSEEnabled": True}


# --- vector search -----------------------------------------------------------------

# A real stack id's shape; the name takes the first block of its UUID.
STACK_ID = (
    "arn:aws:cloudformation:eu-west-1:123456789012:stack/"
    "Chat-Memory-Prod/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
)
# Serverless collection and policy names (CreateCollection / CreateSecurityPolicy).
SERVERLESS_NAME = re.compile(r"^[a-z][a-z0-9-]{2,31}$")
# Every function that reads or writes memory vectors.
FUNCTIONS = (
    "ChatFunction",
    "ChatStreamFunction",
    "MemoriesFunction",
    "ExtractFunction",
    "RouteFunction",
    "IdleFunction",  # a quiet room's writes index what they learn about people
    "FoldFunction",  # a uses job embeds a memory's own uses and indexes them (a fold, none)
    "PurgeVectorsFunction",
    "ReindexFunction",  # an operator's re-index fills a new index
)


def _sub(argument: Any, resolve: Any) -> str:
    text, variables = argument
    for key, variable in variables.items():
        text = text.replace("${" + key + "}", resolve(variable))
    return str(text)


# The intrinsics the vector resources use, evaluated as CloudFormation would.
_INTRINSICS: dict[str, Any] = {
    "Fn::Join": lambda argument, resolve: argument[0].join(resolve(argument[1])),
    "Fn::Select": lambda argument, resolve: resolve(argument[1])[int(argument[0])],
    "Fn::Split": lambda argument, resolve: resolve(argument[1]).split(argument[0]),
    "Fn::GetAtt": lambda argument, resolve: f"<{argument[0]}.{argument[1]}>",
    "Fn::Sub": _sub,
}


def _resolve(value: Any, stack_id: str = STACK_ID) -> Any:
    """The value with its intrinsics evaluated for a stack; role ARNs become placeholders."""

    def resolve(item: Any) -> Any:
        return _resolve(item, stack_id)

    if isinstance(value, list):
        return [resolve(item) for item in value]
    if not isinstance(value, dict):
        return value
    if value == {"Ref": "AWS::StackId"}:
        return stack_id
    if len(value) == 1 and next(iter(value)) in _INTRINSICS:
        ((name, argument),) = value.items()
        return _INTRINSICS[name](argument, resolve)
    return {key: resolve(item) for key, item in value.items()}


def _resources_of_type(kind: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in load_template()["Resources"].items()
        if resource["Type"] == kind
    }


def _security_policy(policy_type: str) -> dict[str, Any]:
    (policy,) = [
        _resolve(resource["Properties"])
        for resource in _resources_of_type("AWS::OpenSearchServerless::SecurityPolicy").values()
        if resource["Properties"]["Type"] == policy_type
    ]
    return policy


def _collection_name() -> str:
    name: str = _resolve(resource_properties("VectorCollection")["Name"])
    return name


def test_the_vector_collection_is_a_vectorsearch_collection() -> None:
    collections = _resources_of_type("AWS::OpenSearchServerless::Collection")

    assert list(collections) == ["VectorCollection"]
    assert collections["VectorCollection"]["Properties"]["Type"] == "VECTORSEARCH"


@pytest.mark.parametrize(
    "stack_id",
    [
        STACK_ID,
        # a stack id whose UUID starts with a digit, under a 128-character stack name
        "arn:aws:cloudformation:eu-west-1:123456789012:stack/"
        f"{'X' * 128}/9f8e7d6c-0000-4000-8000-000000000000",
    ],
)
def test_collection_and_policy_names_keep_to_the_serverless_name_rules(stack_id: str) -> None:
    # Given every OpenSearch Serverless resource's name, evaluated for a stack
    names = [
        _resolve(resource["Properties"]["Name"], stack_id)
        for kind in (
            "AWS::OpenSearchServerless::Collection",
            "AWS::OpenSearchServerless::SecurityPolicy",
            "AWS::OpenSearchServerless::AccessPolicy",
        )
        for resource in _resources_of_type(kind).values()
    ]

    # Then each is 3-32 lowercase characters starting with a letter, and they differ
    assert len(names) == 4
    assert all(SERVERLESS_NAME.match(name) for name in names), names
    assert len(set(names)) == 4


def test_the_collection_is_encrypted_with_an_aws_owned_key_before_it_exists() -> None:
    policy = json.loads(_security_policy("encryption")["Policy"])

    assert policy == {
        "Rules": [{"ResourceType": "collection", "Resource": [f"collection/{_collection_name()}"]}],
        "AWSOwnedKey": True,
    }
    assert load_template()["Resources"]["VectorCollection"]["DependsOn"] == "VectorEncryptionPolicy"


def test_the_network_policy_opens_only_the_collection_endpoint() -> None:
    policy = json.loads(_security_policy("network")["Policy"])

    assert policy == [
        {
            "Rules": [
                {"ResourceType": "collection", "Resource": [f"collection/{_collection_name()}"]}
            ],
            "AllowFromPublic": True,
        }
    ]


def test_the_data_access_policy_lets_only_the_functions_use_the_collections_indexes() -> None:
    (access,) = _resources_of_type("AWS::OpenSearchServerless::AccessPolicy").values()
    properties = _resolve(access["Properties"])

    assert properties["Type"] == "data"
    assert json.loads(properties["Policy"]) == [
        {
            "Rules": [
                {
                    "ResourceType": "index",
                    "Resource": [f"index/{_collection_name()}/*"],
                    "Permission": [
                        "aoss:CreateIndex",
                        "aoss:DescribeIndex",
                        "aoss:ReadDocument",
                        "aoss:WriteDocument",
                    ],
                }
            ],
            "Principal": [f"<{function}Role.Arn>" for function in FUNCTIONS],
        }
    ]


def test_the_functions_get_the_collection_endpoint_and_index_name() -> None:
    for function in FUNCTIONS:
        variables = resource_properties(function)["Environment"]["Variables"]

        assert variables["CHATMEMORY_OPENSEARCH_ENDPOINT"] == {
            "Fn::GetAtt": ["VectorCollection", "CollectionEndpoint"]
        }
        assert variables["CHATMEMORY_OPENSEARCH_INDEX"] == "memories"


def test_the_functions_may_call_the_collections_data_plane() -> None:
    statement = {
        "Effect": "Allow",
        "Action": "aoss:APIAccessAll",
        "Resource": {"Fn::GetAtt": ["VectorCollection", "Arn"]},
    }
    for function in FUNCTIONS:
        policies = resource_properties(function)["Policies"]

        assert any(statement in policy.get("Statement", []) for policy in policies), function


# --- folding: the fold queue ---------------------------------------------------------

CHAT_FUNCTIONS = ("ChatFunction", "ChatStreamFunction")


def _statements(
    transformed: dict[str, Any], role: str, parameters: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The role's statements as deployed with these parameter values (the defaults for the
    rest): a policy under a condition counts only when its condition holds."""
    policies = transformed["Resources"][role]["Properties"].get("Policies", [])
    chosen = [_resolved(policy, transformed, parameters or {}) for policy in policies]
    return [
        statement
        for policy in chosen
        if policy is not None
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def _resolved(
    value: Any, template: dict[str, Any], parameters: dict[str, str]
) -> dict[str, Any] | None:
    """A policy, or the branch of its Fn::If the condition picks (None: AWS::NoValue)."""
    if isinstance(value, dict) and "Fn::If" in value:
        condition, then, otherwise = value["Fn::If"]
        picked = (
            then if _holds(template["Conditions"][condition], template, parameters) else otherwise
        )
        return _resolved(picked, template, parameters)
    if value == {"Ref": "AWS::NoValue"}:
        return None
    resolved: dict[str, Any] = value
    return resolved


def _holds(condition: Any, template: dict[str, Any], parameters: dict[str, str]) -> bool:
    """A condition of Fn::Equals, Fn::Not and Ref to parameters, as CloudFormation reads it."""
    if "Fn::Not" in condition:
        return not _holds(condition["Fn::Not"][0], template, parameters)
    if "Condition" in condition:
        return _holds(template["Conditions"][condition["Condition"]], template, parameters)
    left, right = (_parameter(side, template, parameters) for side in condition["Fn::Equals"])
    return bool(left == right)


def _parameter(value: Any, template: dict[str, Any], parameters: dict[str, str]) -> Any:
    if isinstance(value, dict) and "Ref" in value:
        name = value["Ref"]
        return parameters.get(name, template["Parameters"][name].get("Default"))
    return value


def _allows(statement: dict[str, Any], action: str) -> bool:
    """Whether a statement's actions (IAM wildcards included) cover `action`."""
    patterns = statement["Action"]
    patterns = [patterns] if isinstance(patterns, str) else patterns
    return any(fnmatchcase(action, pattern) for pattern in patterns)


def test_the_fold_queue_sets_failing_jobs_aside_in_a_dead_letter_queue() -> None:
    queue = resource_properties("FoldQueue")
    dead_letters = resource_properties("FoldDeadLetterQueue")

    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["FoldDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 5,
    }
    assert dead_letters["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_the_fold_queues_are_encrypted_at_rest() -> None:
    for queue in ("FoldQueue", "FoldDeadLetterQueue"):
        assert resource_properties(queue)["SqsManagedSseEnabled"] is True, queue


def test_a_fold_job_stays_hidden_while_the_fold_function_may_still_run_it() -> None:
    # Lambda refuses a queue whose visibility timeout is below the function's timeout,
    # and advises six times it so throttled batches can be retried.
    visibility = resource_properties("FoldQueue")["VisibilityTimeout"]
    timeout = _effective_function_property("Timeout")["FoldFunction"]

    assert visibility >= 6 * timeout


def test_the_fold_function_reports_batch_item_failures() -> None:
    events = resource_properties("FoldFunction")["Events"]

    (event,) = events.values()
    assert event["Type"] == "SQS"
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["FoldQueue", "Arn"]}
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert event["Properties"]["BatchSize"] == 10


def test_the_chat_functions_send_folds_to_the_fold_queue(transformed: dict[str, Any]) -> None:
    for function in CHAT_FUNCTIONS:
        # Given the chat path's configuration
        variables = resource_properties(function)["Environment"]["Variables"]

        # Then it queues folds on SQS, at the fold queue's URL
        assert variables["CHATMEMORY_JOBS"] == "sqs", function
        assert variables["CHATMEMORY_FOLD_QUEUE_URL"] == {"Ref": "FoldQueue"}, function
        # And its role may send there
        sends = [
            statement
            for statement in _statements(transformed, f"{function}Role")
            if _allows(statement, "sqs:SendMessage")
        ]
        assert any("FoldQueue" in json.dumps(statement["Resource"]) for statement in sends)
        # (the idle timer is the one other queue the chat path sends to)
        assert all(
            any(queue in json.dumps(statement["Resource"]) for queue in ("FoldQueue", "IdleQueue"))
            for statement in sends
        )


def test_the_fold_function_only_consumes_the_fold_queue(transformed: dict[str, Any]) -> None:
    statements = _statements(transformed, "FoldFunctionRole")

    assert not any(_allows(statement, "sqs:SendMessage") for statement in statements)


def test_the_memories_function_queues_uses_jobs_on_the_fold_queue_without_the_model_key(
    transformed: dict[str, Any],
) -> None:
    # Given the memories routes' configuration
    properties = resource_properties("MemoriesFunction")
    variables = properties["Environment"]["Variables"]

    # Then a typed or corrected memory's uses job goes on SQS, at the fold queue's URL,
    # for the model the stack runs (so one is queued at all)
    assert variables["CHATMEMORY_JOBS"] == "sqs"
    assert variables["CHATMEMORY_FOLD_QUEUE_URL"] == {"Ref": "FoldQueue"}
    assert variables["CHATMEMORY_MODEL"] == "claude"
    # And its role may send there and nowhere else
    sends = [
        statement
        for statement in _statements(transformed, "MemoriesFunctionRole")
        if _allows(statement, "sqs:SendMessage")
    ]
    assert sends and all("FoldQueue" in json.dumps(s["Resource"]) for s in sends)
    # But it never calls the model, so it neither names nor may read the model's key: the
    # one secret it may read is the deployment's key for memory ids
    assert "CHATMEMORY_ANTHROPIC_SECRET_NAME" not in variables
    secrets = [
        p["AWSSecretsManagerGetSecretValuePolicy"]["SecretArn"]
        for p in properties["Policies"]
        if "AWSSecretsManagerGetSecretValuePolicy" in p
    ]
    assert secrets == [{"Ref": "IdentitySecret"}]


MAKES_MEMORIES = (
    "ChatFunction",
    "ChatStreamFunction",
    "MemoriesFunction",
    "RoomsFunction",
    "IdleFunction",
    "RouteFunction",
)


@pytest.mark.parametrize("function", MAKES_MEMORIES)
def test_every_function_that_makes_memories_keys_their_ids_with_the_deployments_secret(
    function: str,
) -> None:
    # Given a function whose writes derive memory ids from a belief's words
    properties = resource_properties(function)

    # Then it names the deployment's generated key and may read it
    assert properties["Environment"]["Variables"]["CHATMEMORY_IDENTITY_SECRET_NAME"] == {
        "Ref": "IdentitySecret"
    }
    assert {"AWSSecretsManagerGetSecretValuePolicy": {"SecretArn": {"Ref": "IdentitySecret"}}} in (
        properties["Policies"]
    )
    # and the key is generated at deploy time and kept with the table
    secret = load_template()["Resources"]["IdentitySecret"]
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32
    assert secret["DeletionPolicy"] == "Retain"


def test_the_fold_function_may_embed_with_titan_and_read_the_model_key() -> None:
    # (its vector collection access is checked with the other FUNCTIONS above)
    properties = resource_properties("FoldFunction")
    titan = {
        "Effect": "Allow",
        "Action": "bedrock:InvokeModel",
        "Resource": {
            "Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/"
            "amazon.titan-embed-text-v2:0"
        },
    }

    assert properties["Environment"]["Variables"]["CHATMEMORY_ANTHROPIC_SECRET_NAME"] == {
        "Ref": "AnthropicSecretName"
    }
    assert any(titan in policy.get("Statement", []) for policy in properties["Policies"])


# --- the streaming endpoint --------------------------------------------------------


def test_the_stream_function_has_a_function_url_in_response_stream_mode() -> None:
    stream = resource_properties("ChatStreamFunction")
    outputs = load_template()["Outputs"]

    assert stream["FunctionUrlConfig"]["AuthType"] == "NONE"
    assert stream["FunctionUrlConfig"]["InvokeMode"] == "RESPONSE_STREAM"
    assert outputs["ChatStreamUrl"]["Value"] == {
        "Fn::GetAtt": ["ChatStreamFunctionUrl", "FunctionUrl"]
    }


def test_the_stream_function_runs_our_server_behind_the_lambda_web_adapter() -> None:
    stream = resource_properties("ChatStreamFunction")
    variables = stream["Environment"]["Variables"]
    run_sh = ROOT / "functions" / "chat_stream" / "run.sh"

    # The adapter wraps the runtime, starts run.sh and streams what the server writes
    assert stream["Handler"] == "run.sh"
    assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert variables["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert variables["PORT"] == "8080"
    # Its readiness check asks the path the server answers
    assert variables["AWS_LWA_READINESS_CHECK_PATH"] == HEALTH_PATH
    # run.sh is executable and starts the stream server
    assert run_sh.stat().st_mode & 0o111
    assert "exec python -m chatmemory.aws.stream_server" in run_sh.read_text()


def test_the_web_adapter_layer_is_the_documented_arm64_layer_of_the_stacks_region() -> None:
    template = load_template()
    parameter = template["Parameters"]["LambdaWebAdapterLayerArn"]
    (adapter,) = [
        layer for layer in resource_properties("ChatStreamFunction")["Layers"] if "Fn::If" in layer
    ]

    condition, documented, configured = adapter["Fn::If"]
    assert parameter["Default"] == ""
    assert template["Conditions"][condition] == {
        "Fn::Equals": [{"Ref": "LambdaWebAdapterLayerArn"}, ""]
    }
    assert documented == {
        "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:753240598075:layer:"
        "LambdaAdapterLayerArm64:26"
    }
    assert configured == {"Ref": "LambdaWebAdapterLayerArn"}
    assert _effective_function_property("Architectures")["ChatStreamFunction"] == ["arm64"]


def test_the_stream_function_has_everything_the_chat_function_has() -> None:
    # The same read path through another door: whatever configuration and access the chat
    # function gets (store, index, model key, background queues), the stream function needs.
    chat = resource_properties("ChatFunction")
    stream = resource_properties("ChatStreamFunction")

    chat_variables = chat["Environment"]["Variables"]
    stream_variables = stream["Environment"]["Variables"]
    assert {name: stream_variables.get(name) for name in chat_variables} == chat_variables
    missing = [policy for policy in chat["Policies"] if policy not in stream["Policies"]]
    assert not missing


def test_the_stream_function_verifies_tokens_like_the_http_api_authorizer() -> None:
    # Given what the HTTP API's JWT authorizer checks
    auth = load_template()["Resources"]["HttpApi"]["Properties"]["Auth"]
    jwt = auth["Authorizers"][auth["DefaultAuthorizer"]]["JwtConfiguration"]

    # When we read what the stream function is told to check
    variables = resource_properties("ChatStreamFunction")["Environment"]["Variables"]

    # Then it is the same issuer and the same audiences
    assert variables["CHATMEMORY_JWT_ISSUER"] == jwt["issuer"] == {"Ref": "JwtIssuer"}
    assert variables["CHATMEMORY_JWT_AUDIENCE"] == {"Fn::Join": [",", jwt["audience"]]}


# --- the write pipeline ------------------------------------------------------------

PIPELINE_STEPS = {
    # DefinitionSubstitutions key → the function it names
    "ExtractFunctionArn": "ExtractFunction",
    "RouteFunctionArn": "RouteFunction",
    "RebuildProfileFunctionArn": "RebuildProfileFunction",
    "NotifyFunctionArn": "NotifyFunction",
    "RecordFailureFunctionArn": "RecordFailureFunction",
}
TRIGGERS = ("IdleFunction", "SweepFunction")


def test_the_write_pipeline_is_an_express_state_machine_that_logs_and_traces() -> None:
    # Given the write pipeline as declared
    machine = resource_properties("WritePipeline")
    resources = load_template()["Resources"]

    # Then it runs as EXPRESS (about 7x cheaper than STANDARD at its volume)
    assert resources["WritePipeline"]["Type"] == "AWS::Serverless::StateMachine"
    assert machine["Type"] == "EXPRESS"
    # And, Express keeping no history of its own, every execution is logged in full
    logging = machine["Logging"]
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is True
    (destination,) = logging["Destinations"]
    group_ref = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"]
    group = resources[group_ref[0]]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    # And it is traced with X-Ray
    assert machine["Tracing"] == {"Enabled": True}


def test_the_write_pipelines_role_may_deliver_its_logs(transformed: dict[str, Any]) -> None:
    statements = _statements(transformed, "WritePipelineRole")

    for action in ("logs:CreateLogDelivery", "logs:PutResourcePolicy", "logs:DescribeLogGroups"):
        assert any(_allows(statement, action) for statement in statements), action


def test_every_placeholder_in_the_shipped_asl_has_a_definition_substitution() -> None:
    # Given the definition file the template ships
    machine = resource_properties("WritePipeline")
    definition = ROOT / machine["DefinitionUri"]
    assert definition.is_file()
    text = definition.read_text()
    json.loads(text)  # valid JSON as written, before any substitution

    # When we read its ${…} placeholders
    placeholders = set(re.findall(r"\$\{([^}]+)\}", text))

    # Then each has a substitution, each substitution is used, and each names a step's ARN
    assert placeholders == set(machine["DefinitionSubstitutions"]) == set(PIPELINE_STEPS)
    for key, function in PIPELINE_STEPS.items():
        assert machine["DefinitionSubstitutions"][key] == {"Fn::GetAtt": [function, "Arn"]}


def test_the_write_pipeline_may_invoke_exactly_its_step_functions() -> None:
    policies = resource_properties("WritePipeline")["Policies"]

    invoked = [
        policy["LambdaInvokePolicy"]["FunctionName"]
        for policy in policies
        if "LambdaInvokePolicy" in policy
    ]
    assert sorted(invoked, key=str) == sorted(
        ({"Ref": function} for function in PIPELINE_STEPS.values()), key=str
    )


def test_each_pipeline_step_runs_its_own_handler_folder() -> None:
    for function in PIPELINE_STEPS.values():
        properties = resource_properties(function)
        folder = ROOT / properties["CodeUri"]

        assert properties["CodeUri"].startswith("functions/pipeline/"), function
        assert properties["Handler"] == "app.lambda_handler", function
        assert (folder / "app.py").is_file(), function


def test_the_model_steps_may_read_the_model_key_and_the_table() -> None:
    # (their vector collection access is checked with the other FUNCTIONS above)
    for function in ("ExtractFunction", "RouteFunction"):
        properties = resource_properties(function)
        policies = properties["Policies"]

        assert properties["Environment"]["Variables"]["CHATMEMORY_ANTHROPIC_SECRET_NAME"] == {
            "Ref": "AnthropicSecretName"
        }
        assert any("AWSSecretsManagerGetSecretValuePolicy" in policy for policy in policies)
        assert any("DynamoDBCrudPolicy" in policy for policy in policies)


def test_the_idle_timer_waits_ten_minutes_by_default_within_sqs_limits() -> None:
    # Given the idle parameter and the queue that carries the timers
    parameter = load_template()["Parameters"]["IdleSeconds"]
    queue = resource_properties("IdleQueue")

    # Then a conversation must stay quiet 600 s by default, never past SQS's 900 s cap
    assert parameter["Default"] == 600
    assert parameter["MaxValue"] <= 900
    assert queue["DelaySeconds"] == {"Ref": "IdleSeconds"}
    # And the chat path and the check agree on it
    for function in ("ChatFunction", *TRIGGERS):
        variables = resource_properties(function)["Environment"]["Variables"]
        assert variables["CHATMEMORY_IDLE_SECONDS"] == {"Ref": "IdleSeconds"}, function


def test_the_idle_queue_sets_failing_checks_aside_in_a_dead_letter_queue() -> None:
    queue = resource_properties("IdleQueue")
    dead_letters = resource_properties("IdleDeadLetterQueue")

    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["IdleDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 5,
    }
    assert dead_letters["MessageRetentionPeriod"] == 14 * 24 * 3600
    for name in ("IdleQueue", "IdleDeadLetterQueue"):
        assert resource_properties(name)["SqsManagedSseEnabled"] is True, name


def test_an_idle_check_stays_hidden_while_the_idle_function_may_still_run_it() -> None:
    visibility = resource_properties("IdleQueue")["VisibilityTimeout"]
    timeout = _effective_function_property("Timeout")["IdleFunction"]

    assert visibility >= 6 * timeout


def test_the_idle_function_consumes_the_idle_queue_with_partial_batch_failures() -> None:
    (event,) = resource_properties("IdleFunction")["Events"].values()

    assert event["Type"] == "SQS"
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["IdleQueue", "Arn"]}
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_sweep_runs_daily() -> None:
    (event,) = resource_properties("SweepFunction")["Events"].values()

    assert event["Type"] == "Schedule"
    assert event["Properties"]["Schedule"] == "rate(1 day)"


def test_the_triggers_start_the_write_pipeline_on_step_functions(
    transformed: dict[str, Any],
) -> None:
    for function in TRIGGERS:
        # Given the trigger's configuration
        variables = resource_properties(function)["Environment"]["Variables"]

        # Then it starts executions of the write pipeline, and may do so
        assert variables["CHATMEMORY_PIPELINE"] == "stepfunctions", function
        assert variables["CHATMEMORY_WRITE_PIPELINE_ARN"] == {"Ref": "WritePipeline"}, function
        starts = [
            statement
            for statement in _statements(transformed, f"{function}Role")
            if _allows(statement, "states:StartExecution")
        ]
        assert starts, function
        assert any("WritePipeline" in json.dumps(statement["Resource"]) for statement in starts)
        for statement in starts:  # and no other state machine than the two pipelines
            resource = json.dumps(statement["Resource"])
            assert "WritePipeline" in resource or "PurgePipeline" in resource, function


def test_the_chat_path_arms_the_idle_timer(transformed: dict[str, Any]) -> None:
    # Given the chat function's configuration
    variables = resource_properties("ChatFunction")["Environment"]["Variables"]

    # Then it knows the idle queue and may send to it
    assert variables["CHATMEMORY_IDLE_QUEUE_URL"] == {"Ref": "IdleQueue"}
    sends = [
        statement
        for statement in _statements(transformed, "ChatFunctionRole")
        if _allows(statement, "sqs:SendMessage")
    ]
    assert any("IdleQueue" in json.dumps(statement["Resource"]) for statement in sends)


# --- the rooms API -------------------------------------------------------------------


def test_the_rooms_function_arms_each_rooms_quiet_timer_on_the_idle_queue(
    transformed: dict[str, Any],
) -> None:
    # Given the rooms function's configuration
    variables = resource_properties("RoomsFunction")["Environment"]["Variables"]

    # Then every stored message re-arms the room's timer on the idle queue, after the same
    # quiet spell the chat path waits for
    assert variables["CHATMEMORY_JOBS"] == "sqs"
    assert variables["CHATMEMORY_IDLE_QUEUE_URL"] == {"Ref": "IdleQueue"}
    assert variables["CHATMEMORY_IDLE_SECONDS"] == {"Ref": "IdleSeconds"}
    # And its role may send there, and to no other queue (a room never folds)
    sends = [
        statement
        for statement in _statements(transformed, "RoomsFunctionRole")
        if _allows(statement, "sqs:SendMessage")
    ]
    assert sends
    assert all("IdleQueue" in json.dumps(statement["Resource"]) for statement in sends)


def test_a_persona_takes_its_turn_with_the_model_key_and_the_table() -> None:
    properties = resource_properties("RoomsFunction")

    assert properties["Environment"]["Variables"]["CHATMEMORY_ANTHROPIC_SECRET_NAME"] == {
        "Ref": "AnthropicSecretName"
    }
    assert any("AWSSecretsManagerGetSecretValuePolicy" in p for p in properties["Policies"])
    assert any("DynamoDBCrudPolicy" in p for p in properties["Policies"])


def test_the_rooms_routes_have_no_gateway_scopes_so_a_users_own_token_reaches_them() -> None:
    # The function decides what each caller may do (api/rooms_routes.py); a scope on the
    # route would shut out a user's token, which has none, from their own private chat.
    events = resource_properties("RoomsFunction")["Events"].values()

    assert all("AuthorizationScopes" not in event["Properties"].get("Auth", {}) for event in events)


# --- the purge pipeline and the alarms --------------------------------------------------

PURGE_STEPS = {
    "PurgePlanFunctionArn": "PurgePlanFunction",
    "PurgeVectorsFunctionArn": "PurgeVectorsFunction",
    "PurgeRowsFunctionArn": "PurgeRowsFunction",
    "PurgeProfileFunctionArn": "PurgeProfileFunction",
    "PurgeSummaryFunctionArn": "PurgeSummaryFunction",
    "PurgeMarkFunctionArn": "PurgeMarkFunction",
}


def test_the_purge_is_a_standard_state_machine_whose_every_run_is_kept() -> None:
    # Given the purge pipeline as declared
    machine = resource_properties("PurgePipeline")
    resources = load_template()["Resources"]

    # Then it is STANDARD: its history is in the console and a failed run can be redriven
    assert resources["PurgePipeline"]["Type"] == "AWS::Serverless::StateMachine"
    assert machine["Type"] == "STANDARD"
    # And its failures are logged (ids only) to a group with the configured retention
    logging = machine["Logging"]
    assert logging["Level"] in {"ERROR", "ALL"}
    (destination,) = logging["Destinations"]
    group = resources[destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]]
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert machine["Tracing"] == {"Enabled": True}


def test_the_purge_may_invoke_exactly_its_steps_and_names_each_in_its_definition() -> None:
    machine = resource_properties("PurgePipeline")
    text = (ROOT / machine["DefinitionUri"]).read_text()
    json.loads(text)

    assert set(re.findall(r"\$\{([^}]+)\}", text)) == set(machine["DefinitionSubstitutions"])
    assert set(machine["DefinitionSubstitutions"]) == set(PURGE_STEPS)
    for key, function in PURGE_STEPS.items():
        assert machine["DefinitionSubstitutions"][key] == {"Fn::GetAtt": [function, "Arn"]}
        properties = resource_properties(function)
        assert properties["CodeUri"].startswith("functions/pipeline/"), function
        assert (ROOT / properties["CodeUri"] / "app.py").is_file(), function
    invoked = [
        policy["LambdaInvokePolicy"]["FunctionName"]
        for policy in machine["Policies"]
        if "LambdaInvokePolicy" in policy
    ]
    assert sorted(invoked, key=str) == sorted(
        ({"Ref": function} for function in PURGE_STEPS.values()), key=str
    )


def test_no_step_function_is_called_by_both_state_machines() -> None:
    # A handler knows its caller because it has one, never from the event's keys.
    def steps(machine: str) -> set[str]:
        substitutions = resource_properties(machine)["DefinitionSubstitutions"]
        return {value["Fn::GetAtt"][0] for value in substitutions.values()}

    assert not steps("WritePipeline") & steps("PurgePipeline")


def test_deletes_and_the_sweep_start_the_purge_on_step_functions(
    transformed: dict[str, Any],
) -> None:
    for function in ("MemoriesFunction", "SweepFunction"):
        variables = resource_properties(function)["Environment"]["Variables"]

        assert variables["CHATMEMORY_PURGE"] == "stepfunctions", function
        assert variables["CHATMEMORY_PURGE_PIPELINE_ARN"] == {"Ref": "PurgePipeline"}, function
        starts = [
            statement
            for statement in _statements(transformed, f"{function}Role")
            if _allows(statement, "states:StartExecution")
        ]
        assert any("PurgePipeline" in json.dumps(s["Resource"]) for s in starts), function


def test_the_summary_step_may_read_the_model_key() -> None:
    properties = resource_properties("PurgeSummaryFunction")

    assert properties["Environment"]["Variables"]["CHATMEMORY_ANTHROPIC_SECRET_NAME"] == {
        "Ref": "AnthropicSecretName"
    }
    assert any("AWSSecretsManagerGetSecretValuePolicy" in p for p in properties["Policies"])


def _alarms() -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in _resources_of_type("AWS::CloudWatch::Alarm").items()
    }


def test_a_failed_or_timed_out_pipeline_execution_raises_an_alarm() -> None:
    watched = {
        (alarm["MetricName"], alarm["Dimensions"][0]["Value"]["Ref"])
        for alarm in _alarms().values()
        if alarm["Namespace"] == "AWS/States"
    }

    assert ("ExecutionsFailed", "WritePipeline") in watched
    assert ("ExecutionsTimedOut", "WritePipeline") in watched
    assert ("ExecutionsFailed", "PurgePipeline") in watched


def test_a_dead_letter_queue_with_anything_in_it_raises_an_alarm() -> None:
    queues = {
        logical_id
        for logical_id, resource in _resources_of_type("AWS::SQS::Queue").items()
        if logical_id.endswith("DeadLetterQueue")
    }
    watched = {
        alarm["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
        for alarm in _alarms().values()
        if alarm["Namespace"] == "AWS/SQS"
        and alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
        and alarm["Threshold"] == 1
    }

    assert queues and watched == queues


def test_memories_left_without_vectors_raise_an_alarm_on_the_metric_the_sweep_counts() -> None:
    [alarm] = [a for a in _alarms().values() if a["MetricName"] == "SweepRowsWithoutVectors"]
    service = load_template()["Globals"]["Function"]["Environment"]["Variables"]

    assert alarm["Namespace"] == service["POWERTOOLS_METRICS_NAMESPACE"]
    assert alarm["Dimensions"] == [{"Name": "service", "Value": service["POWERTOOLS_SERVICE_NAME"]}]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    sweep = (ROOT / "functions" / "pipeline" / "sweep" / "app.py").read_text()
    assert 'count("SweepRowsWithoutVectors"' in sweep


def test_every_alarm_tells_the_alarm_topic_and_is_quiet_without_data() -> None:
    for logical_id, alarm in _alarms().items():
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}], logical_id
        assert alarm["TreatMissingData"] == "notBreaching", logical_id
        assert alarm["AlarmDescription"].strip(), logical_id
    subscription = load_template()["Resources"]["AlarmEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail"


# --- the nightly thread review ----------------------------------------------------------


def test_the_nightly_review_runs_every_night_on_the_table_alone() -> None:
    properties = resource_properties("NightlyFunction")
    (event,) = properties["Events"].values()

    # A scheduled rule, once a night, its own handler folder
    assert event["Type"] == "Schedule"
    assert (
        event["Properties"]["Schedule"].startswith("cron(")
        and "* * ? *" in event["Properties"]["Schedule"]
    )
    assert properties["CodeUri"] == "functions/pipeline/nightly/"
    assert (ROOT / properties["CodeUri"] / "app.py").is_file()
    # Pure code over the table: no model key, no vectors, no pipeline to start
    policies = properties["Policies"]
    assert policies == [{"DynamoDBCrudPolicy": {"TableName": {"Ref": "MemoryTable"}}}]
    assert "Environment" not in properties or "CHATMEMORY_ANTHROPIC_SECRET_NAME" not in str(
        properties.get("Environment")
    )


# --- the reranker: off by default ----------------------------------------------------


def test_the_reranker_is_off_unless_the_stack_turns_it_on(transformed: dict[str, Any]) -> None:
    for function in CHAT_FUNCTIONS:
        variables = resource_properties(function)["Environment"]["Variables"]
        assert variables["CHATMEMORY_RERANKER"] == {"Ref": "Reranker"}, function
        assert load_template()["Parameters"]["Reranker"]["Default"] == "none"
        default = _statements(transformed, f"{function}Role")
        assert not any(_allows(statement, "bedrock:Rerank") for statement in default), function


def test_a_stack_with_the_reranker_on_may_call_rerank_and_only_its_model(
    transformed: dict[str, Any],
) -> None:
    for function in CHAT_FUNCTIONS:
        on = _statements(transformed, f"{function}Role", {"Reranker": "bedrock"})

        rerank = [s for s in on if _allows(s, "bedrock:Rerank")]
        assert rerank and all(s["Effect"] == "Allow" for s in rerank), function
        model = [
            s
            for s in on
            if _allows(s, "bedrock:InvokeModel") and "RerankModelId" in json.dumps(s["Resource"])
        ]
        assert len(model) == 1, function


# --- change events -------------------------------------------------------------------


def _stream_event() -> dict[str, Any]:
    (event,) = resource_properties("ChangesFunction")["Events"].values()
    properties: dict[str, Any] = event["Properties"]
    assert event["Type"] == "DynamoDB"
    return properties


def test_the_table_streams_new_images_for_the_change_events() -> None:
    assert _table()["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}


def test_the_changes_function_reads_the_tables_stream_with_partial_batch_failures() -> None:
    stream = _stream_event()

    assert stream["Stream"] == {"Fn::GetAtt": ["MemoryTable", "StreamArn"]}
    assert stream["StartingPosition"] == "TRIM_HORIZON"
    assert stream["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # Retried until the record leaves the stream; what never got out is noted aside
    assert stream["MaximumRetryAttempts"] == -1
    assert stream["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": ["ChangesDeadLetterQueue", "Arn"]}}
    }


def test_the_stream_filter_passes_new_audit_items_of_the_ops_that_tell_a_change() -> None:
    (criterion,) = _stream_event()["FilterCriteria"]["Filters"]
    pattern = json.loads(criterion["Pattern"])

    # New items only, under the audit log's sort keys, and none of an op that tells nothing
    assert pattern["eventName"] == ["INSERT"]
    assert pattern["dynamodb"]["Keys"] == {"sk": {"S": [{"prefix": "EVT#"}]}}
    ((rule,),) = [pattern["dynamodb"]["NewImage"]["op"]["S"]]
    assert set(rule["anything-but"]) == {op.value for op in SILENT_OPS}


def test_the_changes_function_publishes_on_the_stacks_bus() -> None:
    variables = resource_properties("ChangesFunction")["Environment"]["Variables"]
    bus = load_template()["Resources"]["ChangeEventBus"]
    outputs = load_template()["Outputs"]

    assert bus["Type"] == "AWS::Events::EventBus"
    assert variables["CHATMEMORY_CHANGES"] == "eventbridge"
    assert variables["CHATMEMORY_EVENT_BUS"] == {"Ref": "ChangeEventBus"}
    assert outputs["ChangeEventBusName"]["Value"] == {"Ref": "ChangeEventBus"}
    assert outputs["ChangeEventBusArn"]["Value"] == {"Fn::GetAtt": ["ChangeEventBus", "Arn"]}


def test_the_changes_function_may_only_put_events_on_its_bus_and_note_lost_batches(
    transformed: dict[str, Any],
) -> None:
    # Given the role the changes function runs as
    statements = _statements(transformed, "ChangesFunctionRole")
    actions = {
        action
        for statement in statements
        for action in (
            [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        )
    }

    # Then it may put events on the change bus, and on no other
    puts = [statement for statement in statements if _allows(statement, "events:PutEvents")]
    assert [statement["Resource"] for statement in puts] == [
        {"Fn::GetAtt": ["ChangeEventBus", "Arn"]}
    ]
    assert {action for action in actions if action.startswith("events:")} == {"events:PutEvents"}
    # And send only to its dead-letter queue
    sends = [statement for statement in statements if _allows(statement, "sqs:SendMessage")]
    assert sends and all("ChangesDeadLetterQueue" in json.dumps(s["Resource"]) for s in sends)
    # And touch no table data: reading the stream comes with the event source alone
    assert not [action for action in actions if action.startswith("dynamodb:")]
    assert "DynamoDBCrudPolicy" not in json.dumps(resource_properties("ChangesFunction"))


def test_lost_change_events_are_kept_aside_encrypted_and_raise_an_alarm() -> None:
    queue = resource_properties("ChangesDeadLetterQueue")
    alarm = resource_properties("ChangesDeadLetterAlarm")

    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["ChangesDeadLetterQueue", "QueueName"]}}
    ]
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


def test_a_consumer_that_was_down_can_replay_the_bus() -> None:
    archive = resource_properties("ChangeEventArchive")

    assert archive["SourceArn"] == {"Fn::GetAtt": ["ChangeEventBus", "Arn"]}
    assert archive["RetentionDays"] >= 7
