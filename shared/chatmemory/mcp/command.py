"""`chatmemory mcp`: the memory tools for an MCP host, over stdio or streamable HTTP.

Which API: `--url`, else `CHATMEMORY_API_URL`, else the local server running now (its
record, `local/running.py`). As whom: `--user USER` mints a short-lived local token for
each call from the state folder's secret (as `chatmemory token` does, so it never expires
mid-session), `--token` (or `CHATMEMORY_TOKEN`) is used as given. Over streamable HTTP a
caller that sends its own `Authorization: Bearer …` is served as itself, so one endpoint
can serve many users; without `--user` or `--token` that is the only way in.

Nothing is written to stdout but the protocol: over stdio it is the host's channel.
"""

from __future__ import annotations

import argparse
import dataclasses
import socket
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from chatmemory.config import Container, Settings
from chatmemory.domain.errors import InvalidField
from chatmemory.local.running import SeveralServers, running_server
from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from chatmemory.mcp.api_client import DEFAULT_TIMEOUT_S, MemoryApi, TokenSource

DEFAULT_HTTP_PORT = 3001
MCP_PATH = "/mcp"
#: a token minted for --user lives this long; a new one is minted for every call
MINTED_TTL = timedelta(minutes=10)


class CommandError(Exception):
    """What the developer must change, in one line."""


def add_arguments(command: argparse.ArgumentParser, *, port: Callable[[str], int]) -> None:
    """The command's options (`port` parses a port number as `serve` does)."""
    whom = command.add_mutually_exclusive_group()
    whom.add_argument("--user", help="act as this local user (a token from the state folder)")
    whom.add_argument(
        "--token", help="act with this bearer token (or set CHATMEMORY_TOKEN, kept off ps)"
    )
    command.add_argument(
        "--url", help="the API to call (default: CHATMEMORY_API_URL, else the running server)"
    )
    command.add_argument("--state-dir", help="with --user: the state folder the server uses")
    command.add_argument(
        "--http",
        action="store_true",
        help=f"serve streamable HTTP at http://HOST:PORT{MCP_PATH} instead of stdio",
    )
    command.add_argument("--host", default="127.0.0.1", help="with --http (default 127.0.0.1)")
    command.add_argument(
        "--port",
        type=port,
        default=DEFAULT_HTTP_PORT,
        help=f"with --http (default {DEFAULT_HTTP_PORT}; 0 picks a free one)",
    )
    command.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds each tool call may take, 1..120 (default {DEFAULT_TIMEOUT_S:g})",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until the host closes stdio, or until interrupted (--http)."""
    settings = Settings.from_env()
    try:
        url, token = connection(args, settings)
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from chatmemory.mcp.tools import MemoryTools  # noqa: PLC0415 - the SDK loads only here

    tools = MemoryTools(MemoryApi(url, timeout_s=args.timeout), token, deadline_s=args.timeout)
    server = tools.server()
    if not args.http:
        print(f"chatmemory MCP over stdio, calling {url}", file=sys.stderr, flush=True)
        server.run("stdio")
        return 0
    try:
        listening = socket.create_server((args.host, args.port))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        print(f"error: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 2
    import uvicorn  # noqa: PLC0415 - only the HTTP transport needs it

    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, host=args.host
    )
    bound = listening.getsockname()[1]
    print(
        f"chatmemory MCP (streamable HTTP) on http://{args.host}:{bound}{MCP_PATH}, calling {url}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])
    return 0


def connection(args: argparse.Namespace, settings: Settings) -> tuple[str, TokenSource]:
    """The API's URL and where each call's token comes from; CommandError naming the fix."""
    named = args.url or settings.api_url
    folder = None  # the folder the command names, if any: only its server will do
    if args.state_dir:
        folder = Path(args.state_dir).expanduser()
    elif settings.state_dir_chosen:
        folder = settings.state_dir
    try:
        running = running_server(settings.well_known_state_dir, folder, named)
    except SeveralServers as exc:
        if named is None:
            raise CommandError(f"{exc}, or name the API with --url") from None
        running = None  # the API is named: its folder's secret is the one named, or the default
    url = named or (running.url if running else None)
    if url is None:
        raise CommandError(
            "no chatmemory server is running here: start one with `chatmemory serve`, "
            "or name the API with --url (or CHATMEMORY_API_URL)"
        )
    if not url.startswith(("http://", "https://")):
        raise CommandError("--url must start with http:// or https://")
    if args.user is not None:
        return url, _minted(args, settings, running.state_dir if running else None)
    fixed = args.token or settings.api_token
    if fixed is None and not args.http:
        raise CommandError(
            "say whom the tools act for: --user USER (a local user), or --token TOKEN "
            "(or CHATMEMORY_TOKEN)"
        )
    return url, lambda: fixed


def _minted(args: argparse.Namespace, settings: Settings, served: Path | None) -> TokenSource:
    """A fresh token for `args.user` per call, signed with the secret of the folder the
    server uses (a named one, else the running server's, else the default)."""
    if args.state_dir:
        state_dir = Path(args.state_dir).expanduser()
    elif served is not None and not settings.state_dir_chosen:
        state_dir = served
    else:
        state_dir = settings.state_dir
    tokens = LocalTokens(load_or_create_secret(state_dir, settings.local_token_secret))
    # Tokens live in real time, even for a server whose clock runs ahead.
    clock = Container(dataclasses.replace(settings, days_later=0)).clock
    user: str = args.user
    try:
        tokens.issue(user, clock.now(), ttl=MINTED_TTL)
    except InvalidField as exc:
        raise CommandError(f"--user {exc.reason}") from None
    return lambda: tokens.issue(user, clock.now(), ttl=MINTED_TTL)


def _seconds(raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds") from None
    if not 1 <= seconds <= 120:  # also refuses nan
        raise argparse.ArgumentTypeError("must be between 1 and 120 seconds")
    return seconds
