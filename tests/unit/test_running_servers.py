"""A command that names no folder follows the one server running: whichever started or
stopped last, and never a server that died; when several run, it asks which.

This process stands in for each server (the records are all a command reads); the
commands run as `chatmemory …` does, through `main`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chatmemory.api.identity import InvalidToken
from chatmemory.config import default_state_dir
from chatmemory.local.cli import main
from chatmemory.local.running import (
    RECORDS_DIR,
    SeveralServers,
    record_running_server,
    running_server,
)
from chatmemory.local.tokens import LocalTokens, load_or_create_secret

FIRST, SECOND = "http://127.0.0.1:3001", "http://127.0.0.1:3002"


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A developer's environment of their own: no folder chosen, no server recorded yet."""
    for name in ("CHATMEMORY_STATE_DIR", "CHATMEMORY_LOCAL_SECRET", "CHATMEMORY_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    return tmp_path


@pytest.fixture
def well_known(home: Path) -> Path:
    return default_state_dir(str(home / "xdg"))


def _folder(home: Path, name: str) -> Path:
    folder = home / name
    load_or_create_secret(folder)
    return folder


def _token(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    status = main(["token", "alice", *arguments])
    said = capsys.readouterr()
    return status, said.out.strip(), said.err


def _signed_for(folder: Path, token: str) -> bool:
    try:
        LocalTokens(load_or_create_secret(folder)).verify(token)
    except InvalidToken:
        return False
    return True


def test_after_the_later_of_two_servers_stops_the_cli_follows_the_one_still_running(
    home: Path, well_known: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a server over one folder, then a second over another, which stops again
    first = _folder(home, "first")
    record_running_server(well_known, first, FIRST)
    record_running_server(well_known, _folder(home, "second"), SECOND).remove()

    # When a token is asked for with no folder named
    status, token, _ = _token(capsys)

    # Then it is signed for the server still running
    assert status == 0
    assert _signed_for(first, token)


def test_with_two_servers_running_a_command_asks_which_instead_of_guessing(
    home: Path, well_known: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two servers running, over two folders
    first, second = _folder(home, "first"), _folder(home, "second")
    record_running_server(well_known, first, FIRST)
    record_running_server(well_known, second, SECOND)

    # When a token is asked for with no folder named
    status, token, said = _token(capsys)

    # Then none is minted, and the one line says which servers run and how to pick one
    assert status == 2 and token == ""
    assert FIRST in said and SECOND in said and "--state-dir" in said
    assert "Traceback" not in said

    # And naming a folder picks its server's secret
    status, token, _ = _token(capsys, "--state-dir", str(second))
    assert status == 0 and _signed_for(second, token)


def test_a_server_that_died_without_removing_its_record_is_never_followed(
    home: Path, well_known: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a record left by a server that was killed (its process is gone), and one alive
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(ended.stdout)
    records = well_known / RECORDS_DIR
    records.mkdir(parents=True)
    left = records / f"{dead_pid}-3009.json"
    left.write_text(
        json.dumps(
            {"state_dir": str(home / "dead"), "url": "http://127.0.0.1:3009", "pid": dead_pid}
        )
    )
    alive = _folder(home, "alive")
    record_running_server(well_known, alive, FIRST)

    # When a token is asked for with no folder named
    status, token, _ = _token(capsys)

    # Then the live one is followed, and the dead one's record is gone
    assert status == 0 and _signed_for(alive, token)
    assert not left.exists()


def test_a_named_folder_or_address_picks_among_the_servers_running(
    home: Path, well_known: Path
) -> None:
    first, second = _folder(home, "first"), _folder(home, "second")
    record_running_server(well_known, first, FIRST)
    record_running_server(well_known, second, SECOND)

    with pytest.raises(SeveralServers):
        running_server(well_known)
    by_folder = running_server(well_known, second)
    by_address = running_server(well_known, url=FIRST + "/")
    assert by_folder is not None and by_folder.url == SECOND
    assert by_address is not None and by_address.state_dir == first.resolve()
    assert running_server(well_known, home / "nobody") is None


def test_open_with_two_servers_running_asks_which(
    home: Path, well_known: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _folder(home, "first"), _folder(home, "second")
    record_running_server(well_known, first, FIRST)
    record_running_server(well_known, second, SECOND)

    assert main(["open", "alice", "--no-browser"]) == 2
    said = capsys.readouterr()
    assert said.out == "" and FIRST in said.err and SECOND in said.err

    assert main(["open", "alice", "--no-browser", "--state-dir", str(second)]) == 0
    assert capsys.readouterr().out.startswith(f"{SECOND}/#token=")
