"""The local CLI meets a bad setting: it says which one and why, before it starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatmemory.local.cli import main


def test_the_cli_names_a_bad_setting_at_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a developer's environment with a store that does not exist
    monkeypatch.setenv("CHATMEMORY_STORE", "mongodb")

    # When they start the local server
    status = main(["serve", "--port", "0", "--state-dir", str(tmp_path)])

    # Then it stops before listening and says which setting is wrong and why
    assert status == 2
    assert capsys.readouterr().err == "error: CHATMEMORY_STORE must be sqlite or dynamodb\n"
