"""Thousands of requests, each on a connection of its own, leave the server's descriptor
count where it was: nothing a request opens outlives it.

A thread per connection once left each one's SQLite connection open for good — two
descriptors per request — until past the process's limit every data route answered 500
while health said ok. The server here is the real local server, in this process, so its
descriptors are this process's (`/proc/self/fd`).
"""

from __future__ import annotations

import http.client
import json
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.gates import tally
from tests.support.local_server import Running

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc"),
]

REQUESTS = 5_000
WARM_UP = 400
CHECK_EVERY = 1_000
CLIENTS = 4  # at once, as a page, a CLI and an agent would
WARM_UP_CLIENTS = 8  # more than the soak's, so no worker starts during it
TOLERANCE = 10  # descriptors: a log file rotating, a cache filling, never one per request
USER = "alice"


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


class FreshConnections:
    """One request per TCP connection, closed as soon as its answer is read."""

    def __init__(self, url: str, token: str) -> None:
        address = urlsplit(url)
        self._host, self._port = address.hostname or "127.0.0.1", address.port or 80
        self._token = token

    def send(self, number: int) -> int:
        """The status of the `number`th request of the mix: mostly listing memories and
        building a context, now and then a refusal (bad token, bad JSON, no such route)."""
        method, path, body, token = self._request(number)
        connection = http.client.HTTPConnection(self._host, self._port, timeout=10)
        try:
            headers = {"Content-Type": "application/json", "Connection": "close"}
            headers["Authorization"] = f"Bearer {token}"
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def _request(self, number: int) -> tuple[str, str, bytes | None, str]:
        if number % 50 == 7:
            return "GET", "/v1/memories", None, "not-a-token"
        if number % 50 == 17:
            return "POST", "/v1/context", b'{"message": ', self._token
        if number % 50 == 27:
            return "GET", "/v1/no-such-route", None, self._token
        if number % 4 == 3:
            body = json.dumps({"message": "what do I eat?"}).encode()
            return "POST", "/v1/context", body, self._token
        return "GET", "/v1/memories?limit=5", None, self._token


def test_five_thousand_requests_on_fresh_connections_leave_the_descriptor_count_flat(
    server: Running,
) -> None:
    # Given a user with a memory, and a server that has served a few hundred requests
    token = server.token_for(USER)
    created = server.call("POST", "/v1/memories", token=token, body={"text": "Is vegetarian."})
    assert created.status == 201
    client = FreshConnections(server.url, token)
    with ThreadPoolExecutor(WARM_UP_CLIENTS) as clients:
        list(clients.map(client.send, range(WARM_UP)))
    assert server.server is not None and server.server.wait_idle()
    before = open_descriptors()

    # When 5,000 more arrive, four clients at a time, each request on a new connection
    statuses: Counter[int] = Counter()
    counts = []
    with ThreadPoolExecutor(CLIENTS) as clients:
        for start in range(0, REQUESTS, CHECK_EVERY):
            statuses.update(clients.map(client.send, range(start, start + CHECK_EVERY)))
            assert server.server.wait_idle()
            counts.append(open_descriptors())

    # Then every one was answered (2xx, or a 4xx for the bad ones), and the descriptors
    # open stayed where they were after the warm-up, all along
    assert set(statuses) <= {200, 400, 401, 404}, statuses
    assert sum(statuses.values()) == REQUESTS and statuses[200] >= REQUESTS * 0.9
    drift = max(abs(count - before) for count in counts)
    tally.record_replay(
        "hostile: 5,000 requests on fresh connections, descriptors counted",
        facts=0,
        probes=REQUESTS,
        requests=REQUESTS + WARM_UP,
        hits=sum(abs(count - before) > TOLERANCE for count in counts),
        embedder="—",
        detail=f"{before} open after warm-up, then {counts} (drift {drift}, allowed {TOLERANCE})",
    )
    assert all(abs(count - before) <= TOLERANCE for count in counts), (before, counts)
