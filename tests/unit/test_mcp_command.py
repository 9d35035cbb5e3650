"""`chatmemory mcp` works out which API to call and as whom, or says in one line why not."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from chatmemory.config import Settings, default_state_dir
from chatmemory.local.cli import build_parser, main
from chatmemory.local.running import record_running_server
from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from chatmemory.mcp.command import CommandError, connection

LOCAL = "http://127.0.0.1:3999"


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A developer's environment of their own: no server recorded, no API or token set."""
    for name in ("CHATMEMORY_API_URL", "CHATMEMORY_TOKEN", "CHATMEMORY_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CHATMEMORY_LOCAL_SECRET", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    return tmp_path


def resolve(*arguments: str) -> tuple[str, str | None]:
    args = build_parser().parse_args(["mcp", *arguments])
    url, token = connection(args, Settings.from_env())
    return url, token()


def test_a_local_user_is_served_by_the_running_server_with_its_own_secret(home: Path) -> None:
    # Given a server running over its own state folder (this process stands in for it)
    served = home / "served"
    record = record_running_server(default_state_dir(str(home / "xdg")), served, LOCAL)
    try:
        # When the tools are to act as alice
        url, token = resolve("--user", "alice")
    finally:
        record.remove()

    # Then they call that server, with a token its secret signed, for alice
    assert url == LOCAL and token is not None
    claims = LocalTokens(load_or_create_secret(served)).verify(token)
    assert claims["sub"] == "alice"
    assert claims["exp"] - datetime.now(UTC).timestamp() <= 600


def test_a_named_api_and_token_are_used_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve("--url", "https://api.example.test", "--token", "t0k") == (
        "https://api.example.test",
        "t0k",
    )
    monkeypatch.setenv("CHATMEMORY_API_URL", "https://stage.example.test")
    monkeypatch.setenv("CHATMEMORY_TOKEN", "from-env")
    assert resolve() == ("https://stage.example.test", "from-env")


def test_over_http_without_a_user_each_caller_brings_their_own_token() -> None:
    assert resolve("--http", "--url", LOCAL) == (LOCAL, None)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (("--url", LOCAL), "--user USER"),
        (("--user", "alice"), "no chatmemory server is running"),
        (("--user", "alice", "--url", "ftp://x"), "--url must start with http"),
        (("--user", " alice", "--url", LOCAL), "--user"),
    ],
)
def test_a_command_that_cannot_serve_says_why(arguments: tuple[str, ...], says: str) -> None:
    with pytest.raises(CommandError, match=says.replace("-", r"\-")):
        resolve(*arguments)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (("--user", "alice"), "error: no chatmemory server is running here"),
        (("--user", "alice", "--timeout", "0"), "--timeout: must be between 1 and 120 seconds"),
        (("--user", "alice", "--token", "t"), "not allowed with argument"),
        (("--http", "--port", "70000"), "--port"),
    ],
)
def test_the_cli_refuses_in_one_line_and_writes_nothing_to_stdout(
    capsys: pytest.CaptureFixture[str], arguments: tuple[str, ...], says: str
) -> None:
    try:
        status = main(["mcp", *arguments])
    except SystemExit as exit_:  # argparse refuses an option itself
        status = int(exit_.code or 0)

    said = capsys.readouterr()
    assert status == 2 and said.out == ""
    assert says in said.err and "Traceback" not in said.err
