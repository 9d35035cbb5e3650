"""`chatmemory serve | token | open | flush | nightly | export | import | mcp` — the local
developer's entry points."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from chatmemory.api.identity import MAX_TOKEN_LIFETIME
from chatmemory.config import (
    ConfigurationError,
    Container,
    Settings,
    quiet_local_runtime,
    use_container,
)
from chatmemory.domain.errors import InvalidField
from chatmemory.local import portability_cli
from chatmemory.local.changes import start_relay
from chatmemory.local.embedder_mark import embedder_changed, mark_embedder
from chatmemory.local.open_cli import DEFAULT_PAGE_HOURS, open_page
from chatmemory.local.running import SeveralServers, record_running_server, running_server
from chatmemory.local.server import LocalGateway, LocalServer
from chatmemory.local.state_folder import StateFolderExposed, born_private, make_private
from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from chatmemory.mcp import command as mcp_command

# A local token lives at most a year: what every server accepts (api/identity.py).
MAX_TOKEN_HOURS = int(MAX_TOKEN_LIFETIME.total_seconds() // 3600)
MAX_DAYS_LATER = 3650  # how far ahead a local server may pretend to be


def _settings(state_dir: str | None, *, follow_server: bool = False) -> Settings:
    """Settings for this command. With no --state-dir (and no CHATMEMORY_STATE_DIR), a
    command that must meet a running server (token, flush) uses that server's folder;
    SeveralServers when more than one runs (`main` asks which)."""
    settings = Settings.from_env()
    if state_dir:
        return _private(dataclasses.replace(settings, state_dir=Path(state_dir).expanduser()))
    if follow_server and not settings.state_dir_chosen:
        running = running_server(settings.well_known_state_dir)
        if running is not None and running.state_dir != settings.state_dir.resolve():
            print(
                f"using the state folder of the server running at {running.url}: "
                f"{running.state_dir}",
                file=sys.stderr,
            )
            settings = dataclasses.replace(settings, state_dir=running.state_dir)
        if running is not None and running.state_dir == settings.state_dir.resolve():
            # The server's day is the one its background work must run on.
            settings = dataclasses.replace(settings, days_later=running.days_later)
    return _private(settings)


def _private(settings: Settings) -> Settings:
    """The settings, once their state folder is private (fixed and said, or refused)."""
    born_private()
    for fixed in make_private(settings.state_dir):
        print(f"made private: {fixed}", file=sys.stderr)
    return settings


def _tokens(settings: Settings) -> LocalTokens:
    return LocalTokens(load_or_create_secret(settings.state_dir, settings.local_token_secret))


def _port(raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range (0-65535; 0 picks a free one)")
    return port


def _days(raw: str) -> int:
    if not raw.isdigit() or int(raw) > MAX_DAYS_LATER:
        raise argparse.ArgumentTypeError(f"must be a whole number of days, 0..{MAX_DAYS_LATER}")
    return int(raw)


def _hours(raw: str) -> float:
    try:
        hours = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of hours") from None
    if not 0 < hours <= MAX_TOKEN_HOURS:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {MAX_TOKEN_HOURS} (a year)"
        )
    return hours


def serve(args: argparse.Namespace) -> int:
    settings = dataclasses.replace(_settings(args.state_dir), days_later=args.days_later)
    quiet_local_runtime()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    container = Container(settings)
    use_container(container)
    gateway = LocalGateway(settings.project_root, _tokens(settings))
    try:
        server = LocalServer(args.host, args.port, gateway)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        print(f"error: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 2
    stop = threading.Event()
    jobs = container.jobs_run_here
    if jobs is not None:  # folds, idle pipelines and purges run off the request path
        threading.Thread(target=jobs.run_forever, args=(stop,), name="jobs", daemon=True).start()
    relay = start_relay(container.change_relay, stop)  # change events into changes.jsonl
    server.start()  # connections are accepted at once; /v1/health says "starting" until ready
    print(
        f"chatmemory is listening on {server.url}\n"
        f"  state folder : {settings.state_dir} (store: {settings.store})\n"
        f"  get a token  : chatmemory token <user-id>"
        + ("" if args.state_dir is None else f" --state-dir {settings.state_dir}")
        + f"\n  try          : curl {server.url}/v1/health\n"
        + (
            f"  clock        : {args.days_later} day(s) ahead (--days-later)\n"
            if args.days_later
            else ""
        )
        + "loading the embedding model…",
        flush=True,
    )
    record = record_running_server(
        settings.well_known_state_dir, settings.state_dir, server.url, args.days_later
    )
    try:
        _mask_stored_messages(container)
        gateway.warm_up(container)
        _say_if_embedder_changed(settings.state_dir, container.embedder.name)
        print(f"ready: {server.url}", flush=True)
        stop.wait()
    except KeyboardInterrupt:
        print("\nstopped", flush=True)
    finally:
        stop.set()
        record.remove()
        server.stop()
        if relay is not None:
            relay.join(timeout=5)  # the last changes out before exiting
    return 0


def token(args: argparse.Namespace) -> int:
    """Print a user's token, or with --app the app credential (argparse makes it one)."""
    settings = _settings(args.state_dir, follow_server=True)
    # A token lives in real time (its signature is checked against the wall clock), even
    # for a server whose clock runs ahead.
    real_time = dataclasses.replace(settings, days_later=0)
    tokens, now = _tokens(settings), Container(real_time).clock.now()
    ttl = timedelta(hours=args.hours)
    try:
        if args.app is not None:
            minted = tokens.issue_app(args.app, now, ttl=ttl)
        else:
            minted = tokens.issue(args.user_id, now, ttl=ttl)
    except InvalidField as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(minted)
    return 0


