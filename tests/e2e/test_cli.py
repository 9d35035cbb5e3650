"""The CLI answers a developer's mistakes with one clear line, never a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.cli_server import cli_environment, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def environment(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    return cli_environment(tmp_path, model_cache)


@pytest.mark.parametrize("hours", ["0", "-1", "1e9", "nan", "inf", "soon"])
def test_a_token_lifetime_out_of_range_is_refused(
    environment: dict[str, str], tmp_path: Path, hours: str
) -> None:
    done = run_cli(
        environment, "token", "alice", "--state-dir", str(tmp_path), "--hours", hours, check=False
    )

    assert done.returncode == 2 and done.stdout == ""
    assert "--hours" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_serve_refuses_a_port_out_of_range(
    environment: dict[str, str], tmp_path: Path, port: str
) -> None:
    done = run_cli(environment, "serve", "--port", port, "--state-dir", str(tmp_path), check=False)

    assert done.returncode == 2
    assert "--port" in done.stderr and "Traceback" not in done.stderr


def test_serve_on_a_port_in_use_says_so_and_exits(
    environment: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])

        done = run_cli(
            environment, "serve", "--port", port, "--state-dir", str(tmp_path), check=False
        )

    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
