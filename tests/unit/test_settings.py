"""Settings read from the environment: every variable's default, its parsing and its rule.

The names are a contract: template.yaml and the README set them, so a rename breaks here.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

from chatmemory.config import ConfigurationError, Settings

ROOT = Path(__file__).resolve().parents[2]

VARIABLES = (
    "CHATMEMORY_STORE",
    "CHATMEMORY_STATE_DIR",
    "CHATMEMORY_TABLE_NAME",
    "CHATMEMORY_DYNAMODB_ENDPOINT",
    "CHATMEMORY_LOCAL_SECRET",
    "CHATMEMORY_PROJECT_ROOT",
    "CHATMEMORY_EMBEDDER",
    "CHATMEMORY_TITAN_DIMENSIONS",
    "CHATMEMORY_INDEX",
    "CHATMEMORY_VECTOR_ENCODING",
    "CHATMEMORY_OPENSEARCH_ENDPOINT",
    "CHATMEMORY_OPENSEARCH_INDEX",
    "CHATMEMORY_RECALL_THRESHOLD",
    "CHATMEMORY_MODEL_CACHE",
    "CHATMEMORY_MODEL",
    "CHATMEMORY_ANTHROPIC_SECRET_NAME",
    "CHATMEMORY_CHAT_MODEL",
    "CHATMEMORY_FAST_MODEL",
    "CHATMEMORY_JOBS",
    "CHATMEMORY_FOLD_QUEUE_URL",
    "CHATMEMORY_IDLE_QUEUE_URL",
    "CHATMEMORY_IDLE_SECONDS",
    "CHATMEMORY_PIPELINE",
    "CHATMEMORY_WRITE_PIPELINE_ARN",
    "CHATMEMORY_PURGE",
    "CHATMEMORY_PURGE_PIPELINE_ARN",
    "CHATMEMORY_JWT_ISSUER",
    "CHATMEMORY_JWT_AUDIENCE",
    "CHATMEMORY_QUOTA_TURNS_PER_MINUTE",
    "CHATMEMORY_QUOTA_OBSERVED_PER_MINUTE",
    "CHATMEMORY_API_URL",
    "CHATMEMORY_TOKEN",
    "CHATMEMORY_CHANGES",
    "CHATMEMORY_EVENT_BUS",
    "ANTHROPIC_API_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_LWA_PORT",
    "PORT",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
)
ON_AWS = {"CHATMEMORY_TABLE_NAME": "memories", "AWS_REGION": "eu-west-1"}


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment that sets none of the variables, with a home folder of its own."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def settings_from(monkeypatch: pytest.MonkeyPatch, **environment: str) -> Settings:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


def refusal(monkeypatch: pytest.MonkeyPatch, **environment: str) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as refused:
        settings_from(monkeypatch, **environment)
    return refused.value


def test_an_empty_environment_gives_the_embedded_defaults(home: Path) -> None:
    settings = Settings.from_env()

    assert settings == Settings(
        store="sqlite",
        state_dir=home / ".local" / "state" / "chatmemory",
        well_known_state_dir=home / ".local" / "state" / "chatmemory",
        state_dir_chosen=False,
        table_name=None,
        region=None,
        dynamodb_endpoint=None,
        local_token_secret=None,
        project_root=ROOT,
        embedder="auto",
        titan_dimensions=512,
        index="exact",
        vector_encoding="fp16",
        opensearch_endpoint=None,
        opensearch_index="memories",
        recall_threshold=None,
        model_cache=home / ".cache" / "chatmemory" / "models",
        model="auto",
        anthropic_api_key=None,
        anthropic_secret_name=None,
        chat_model=None,
        fast_model=None,
        jobs="local",
        fold_queue_url=None,
        idle_queue_url=None,
        idle_seconds=600,
        pipeline="local",
        write_pipeline_arn=None,
        purge="local",
        purge_pipeline_arn=None,
        jwt_issuer=None,
        jwt_audiences=(),
        stream_port=8080,
        quota_turns_per_minute=30,
    )


@pytest.mark.parametrize(
    ("environment", "field", "expected"),
    [
        ({"CHATMEMORY_STORE": "dynamodb", **ON_AWS}, "store", "dynamodb"),
        ({"CHATMEMORY_TABLE_NAME": "memories"}, "table_name", "memories"),
        ({"AWS_REGION": "eu-west-1"}, "region", "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "us-east-1"}, "region", "us-east-1"),
        ({"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-east-1"}, "region", "eu-west-1"),
        ({"AWS_REGION": "", "AWS_DEFAULT_REGION": "us-east-1"}, "region", "us-east-1"),
        (
            {"CHATMEMORY_DYNAMODB_ENDPOINT": "http://localhost:8000"},
            "dynamodb_endpoint",
            "http://localhost:8000",
        ),
        ({"CHATMEMORY_LOCAL_SECRET": "s3cret"}, "local_token_secret", "s3cret"),
        ({"CHATMEMORY_API_URL": "http://127.0.0.1:3000"}, "api_url", "http://127.0.0.1:3000"),
        ({"CHATMEMORY_TOKEN": "a.b.c"}, "api_token", "a.b.c"),
        ({"CHATMEMORY_PROJECT_ROOT": "/srv/chatmemory"}, "project_root", Path("/srv/chatmemory")),
        ({"CHATMEMORY_EMBEDDER": "minilm"}, "embedder", "minilm"),
        ({"CHATMEMORY_EMBEDDER": "hashing"}, "embedder", "hashing"),
        ({"CHATMEMORY_EMBEDDER": "titan"}, "embedder", "titan"),
        ({"CHATMEMORY_TITAN_DIMENSIONS": "256"}, "titan_dimensions", 256),
        ({"CHATMEMORY_VECTOR_ENCODING": "byte"}, "vector_encoding", "byte"),
        ({"CHATMEMORY_VECTOR_ENCODING": "float32"}, "vector_encoding", "float32"),
        (
            {
                "CHATMEMORY_INDEX": "opensearch",
                "CHATMEMORY_OPENSEARCH_ENDPOINT": "https://c.aoss",
                "AWS_REGION": "eu-west-1",
            },
            "index",
            "opensearch",
        ),
        (
            {"CHATMEMORY_OPENSEARCH_ENDPOINT": "https://c.aoss"},
            "opensearch_endpoint",
            "https://c.aoss",
        ),
        ({"CHATMEMORY_OPENSEARCH_INDEX": "recall"}, "opensearch_index", "recall"),
        ({"CHATMEMORY_RECALL_THRESHOLD": "0.42"}, "recall_threshold", 0.42),
        ({"CHATMEMORY_MODEL_CACHE": "/var/cache/models"}, "model_cache", Path("/var/cache/models")),
        ({"CHATMEMORY_MODEL": "offline"}, "model", "offline"),
        ({"CHATMEMORY_MODEL": "claude"}, "model", "claude"),
        ({"CHATMEMORY_MODEL": "bedrock"}, "model", "bedrock"),
        ({"ANTHROPIC_API_KEY": "sk-ant-test"}, "anthropic_api_key", "sk-ant-test"),
        ({"CHATMEMORY_ANTHROPIC_SECRET_NAME": "claude-key"}, "anthropic_secret_name", "claude-key"),
        ({"CHATMEMORY_CHAT_MODEL": "claude-x"}, "chat_model", "claude-x"),
        ({"CHATMEMORY_FAST_MODEL": "claude-y"}, "fast_model", "claude-y"),
        ({"CHATMEMORY_JOBS": "sqs"}, "jobs", "sqs"),
        ({"CHATMEMORY_FOLD_QUEUE_URL": "https://sqs/fold"}, "fold_queue_url", "https://sqs/fold"),
        ({"CHATMEMORY_IDLE_QUEUE_URL": "https://sqs/idle"}, "idle_queue_url", "https://sqs/idle"),
        ({"CHATMEMORY_IDLE_SECONDS": "30"}, "idle_seconds", 30),
        ({"CHATMEMORY_PIPELINE": "stepfunctions"}, "pipeline", "stepfunctions"),
        ({"CHATMEMORY_WRITE_PIPELINE_ARN": "arn:w"}, "write_pipeline_arn", "arn:w"),
        ({"CHATMEMORY_PURGE": "stepfunctions"}, "purge", "stepfunctions"),
        ({"CHATMEMORY_PURGE_PIPELINE_ARN": "arn:p"}, "purge_pipeline_arn", "arn:p"),
        ({"CHATMEMORY_JWT_ISSUER": "https://issuer"}, "jwt_issuer", "https://issuer"),
        ({"CHATMEMORY_JWT_AUDIENCE": " app, web ,,"}, "jwt_audiences", ("app", "web")),
        ({"PORT": "8081"}, "stream_port", 8081),
        ({"AWS_LWA_PORT": "9000", "PORT": "8081"}, "stream_port", 9000),
        ({"AWS_LWA_PORT": "", "PORT": "8081"}, "stream_port", 8081),
        ({"AWS_LWA_PORT": "9000", "PORT": "not checked"}, "stream_port", 9000),
        ({"CHATMEMORY_QUOTA_TURNS_PER_MINUTE": "5"}, "quota_turns_per_minute", 5),
        ({"CHATMEMORY_QUOTA_TURNS_PER_MINUTE": "0"}, "quota_turns_per_minute", 0),
        ({"CHATMEMORY_QUOTA_OBSERVED_PER_MINUTE": "7"}, "quota_observed_per_minute", 7),
        ({"CHATMEMORY_CHANGES": "none"}, "changes", "none"),
        (
            {"CHATMEMORY_CHANGES": "eventbridge", "CHATMEMORY_EVENT_BUS": "b", "AWS_REGION": "r"},
            "changes",
            "eventbridge",
        ),
        ({"CHATMEMORY_EVENT_BUS": "stack-changes"}, "event_bus_name", "stack-changes"),
    ],
)
def test_each_variable_sets_its_setting(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    field: str,
    expected: Any,
) -> None:
    settings = settings_from(monkeypatch, **environment)

    assert getattr(settings, field) == expected


def test_a_named_state_folder_is_chosen_and_the_well_known_one_stays(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from(monkeypatch, CHATMEMORY_STATE_DIR="~/elsewhere")

    assert settings.state_dir == home / "elsewhere"
    assert settings.state_dir_chosen
    assert settings.well_known_state_dir == home / ".local" / "state" / "chatmemory"


def test_the_xdg_folders_move_the_defaults(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from(monkeypatch, XDG_STATE_HOME="/xdg/state", XDG_CACHE_HOME="/xdg/cache")

    assert settings.state_dir == Path("/xdg/state/chatmemory") == settings.well_known_state_dir
    assert settings.model_cache == Path("/xdg/cache/chatmemory/models")
    assert not settings.state_dir_chosen


def test_paths_start_from_the_home_folder_when_they_say_so(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from(
        monkeypatch, CHATMEMORY_MODEL_CACHE="~/models", CHATMEMORY_PROJECT_ROOT="~/checkout"
    )

    assert (settings.model_cache, settings.project_root) == (home / "models", home / "checkout")


@pytest.mark.parametrize(
    "name",
    [
        "CHATMEMORY_STATE_DIR",
        "CHATMEMORY_PROJECT_ROOT",
        "CHATMEMORY_RECALL_THRESHOLD",
        "CHATMEMORY_MODEL_CACHE",
        "ANTHROPIC_API_KEY",
        "CHATMEMORY_ANTHROPIC_SECRET_NAME",
        "CHATMEMORY_CHAT_MODEL",
        "CHATMEMORY_FAST_MODEL",
        "CHATMEMORY_FOLD_QUEUE_URL",
        "CHATMEMORY_IDLE_QUEUE_URL",
        "CHATMEMORY_WRITE_PIPELINE_ARN",
        "CHATMEMORY_PURGE_PIPELINE_ARN",
        "CHATMEMORY_JWT_ISSUER",
        "CHATMEMORY_JWT_AUDIENCE",
        "AWS_LWA_PORT",
        "PORT",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ],
)
def test_a_variable_set_to_nothing_counts_as_unset(
    home: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    unset = Settings.from_env()

    assert settings_from(monkeypatch, **{name: ""}) == unset


@pytest.mark.parametrize(
    ("environment", "setting", "reason"),
    [
        ({"CHATMEMORY_STORE": "mongodb"}, "CHATMEMORY_STORE", "must be sqlite or dynamodb"),
        ({"CHATMEMORY_STORE": "SQLITE"}, "CHATMEMORY_STORE", "must be sqlite or dynamodb"),
        ({"CHATMEMORY_STORE": ""}, "CHATMEMORY_STORE", "must be sqlite or dynamodb"),
        (
            {"CHATMEMORY_EMBEDDER": "bert"},
            "CHATMEMORY_EMBEDDER",
            "must be auto, minilm, hashing or titan",
        ),
        ({"CHATMEMORY_INDEX": "faiss"}, "CHATMEMORY_INDEX", "must be exact or opensearch"),
        (
            {"CHATMEMORY_MODEL": "gpt"},
            "CHATMEMORY_MODEL",
            "must be auto, offline, claude or bedrock",
        ),
        ({"CHATMEMORY_JOBS": "celery"}, "CHATMEMORY_JOBS", "must be local or sqs"),
        (
            {"CHATMEMORY_PIPELINE": "airflow"},
            "CHATMEMORY_PIPELINE",
            "must be local or stepfunctions",
        ),
        ({"CHATMEMORY_PURGE": "cron"}, "CHATMEMORY_PURGE", "must be local or stepfunctions"),
        ({"CHATMEMORY_IDLE_SECONDS": "ten"}, "CHATMEMORY_IDLE_SECONDS", "must be an integer"),
        ({"CHATMEMORY_IDLE_SECONDS": ""}, "CHATMEMORY_IDLE_SECONDS", "must be an integer"),
        (
            {"CHATMEMORY_VECTOR_ENCODING": "int4"},
            "CHATMEMORY_VECTOR_ENCODING",
            "must be float32, fp16 or byte",
        ),
        (
            {"CHATMEMORY_TITAN_DIMENSIONS": "big"},
            "CHATMEMORY_TITAN_DIMENSIONS",
            "must be an integer",
        ),
        (
            {"CHATMEMORY_RECALL_THRESHOLD": "high"},
            "CHATMEMORY_RECALL_THRESHOLD",
            "must be a number",
        ),
        (
            {"CHATMEMORY_QUOTA_TURNS_PER_MINUTE": "-1"},
            "CHATMEMORY_QUOTA_TURNS_PER_MINUTE",
            "must be 0 or more",
        ),
        (
            {"CHATMEMORY_QUOTA_TURNS_PER_MINUTE": "lots"},
            "CHATMEMORY_QUOTA_TURNS_PER_MINUTE",
            "must be an integer",
        ),
        ({"PORT": "http"}, "PORT", "must be a TCP port number"),
        ({"PORT": "0"}, "PORT", "must be a TCP port number"),
        ({"PORT": "65536"}, "PORT", "must be a TCP port number"),
        ({"AWS_LWA_PORT": "-1"}, "PORT", "must be a TCP port number"),
        (
            {"CHATMEMORY_INDEX": "opensearch", "AWS_REGION": "eu-west-1"},
            "CHATMEMORY_OPENSEARCH_ENDPOINT",
            "the opensearch index needs an endpoint and AWS_REGION",
        ),
        (
            {"CHATMEMORY_INDEX": "opensearch", "CHATMEMORY_OPENSEARCH_ENDPOINT": "https://c.aoss"},
            "CHATMEMORY_OPENSEARCH_ENDPOINT",
            "the opensearch index needs an endpoint and AWS_REGION",
        ),
        (
            {"CHATMEMORY_STORE": "dynamodb", "AWS_REGION": "eu-west-1"},
            "CHATMEMORY_TABLE_NAME",
            "the dynamodb store needs a table name and AWS_REGION",
        ),
        (
            {"CHATMEMORY_STORE": "dynamodb", "CHATMEMORY_TABLE_NAME": "memories"},
            "CHATMEMORY_TABLE_NAME",
            "the dynamodb store needs a table name and AWS_REGION",
        ),
        (
            {"CHATMEMORY_CHANGES": "kafka"},
            "CHATMEMORY_CHANGES",
            "must be file, eventbridge or none",
        ),
        (
            {"CHATMEMORY_CHANGES": "eventbridge", "AWS_REGION": "eu-west-1"},
            "CHATMEMORY_EVENT_BUS",
            "eventbridge changes need a bus name and AWS_REGION",
        ),
    ],
)
def test_a_value_that_breaks_a_rule_is_refused_naming_the_setting(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    setting: str,
    reason: str,
) -> None:
    refused = refusal(monkeypatch, **environment)

    assert refused.problems == {setting: reason}
    assert str(refused) == f"{setting} {reason}"


def test_every_refused_setting_is_named_at_once(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = refusal(monkeypatch, CHATMEMORY_STORE="mongodb", CHATMEMORY_JOBS="celery")

    assert set(refused.problems) == {"CHATMEMORY_STORE", "CHATMEMORY_JOBS"}


def test_a_refusal_never_quotes_the_value_that_was_set(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a key pasted into the wrong variable
    refused = refusal(monkeypatch, CHATMEMORY_MODEL="sk-ant-api03-pasted-by-mistake")

    # Then neither the message nor the traceback (which reaches the logs) quotes it
    shown = "".join(traceback.format_exception(refused))
    assert "CHATMEMORY_MODEL" in shown
    assert "sk-ant" not in shown and "pasted" not in shown


def test_the_key_never_appears_in_the_settings_repr(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from(monkeypatch, ANTHROPIC_API_KEY="sk-ant-api03-private")

    assert "sk-ant" not in repr(settings)


def test_names_are_read_as_written_case_and_all(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from(monkeypatch, chatmemory_store="dynamodb", chatmemory_jobs="sqs")

    assert (settings.store, settings.jobs) == ("sqlite", "local")


def test_settings_built_directly_read_no_variable(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an environment that asks for AWS
    monkeypatch.setenv("CHATMEMORY_STORE", "dynamodb")
    monkeypatch.setenv("CHATMEMORY_MODEL", "claude")

    # When a test or a tool builds its settings itself
    settings = Settings(state_dir=home, embedder="hashing")

    # Then it gets what it asked for and the defaults, not the environment's choices
    assert (settings.store, settings.model, settings.embedder) == ("sqlite", "auto", "hashing")
