"""Which local server is running, so `chatmemory token` and `flush` meet the right one.

`chatmemory serve --state-dir DIR` keeps its SQLite file and signing secret in DIR. A
later `chatmemory token alice` with no flag would otherwise sign with the default folder's
secret — a token that server refuses — or flush a store nobody serves. So a server
records itself in the well-known folder (`server.json`: its folder, address and process
id) for as long as it runs, and those commands follow it when no folder is named.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

RECORD_FILE = "server.json"


@dataclass(frozen=True, slots=True)
class RunningServer:
    state_dir: Path
    url: str
    pid: int
    days_later: int = 0  # its clock runs this many days ahead (`serve --days-later`)


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """The record one server wrote; `remove` deletes it only if it is still that server's."""

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
    path = well_known_dir / RECORD_FILE
    pid = os.getpid()
    payload = {
        "state_dir": str(state_dir.resolve()),
        "url": url,
        "pid": pid,
        "days_later": days_later,
    }
    try:
        well_known_dir.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(payload), encoding="utf-8")
        temporary.replace(path)  # atomic: a reader never sees half a record
    except OSError:
        pass  # a read-only home only costs the convenience
    return ServerRecord(path, pid)


def running_server(well_known_dir: Path) -> RunningServer | None:
    """The server recorded in the well-known folder, if its process is still alive."""
    found = _read(well_known_dir / RECORD_FILE)
    if found is None or not _alive(found.pid):
        return None
    return found


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
