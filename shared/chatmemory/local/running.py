"""Which local servers are running, so `chatmemory token`, `flush`, `open`, `export`,
`import` and `mcp` meet the right one.

`chatmemory serve --state-dir DIR` keeps its SQLite file and signing secret in DIR. A
later `chatmemory token alice` with no flag would otherwise sign with the default folder's
secret — a token that server refuses — or flush a store nobody serves. So each server
records itself in the well-known folder for as long as it runs: one file per server under
`servers/` (`<pid>-<port>.json`: its folder, address, process id and clock), never shared,
so starting or stopping one server never hides another. A record whose process has ended
(a server that was killed) is not a running server, and is removed when next read.

A command that names no folder follows the one server running. When several run it does
not guess (one machine-wide record once let whichever server started last win): it says
which run, and asks for `--state-dir` (or `--url`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

RECORDS_DIR = "servers"


@dataclass(frozen=True, slots=True)
class RunningServer:
    state_dir: Path
    url: str
    pid: int
    days_later: int = 0  # its clock runs this many days ahead (`serve --days-later`)


class SeveralServers(Exception):
    """More than one server is running and the command did not say which."""

    def __init__(self, servers: Sequence[RunningServer]) -> None:
        self.servers = tuple(servers)
        running = "; ".join(f"{server.url} over {server.state_dir}" for server in self.servers)
        super().__init__(
            f"{len(self.servers)} chatmemory servers are running ({running}): "
            "say which with --state-dir"
        )


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """The record one server wrote; `remove` deletes it (it is that server's alone)."""

    path: Path
    pid: int

    def remove(self) -> None:
        found = _read(self.path)
        if found is not None and found.pid == self.pid:
            with contextlib.suppress(OSError):
                self.path.unlink()


def record_running_server(
    well_known_dir: Path, state_dir: Path, url: str, days_later: int = 0
) -> ServerRecord:
    """Say, in the well-known folder, that this process serves `state_dir` at `url` (with
    its clock `days_later` days ahead: a flush or a review then runs on the same day)."""
    pid = os.getpid()
    port = urlsplit(url).port or 0
    path = well_known_dir / RECORDS_DIR / f"{pid}-{port}.json"
    payload = {
        "state_dir": str(state_dir.resolve()),
        "url": url,
        "pid": pid,
        "days_later": days_later,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(payload), encoding="utf-8")
        temporary.replace(path)  # atomic: a reader never sees half a record
    except OSError:
        pass  # a read-only home only costs the convenience
    return ServerRecord(path, pid)


def running_servers(well_known_dir: Path) -> list[RunningServer]:
    """Every server recorded whose process is still alive, in order of address; the
    records of servers that ended are removed."""
    found = []
    for path in sorted((well_known_dir / RECORDS_DIR).glob("*.json")):
        server = _read(path)
        if server is None:
            continue
        if not _alive(server.pid):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        found.append(server)
    return sorted(found, key=lambda server: server.url)


def running_server(
    well_known_dir: Path, state_dir: Path | None = None, url: str | None = None
) -> RunningServer | None:
    """The one running server (over `state_dir`, when one is named), or None.

    SeveralServers when more than one would do; `url`, when the command names one, picks
    among them the server at that address."""
    servers = [
        server
        for server in running_servers(well_known_dir)
        if state_dir is None or server.state_dir == state_dir.resolve()
    ]
    if url is not None and len(servers) > 1:
        servers = [server for server in servers if _same_address(server.url, url)] or servers
    if len(servers) > 1:
        raise SeveralServers(servers)
    return servers[0] if servers else None


def _same_address(recorded: str, named: str) -> bool:
    return recorded.rstrip("/").lower() == named.rstrip("/").lower()


def _read(path: Path) -> RunningServer | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return RunningServer(
            Path(raw["state_dir"]),
            str(raw["url"]),
            int(raw["pid"]),
            int(raw.get("days_later") or 0),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True