def flush(args: argparse.Namespace) -> int:
    """Run every pending background pipeline now, against the same state folder a running
    server uses (SQLite in WAL mode lets both work on it at once)."""
    settings = _settings(args.state_dir, follow_server=True)
    quiet_local_runtime()
    container = Container(settings)
    use_container(container)
    started = container.idle.sweep(now_or_never=True)
    rooms = container.room_writes.sweep(now_or_never=True)
    # Purges a server queued but did not finish (it stopped, or a step failed) run here.
    purges = container.purge_sweep.sweep(now_or_never=True)
    container.conversation_deletes.finish()  # a deleted conversation's purge that stopped
    _mask_stored_messages(container)
    jobs = container.jobs_run_here
    if jobs is not None:
        jobs.run_pending()
    # Memories still waiting for their vectors (the embedder failed) or their own uses (a
    # server stopped before its worker ran their jobs, or the model failed): written now.
    uses = container.uses.catch_up()
    # What the nightly schedule does on AWS: threads gone quiet go to sleep.
    reviewed = container.threads.review()
    # Every profile made true again from the active memories, whatever wrote them.
    profiles = container.profiles.rebuild_every()
    left = len(
        container.stores.tombstones.pending_purges(deleted_before=container.clock.now(), limit=100)
    )
    print(
        f"ran {started} write pipeline run(s), {rooms} room write(s) and {purges} purge(s); "
        f"wrote the uses of {uses.written} memory(ies) and the vectors of {uses.embedded}; "
        f"{reviewed.dormant} quiet thread(s) went dormant",
        flush=True,
    )
    print(f"rebuilt {profiles} profile(s)", flush=True)
    if container.change_relay is not None:  # what ran above changed, and what a server left
        relayed = container.change_relay.relay()
        print(f"published {relayed.published} change event(s)", flush=True)
        if relayed.set_aside:  # unreadable: logged with the reason, passed, never retried
            print(f"set aside {relayed.set_aside} unreadable audit event(s)", file=sys.stderr)
    if left:
        print(f"{left} user(s) still have deletions waiting to be purged", file=sys.stderr)
        return 1
    return 0


def _mask_stored_messages(container: Container) -> None:
    """Mask the secrets in messages stored before they were masked on write, once per
    state folder (recorded as done); a store that cannot write now is left for the next
    start or flush."""
    try:
        masked = container.message_masking.run()
    except Exception as exc:
        print(
            f"warning: the secrets in stored messages could not be masked yet "
            f"({type(exc).__name__}); the next start or flush tries again",
            file=sys.stderr,
            flush=True,
        )
        return
    if masked.rewritten:
        print(
            f"masked the secrets in {masked.rewritten} stored message(s) and summary(ies) "
            "kept from before secrets were masked",
            flush=True,
        )


def _say_if_embedder_changed(state_dir: Path, name: str) -> None:
    earlier = embedder_changed(state_dir, name)
    if earlier is not None:
        print(
            f"warning: the memories in {state_dir} were embedded by {earlier}, and this "
            f"runs {name}: recall cannot compare them until `chatmemory reindex --reembed`",
            file=sys.stderr,
            flush=True,
        )


