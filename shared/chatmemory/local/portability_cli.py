"""`chatmemory export USER FILE` and `chatmemory import USER FILE`: a user's memories out
of the running local server into one `chatmemory.export/1` document, and back in.

Both talk to the server over HTTP as the user (a short-lived token signed with the state
folder's secret), so what they read and write passes exactly the API's rules. The export
follows the pages (`next`) and writes each page as it arrives; the import sends the file
in batches under the 64 KiB body limit, oldest first, and adds up the reports. Both are
safe to run again: an import is idempotent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.error import HTTPError, URLError
from urllib.parse import quote
from urllib.request import Request, urlopen

from chatmemory.config import Settings
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.portability import EXPORT_PAGE_MAX, EXPORT_SCHEMA, IMPORT_BATCH_MAX
from chatmemory.local.running import SeveralServers, running_server, running_servers
from chatmemory.local.tokens import LocalTokens, load_or_create_secret

if TYPE_CHECKING:
    from rich.progress import Progress

#: what one import call may carry: the API's 64 KiB, less room for the envelope
BATCH_BYTES = 60 * 1024
_TOKEN_TTL = timedelta(hours=1)
_TIMEOUT_S = 120


#: how many quota windows a command waits out before it gives up, and the longest wait
_QUOTA_WAITS = 5
_LONGEST_WAIT_S = 60


class _WaitFor(Exception):
    def __init__(self, seconds: int) -> None:
        super().__init__(seconds)
        self.seconds = seconds


class CommandError(Exception):
    """A mistake or an outage the command explains in one line (exit status 1 or 2)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class _Server:
    url: str
    token: str

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The answer's JSON; CommandError with the contract's message on an error. A
        `429` (the user's quota of writes this minute) is waited out as its `Retry-After`
        says, a few times, before it is an error."""
        for _ in range(_QUOTA_WAITS):
            try:
                return self._call_once(method, path, body)
            except _WaitFor as wait:
                time.sleep(wait.seconds)
        return self._call_once(method, path, body, wait=False)

    def _call_once(self, method: str, path: str, body: Any, *, wait: bool = True) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = Request(self.url + path, data=data, method=method)  # noqa: S310 - the URL is ours
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urlopen(request, timeout=_TIMEOUT_S) as answer:  # noqa: S310
                return json.loads(answer.read())
        except HTTPError as error:
            after = error.headers.get("Retry-After", "") if error.headers else ""
            if wait and error.code == HTTPStatus.TOO_MANY_REQUESTS and after.isdigit():
                raise _WaitFor(min(int(after), _LONGEST_WAIT_S)) from None
            raise CommandError(f"the server refused it ({error.code}): {_message(error)}") from None
        except (URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise CommandError(f"cannot reach the server at {self.url}: {reason}") from None


def _message(error: HTTPError) -> str:
    try:
        return str(json.loads(error.read())["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return error.reason or "no reason given"


def _server(args: argparse.Namespace) -> _Server:
    """The running server (or `--url`) and a token for the user from its state folder."""
    settings = Settings.from_env()
    named: Path | None = None  # the folder the command names, if it names one
    if args.state_dir:
        named = Path(args.state_dir).expanduser().resolve()
    elif settings.state_dir_chosen:
        named = settings.state_dir.resolve()
    try:  # the one server over that folder (or the one running), the one at --url if several
        running = running_server(settings.well_known_state_dir, named, args.url)
    except SeveralServers as exc:
        raise CommandError(f"{exc} (or name the server with --url)") from None
    folder = named or (running.state_dir if running else settings.state_dir.resolve())
    url = args.url
    if url is None:
        if running is None and not running_servers(settings.well_known_state_dir):
            raise CommandError(
                "no chatmemory server is running: start one with `chatmemory serve` "
                "(or name it with --url)"
            )
        if running is None:
            raise CommandError(
                f"no server running serves {folder}: name the server of that folder with --url"
            )
        url = running.url
    tokens = LocalTokens(load_or_create_secret(folder, settings.local_token_secret))
    try:
        token = tokens.issue(args.user_id, datetime.now(UTC), ttl=_TOKEN_TTL)
    except InvalidField as exc:
        raise CommandError(str(exc), status=2) from None
    return _Server(url.rstrip("/"), token)


def _progress(what: str) -> Progress:
    """A bar on stderr while a terminal watches; nothing in a pipe or a log."""
    # Imported here: the other commands (and a server's start) need none of it.
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn  # noqa: PLC0415

    console = Console(stderr=True)
    return Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


# ---- export ---------------------------------------------------------------------------


def export(args: argparse.Namespace) -> int:
    """Write the user's whole export to FILE (`-`: standard output), page by page."""
    server = _server(args)
    written = 0
    with _output(args.file) as out, _progress("exporting") as progress:
        task = progress.add_task("export", total=None)
        first = server.call("GET", f"/v1/memories/export?limit={EXPORT_PAGE_MAX}")
        out.write(
            "{"
            + f'"schema": {json.dumps(EXPORT_SCHEMA)}, '
            + f'"exported_at": {json.dumps(first.get("exported_at"))}, '
            + f'"user": {json.dumps(first.get("user"))}, '
            + '"memories": ['
        )
        for row in _rows(server, first):
            out.write(("\n  " if written == 0 else ",\n  ") + json.dumps(row, ensure_ascii=False))
            written += 1
            progress.update(task, completed=written)
        out.write("\n]}\n")
    print(f"exported {written} memory version(s) of {args.user_id}", file=sys.stderr)
    return 0


def _rows(server: _Server, page: dict[str, Any]) -> Iterator[dict[str, Any]]:
    while True:
        yield from page.get("memories") or []
        cursor = page.get("next")
        if not cursor:
            return
        page = server.call(
            "GET", f"/v1/memories/export?limit={EXPORT_PAGE_MAX}&next={quote(cursor, safe='')}"
        )


@contextlib.contextmanager
def _output(name: str) -> Iterator[IO[str]]:
    """Standard output, or FILE written whole or not at all (a temporary file renamed into
    place once the export is complete)."""
    if name == "-":
        yield sys.stdout
        return
    target = Path(name).expanduser()
    if target.is_dir():
        raise CommandError(f"{target} is a folder: name a file to write")
    try:
        descriptor, temporary = tempfile.mkstemp(
            prefix=".chatmemory-export-", dir=target.parent if str(target.parent) else "."
        )
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# ---- import ---------------------------------------------------------------------------


@dataclass
class _Totals:
    imported: int = 0
    unchanged: int = 0
    skipped: list[tuple[int | None, str | None, str]] = field(default_factory=list)
    settings: str | None = None


def import_(args: argparse.Namespace) -> int:
    """Send FILE (`-`: standard input) to the server in batches; print what became of it."""
    document = _read_document(args.file)
    server = _server(args)
    rows: list[dict[str, Any]] = document["memories"]
    # Oldest first, so rows the import learns again keep the order they were learned in.
    order = sorted(range(len(rows)), key=lambda i: str(rows[i].get("created_at", "")))
    totals = _Totals()
    with _progress("importing") as progress:
        task = progress.add_task("import", total=len(rows))
        for places, batch in _batches(document, order):
            try:
                report = server.call("POST", "/v1/memories/import", batch)
            except CommandError as exc:
                done = totals.imported + totals.unchanged + len(totals.skipped)
                raise CommandError(
                    f"{exc}; the {done} memory version(s) before this batch are in (an import "
                    "is idempotent: fix the file and run it again)"
                ) from None
            totals.imported += int(report["imported"])
            totals.unchanged += int(report["unchanged"])
            totals.settings = report.get("settings") or totals.settings
            for skip in report["skipped"]:
                index = skip.get("index")
                place = places[index] if isinstance(index, int) else None
                totals.skipped.append((place, skip.get("memory_id"), str(skip["reason"])))
            progress.advance(task, len(places))
    print(
        f"imported {totals.imported}, unchanged {totals.unchanged}, "
        f"skipped {len(totals.skipped)}"
        + (f"; settings {totals.settings}" if totals.settings else "")
    )
    for place, memory_id, reason in totals.skipped:
        where = "settings" if place is None else f"memories[{place}] {memory_id or ''}".rstrip()
        print(f"  skipped {where}: {reason}", file=sys.stderr)
    return 0


def _read_document(name: str) -> dict[str, Any]:
    """The export in FILE, checked just enough to say clearly when it is not one."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).expanduser().read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CommandError(f"cannot read {name}: {reason}", status=2) from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"{name} is not JSON ({exc}): not a chatmemory export", 2) from None
    if not isinstance(document, dict) or document.get("schema") != EXPORT_SCHEMA:
        raise CommandError(f"{name} is not a {EXPORT_SCHEMA} document", status=2)
    if not isinstance(document.get("memories"), list):
        raise CommandError(f"{name} has no list of memories", status=2)
    return document


def _batches(
    document: dict[str, Any], order: list[int]
) -> Iterator[tuple[list[int], dict[str, Any]]]:
    """Self-contained batches under the body limit: each a document of its own, its rows'
    places in the file alongside; the settings ride with the last one."""
    rows = document["memories"]
    envelope = {"schema": EXPORT_SCHEMA, "exported_at": document.get("exported_at")}
    overhead = len(json.dumps({**envelope, "user": document.get("user"), "memories": []}))
    places: list[int] = []
    size = overhead
    for place in order:
        row_size = len(json.dumps(rows[place]).encode()) + 2
        if places and (size + row_size > BATCH_BYTES or len(places) == IMPORT_BATCH_MAX):
            yield places, {**envelope, "memories": [rows[i] for i in places]}
            places, size = [], overhead
        places.append(place)
        size += row_size
    last = {**envelope, "memories": [rows[i] for i in places]}
    if document.get("user") is not None:
        last["user"] = document["user"]
    yield places, last


# ---- the commands' registration -------------------------------------------------------


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`export` and `import` on the CLI's subcommands."""
    for name, run, verb in (
        ("export", export, "write a user's memories (every version) and settings to FILE"),
        ("import", import_, "read FILE (an export) back in for a user; safe to run again"),
    ):
        command = commands.add_parser(name, help=verb)
        command.add_argument("user_id", help="the user whose memories these are")
        command.add_argument("file", help="the export file; - for standard output/input")
        command.add_argument("--state-dir", help="the state folder the server uses")
        command.add_argument("--url", help="the server's address (default: the one running)")
        command.set_defaults(run=_explained(run))


def _explained(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The command, with its CommandError told in one line instead of a traceback."""

    def command(args: argparse.Namespace) -> int:
        try:
            status: int = run(args)
        except CommandError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.status
        return status

    return command
