"""One real server and one real browser per module; a fresh browser context per test.

The browser is the system's Chromium (Debian's `chromium`), driven by Playwright's Python
package; Playwright's own browser download is never used. Without a Chromium the browser
tests skip and say how to install one.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from chatmemory.local.open_cli import page_url
from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from tests.support.cli_server import ServedProcess, cli_environment, serve_in_process

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/lib/chromium/chromium")
# Headless, and quiet: no first-run pages, no update or sync traffic, nothing but 127.0.0.1.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 15_000  # what a step may take on a busy machine before it fails (never a sleep)
expect.set_options(timeout=WAIT_MS)


def chromium_path() -> str | None:
    """The system's Chromium, if one is installed."""
    found = shutil.which("chromium")
    if found:
        return found
    return next((path for path in CHROMIUM_PATHS if Path(path).is_file()), None)


@dataclass
class Site:
    """The running server, as the page and the test both reach it."""

    served: ServedProcess
    state_dir: Path

    def token_for(self, user: str) -> str:
        tokens = LocalTokens(load_or_create_secret(self.state_dir))
        return tokens.issue(user, datetime.now(UTC))

    def call(self, method: str, path: str, user: str, body: Any = None) -> tuple[int, Any]:
        """The API's answer, called as the user (to check what the page did, for real)."""
        data = json.dumps(body).encode() if body is not None else None
        request = Request(self.served.url + path, data=data, method=method)  # noqa: S310 - our own local server
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {self.token_for(user)}")
        try:
            with urlopen(request, timeout=30) as response:  # noqa: S310
                payload = response.read()
                return response.status, json.loads(payload) if payload else None
        except HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def texts(self, user: str, status: str = "active") -> list[str]:
        """The texts of the user's memories with that status."""
        answer, listed = self.call("GET", f"/v1/memories?status={status}", user)
        assert answer == 200, listed
        return [memory["text"] for memory in listed["memories"]]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Site]:
    """`chatmemory serve` on a free port over a fresh state folder, for the whole module."""
    folder = tmp_path_factory.mktemp("browser")
    state_dir = folder / "state"
    environment = cli_environment(folder, model_cache)
    with serve_in_process(environment, "--state-dir", str(state_dir)) as served:
        yield Site(served=served, state_dir=state_dir)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The system's Chromium, launched once for the module."""
    executable = chromium_path()
    if executable is None:
        pytest.skip(
            "no Chromium found (looked for `chromium` on PATH and in /usr/bin): the browser "
            "tests need Debian's chromium package (`apt-get install chromium`; `make test` "
            "installs it where it can)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


OpenPage = Callable[..., Page]


@pytest.fixture
def open_page(browser: Browser, site: Site) -> Iterator[OpenPage]:
    """Opens the page signed in as a user (`#token=…`, as `chatmemory open` does), each
    call in a context of its own: its own tab storage, as a new browser profile has."""
    contexts = []

    def opened(user: str, *, width: int = 1200, height: int = 900, url: str | None = None) -> Page:
        context = browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url or page_url(site.served.url, site.token_for(user)))
        # A link signs in only once the person says so; then the page loads what it shows
        # (the settings, then the memories), and the test starts on a settled page
        page.get_by_role("button", name=f"Sign in as {user}").click()
        page.get_by_text(f"Signed in as {user}").wait_for()
        page.locator('#memory-groups[aria-busy="false"]').wait_for(state="attached")
        assert errors == []
        return page

    yield opened
    for context in contexts:
        context.close()
