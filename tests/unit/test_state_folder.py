"""The state folder is its owner's alone: made 0700 with its files 0600, looser modes fixed
and named, and a folder that cannot be made private refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chatmemory.local.state_folder import StateFolderExposed, make_private


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_a_folder_others_can_read_is_made_private_and_said(tmp_path: Path) -> None:
    # Given a state folder as a default umask leaves it: everyone may read its database
    state = tmp_path / "state"
    (state / "models").mkdir(parents=True)
    (state / "chatmemory.sqlite3").write_text("rows")
    (state / "models" / "weights.onnx").write_text("w")
    for path, mode in ((state, 0o755), (state / "models", 0o755)):
        path.chmod(mode)
    (state / "chatmemory.sqlite3").chmod(0o644)

    # When it is checked
    fixed = make_private(state)

    # Then the folders are 0700 and the files 0600, and each change is named
    assert _mode(state) == 0o700 and _mode(state / "models") == 0o700
    assert _mode(state / "chatmemory.sqlite3") == 0o600
    assert _mode(state / "models" / "weights.onnx") == 0o600
    assert f"{state / 'chatmemory.sqlite3'} (was 0644)" in fixed
    # and a second check finds nothing to fix
    assert make_private(state) == []


def test_a_missing_folder_is_created_private(tmp_path: Path) -> None:
    state = tmp_path / "new" / "state"
    assert make_private(state) == []
    assert _mode(state) == 0o700


def test_a_folder_that_cannot_be_made_private_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a world-readable file whose mode cannot be changed (another account's)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    shared = state / "chatmemory.sqlite3"
    shared.write_text("rows")
    shared.chmod(0o644)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(shared).st_uid + 1)

    # Then it is refused, naming the file, and nothing is used as it is
    with pytest.raises(StateFolderExposed, match="belongs to another account"):
        make_private(state)
