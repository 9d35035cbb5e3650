"""`chatmemory serve` as a developer runs it: a real process on a free port."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.local_server import ROOT

# A cold start imports torch and loads the model (seconds); this only bounds a broken one.
START_DEADLINE_S = 180


@dataclass
class ServedProcess:
    url: str
    banner: list[str]
    environment: dict[str, str]
    pid: int = 0

    def cli(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run another `chatmemory` command in the same environment."""
        return run_cli(self.environment, *arguments, check=check)


def cli_environment(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    """The developer's environment, with every well-known folder inside the test's own."""
    return {
        **os.environ,
        "CHATMEMORY_MODEL_CACHE": str(model_cache),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
    }


def run_cli(
    environment: dict[str, str], *arguments: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI, as a developer runs it
        [sys.executable, "-m", "chatmemory.local.cli", *arguments],
        capture_output=True,
        text=True,
        check=check,
        cwd=ROOT,
        env=environment,
        timeout=120,
    )


@contextmanager
def serve_in_process(
    environment: dict[str, str], *arguments: str, **popen: Any
) -> Iterator[ServedProcess]:
    """`chatmemory serve --port 0 …`, yielded once it prints that it is ready (`popen`:
    more of subprocess.Popen's arguments, e.g. a `preexec_fn`)."""
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "chatmemory.local.cli", "serve", "--port", "0", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=environment,
        **popen,
    )
    try:
        assert process.stdout is not None
        banner = _lines_until_ready(process)
        url = banner[0].split("listening on ", 1)[1].strip()
        yield ServedProcess(url=url, banner=banner, environment=environment, pid=process.pid)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _lines_until_ready(process: subprocess.Popen[str]) -> list[str]:
    """What the server printed, up to its "ready:" line (read as it is printed)."""
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + START_DEADLINE_S
    lines: list[str] = []
    while not lines or not lines[-1].startswith("ready: "):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not selector.select(timeout=remaining):
            raise TimeoutError(f"the server did not get ready; it printed {lines!r}")
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the server exited early; it printed {lines!r}")
        lines.append(line.rstrip("\n"))
    return lines
