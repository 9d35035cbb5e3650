"""`chatmemory open USER`: the running server's page, signed in, or one clear line why not."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from chatmemory.local.running import record_running_server
from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from tests.support.cli_server import cli_environment, run_cli

pytestmark = pytest.mark.e2e

SERVER_URL = "http://127.0.0.1:39999"


@pytest.fixture
def environment(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    return cli_environment(tmp_path, model_cache)


@pytest.fixture
def served_state(tmp_path: Path, environment: dict[str, str]) -> Path:
    """A server recorded as running over its own state folder (this live process stands in
    for it: the record is all `open` reads)."""
    state_dir = tmp_path / "served-state"
    load_or_create_secret(state_dir)
    well_known = Path(environment["XDG_STATE_HOME"]) / "chatmemory"
    record_running_server(well_known, state_dir, SERVER_URL)
    return state_dir


def test_open_prints_the_page_with_a_token_the_server_accepts(
    environment: dict[str, str], served_state: Path
) -> None:
    # When Alice opens her page without a browser
    done = run_cli(environment, "open", "alice", "--no-browser")

    # Then the address is the server's page, the token in its fragment, signed by its secret
    url = urlsplit(done.stdout.strip())
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{SERVER_URL}/"
    assert url.query == "" and url.fragment.startswith("token=")
    token = unquote(url.fragment.removeprefix("token="))
    claims = LocalTokens(load_or_create_secret(served_state)).verify(token)
    assert claims["sub"] == "alice"
    assert claims["exp"] - claims["iat"] == 8 * 3600


def test_open_without_a_running_server_says_how_to_start_one(
    environment: dict[str, str],
) -> None:
    done = run_cli(environment, "open", "alice", "--no-browser", check=False)

    assert done.returncode == 2 and done.stdout == ""
    assert "no chatmemory server is running" in done.stderr
    assert "chatmemory serve" in done.stderr and "Traceback" not in done.stderr


def test_open_refuses_a_state_folder_the_server_does_not_use(
    environment: dict[str, str], served_state: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-state"

    done = run_cli(
        environment, "open", "alice", "--no-browser", "--state-dir", str(other), check=False
    )

    assert done.returncode == 2 and done.stdout == ""
    assert str(served_state.resolve()) in done.stderr and "Traceback" not in done.stderr