def reindex(args: argparse.Namespace) -> int:
    """Vectors of the embedder in use for every memory recall cannot compare (written when
    the embedder failed, or by another one), and every memory in use sent to the index."""
    settings = _settings(args.state_dir, follow_server=True)
    quiet_local_runtime()
    container = Container(settings)
    use_container(container)
    done = container.reindexer.run(args.user or None, republish=True, reembed=args.reembed)
    if args.reembed and not args.user and not done.unembedded:
        mark_embedder(settings.state_dir, container.embedder.name)
    elif not args.reembed:
        _say_if_embedder_changed(settings.state_dir, container.embedder.name)
    print(
        f"re-indexed {done.users} user(s): {done.embedded} memory(ies) given new vectors, "
        f"{done.published} sent to the index, {done.changed} changed meanwhile",
        flush=True,
    )
    if done.unembedded:
        print(f"{done.unembedded} memory(ies) could not be embedded; run it again", file=sys.stderr)
        return 1
    return 0


def nightly(args: argparse.Namespace) -> int:
    """The nightly thread review, now: every live thread quiet past three times its
    rhythm goes dormant (AWS runs it on a schedule; `flush` runs it too)."""
    settings = _settings(args.state_dir, follow_server=True)
    quiet_local_runtime()
    container = Container(settings)
    use_container(container)
    reviewed = container.threads.review()
    print(
        f"reviewed {reviewed.checked} quiet thread(s): {reviewed.dormant} went dormant",
        flush=True,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chatmemory", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve_cmd = commands.add_parser("serve", help="start the local server (embedded defaults)")
    serve_cmd.add_argument("--host", default="127.0.0.1")
    serve_cmd.add_argument("--port", type=_port, default=3000, help="0 picks a free port")
    serve_cmd.add_argument("--state-dir", help="folder for the SQLite file and the local secret")
    serve_cmd.add_argument(
        "--days-later",
        type=_days,
        default=0,
        help="run the clock this many days ahead (0..3650), to watch threads ripen and fade",
    )
    serve_cmd.set_defaults(run=serve)

    token_cmd = commands.add_parser(
        "token", help="print a bearer token for a user, or the app credential (--app)"
    )
    whom = token_cmd.add_mutually_exclusive_group(required=True)
    whom.add_argument("user_id", nargs="?", help="the user the token is for")
    whom.add_argument(
        "--app",
        metavar="NAME",
        help="the app credential instead: acts for this deployment's users in room calls",
    )
    token_cmd.add_argument("--state-dir", help="the state folder the server uses")
    token_cmd.add_argument(
        "--hours", type=_hours, default=24 * 7, help="lifetime, up to a year (default 7 days)"
    )
    token_cmd.set_defaults(run=token)

    open_cmd = commands.add_parser(
        "open", help="open the manage page and demo chat of the running server, signed in"
    )
    open_cmd.add_argument("user_id", help="the user to sign in as")
    open_cmd.add_argument("--state-dir", help="the state folder the server uses (checked)")
    open_cmd.add_argument(
        "--hours", type=_hours, default=DEFAULT_PAGE_HOURS, help="the sign-in's lifetime"
    )
    open_cmd.add_argument("--no-browser", action="store_true", help="only print the address")
    open_cmd.set_defaults(run=open_page)

    flush_cmd = commands.add_parser(
        "flush", help="run every pending background pipeline now (no waiting for idle timers)"
    )
    flush_cmd.add_argument("--state-dir", help="the state folder the server uses")
    flush_cmd.set_defaults(run=flush)

    reindex_cmd = commands.add_parser(
        "reindex",
        help="give every memory vectors of the embedder in use and refill the vector index",
    )
    reindex_cmd.add_argument("--state-dir", help="the state folder the server uses")
    reindex_cmd.add_argument(
        "--user", action="append", help="only this user (repeat for more); default: everyone"
    )
    reindex_cmd.add_argument(
        "--reembed",
        action="store_true",
        help="embed every memory again (after switching to another model of the same size)",
    )
    reindex_cmd.set_defaults(run=reindex)

    nightly_cmd = commands.add_parser(
        "nightly", help="run the nightly thread review now (quiet threads go dormant)"
    )
    nightly_cmd.add_argument("--state-dir", help="the state folder the server uses")
    nightly_cmd.set_defaults(run=nightly)

    portability_cli.add_commands(commands)  # export USER FILE, import USER FILE
    mcp_cmd = commands.add_parser(
        "mcp", help="serve the memory tools to an MCP host (stdio; --http for streamable HTTP)"
    )
    mcp_command.add_arguments(mcp_cmd, port=_port)
    mcp_cmd.set_defaults(run=mcp_command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except ConfigurationError as exc:  # names the setting and why, never its value
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SeveralServers as exc:  # a command that follows a server, and several run
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StateFolderExposed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    raise SystemExit(main())
