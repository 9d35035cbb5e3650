"""The write cadence's settings: the cold delay beside the warm one, and the deep model."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from chatmemory.config import ConfigurationError, Container, Settings


@pytest.fixture
def unset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "CHATMEMORY_IDLE_SECONDS",
        "CHATMEMORY_IDLE_COLD_SECONDS",
        "CHATMEMORY_DEEP_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def test_by_default_a_cold_profile_waits_two_minutes_and_a_warm_one_ten(unset: None) -> None:
    settings = Settings.from_env()

    assert (settings.idle_cold_seconds, settings.idle_seconds) == (120, 600)
    assert settings.deep_model is None


def test_each_delay_and_the_deep_model_can_be_set(
    unset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATMEMORY_IDLE_COLD_SECONDS", "60")
    monkeypatch.setenv("CHATMEMORY_IDLE_SECONDS", "900")
    monkeypatch.setenv("CHATMEMORY_DEEP_MODEL", "claude-fable-5-2")

    settings = Settings.from_env()

    assert (settings.idle_cold_seconds, settings.idle_seconds) == (60, 900)
    assert settings.deep_model == "claude-fable-5-2"


def test_a_cold_delay_that_is_no_number_is_refused_by_name(
    unset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATMEMORY_IDLE_COLD_SECONDS", "two minutes")

    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env()

    assert refused.value.problems == {"CHATMEMORY_IDLE_COLD_SECONDS": "must be an integer"}


def test_the_chat_and_the_idle_check_get_the_same_delays(tmp_path: Path) -> None:
    container = Container(Settings(state_dir=tmp_path, idle_cold_seconds=90, idle_seconds=700))

    assert container.idle.delays.cold == timedelta(seconds=90)
    assert container.idle.delays.warm == timedelta(seconds=700)


def test_pinning_the_warm_delay_low_pins_the_cold_one_too(tmp_path: Path) -> None:
    # Given a deployment (or a test) that sets only the warm delay, to one second
    container = Container(Settings(state_dir=tmp_path, idle_seconds=1))

    # Then a new user's conversation is not held longer than a known user's
    assert container.idle.delays.cold == container.idle.delays.warm == timedelta(seconds=1)
