"""A function deployed with a bad setting: the caller gets a 500 that names nothing, and
the log tells the operator which setting is wrong and why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.config import use_container
from tests.support.functions import invoke, load_handler, sample_event


def logged_problems(caplog: pytest.LogCaptureFixture) -> list[Any]:
    """What each "configuration error" log line says is wrong, setting by setting."""
    return [
        getattr(record, "settings", None)
        for record in caplog.records
        if record.getMessage() == "configuration error"
    ]


@pytest.fixture(autouse=True)
def built_from_the_environment() -> Iterator[None]:
    """No container installed: the handler builds its own from the environment, as on AWS."""
    use_container(None)
    yield
    use_container(None)


def test_a_bad_setting_answers_500_and_names_it_only_in_the_log(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the memories function deployed with a store that does not exist
    monkeypatch.setenv("CHATMEMORY_STORE", "mongodb")
    handler = load_handler("memories")

    # When a caller lists their memories
    reply = invoke(handler, sample_event("memories", "list_memories"))

    # Then the answer is a 500 in the contract's shape, naming no setting and no value
    assert reply.status == 500
    assert reply.error_code == "internal_error"
    answered = json.dumps(reply.body)
    assert "CHATMEMORY" not in answered and "mongodb" not in answered
    # And the log names the setting and why, without its value
    assert logged_problems(caplog) == [{"CHATMEMORY_STORE": "must be sqlite or dynamodb"}]
    assert "mongodb" not in repr([record.__dict__ for record in caplog.records])


def test_a_missing_model_key_answers_500_not_400(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the chat function told to use Claude with no key and no secret to fetch one from
    environment: dict[str, Any] = {
        "CHATMEMORY_STATE_DIR": str(tmp_path),
        "CHATMEMORY_EMBEDDER": "hashing",
        "CHATMEMORY_MODEL": "claude",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CHATMEMORY_ANTHROPIC_SECRET_NAME", raising=False)
    handler = load_handler("chat")

    # When a caller sends a chat turn
    reply = invoke(handler, sample_event("chat", "chat"), body={"message": "hello"})

    # Then the deployment's mistake is a 500 that names nothing; the log names the setting
    assert reply.status == 500
    assert reply.error_code == "internal_error"
    assert "ANTHROPIC" not in json.dumps(reply.body)
    assert logged_problems(caplog) == [{"ANTHROPIC_API_KEY": "is required for the claude model"}]
