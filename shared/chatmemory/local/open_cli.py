"""`chatmemory open USER` — the manage page of the running server, signed in as USER.

It mints a token as `chatmemory token` does, signed with the running server's secret, and
opens `<server>/#token=…`. The token rides in the URL's fragment, which a browser never
sends to a server; the page moves it into the tab's session storage and out of the address
bar at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import webbrowser
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

from chatmemory.config import Container, Settings
from chatmemory.domain.errors import InvalidField
from chatmemory.local.running import SeveralServers, running_server, running_servers
from chatmemory.local.tokens import LocalTokens, load_or_create_secret

DEFAULT_PAGE_HOURS = 8  # a sign-in for a working day, not the week a CLI token lives


def page_url(server_url: str, token: str) -> str:
    """The page's address with the token in its fragment."""
    return f"{server_url.rstrip('/')}/#token={quote(token, safe='')}"


def open_page(args: argparse.Namespace) -> int:
    """Print the signed-in page's URL and open it in the browser (unless --no-browser)."""
    settings = Settings.from_env()
    servers = running_servers(settings.well_known_state_dir)
    if not servers:
        print(
            "error: no chatmemory server is running; start one with `chatmemory serve` "
            "(or `make run`), then run this again",
            file=sys.stderr,
        )
        return 2
    folder = Path(args.state_dir).expanduser().resolve() if args.state_dir else None
    try:
        running = running_server(settings.well_known_state_dir, folder)
    except SeveralServers as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if running is None:
        serving = "; ".join(f"{server.url} uses {server.state_dir}" for server in servers)
        print(
            f"error: no server running uses the state folder {args.state_dir} ({serving}); "
            "its page would refuse that token",
            file=sys.stderr,
        )
        return 2
    served = dataclasses.replace(settings, state_dir=running.state_dir, days_later=0)
    # A token lives in real time (the server checks it against the wall clock), even for
    # a server whose clock runs ahead.
    now = Container(served).clock.now()
    tokens = LocalTokens(load_or_create_secret(served.state_dir, served.local_token_secret))
    try:
        token = tokens.issue(args.user_id, now, ttl=timedelta(hours=args.hours))
    except InvalidField as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    url = page_url(running.url, token)
    print(url, flush=True)
    if not args.no_browser and not webbrowser.open(url):
        print("no browser could be started here; open the address above", file=sys.stderr)
    return 0
