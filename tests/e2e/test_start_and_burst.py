"""The local server as a developer starts it: ready means ready, and a burst is served.

Regression: the first request after start waited 5-40 s for the embedding model (and so
timed out now and then), and 50 parallel clients saw 6-42 % connection resets because the
listen backlog was the standard library's 5.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from chatmemory.local.tokens import LocalTokens, load_or_create_secret
from tests.support.cli_server import ServedProcess, cli_environment, serve_in_process
from tests.support.local_server import Running

pytestmark = pytest.mark.e2e

CLIENTS = 50
ROUNDS = 3
USERS = 10


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[tuple[ServedProcess, Running]]:
    root = tmp_path_factory.mktemp("served")
    with serve_in_process(cli_environment(root, model_cache), "--state-dir", str(root)) as served:
        tokens = LocalTokens(load_or_create_secret(root))
        yield served, Running(url=served.url, tokens=tokens, secret="")


def test_the_first_request_after_ready_needs_no_warm_up(
    served: tuple[ServedProcess, Running],
) -> None:
    process, server = served
    alice = server.token_for("alice")

    # Given the server said it is ready, health agrees at once
    assert process.banner[-1] == f"ready: {server.url}"
    assert server.call("GET", "/v1/health").body == {"status": "ok"}

    # When the first request that embeds arrives, it needs no model loading
    started = time.perf_counter()
    answer = server.call(
        "POST", "/v1/context", token=alice, body={"message": "What should I cook tonight?"}
    )
    elapsed = time.perf_counter() - started

    # Then it is answered well inside a second (a cold model took 5-40 s)
    assert answer.status == 200
    assert elapsed < 1.0, f"the first request took {elapsed:.2f} s"


def test_fifty_parallel_clients_are_all_served_and_every_write_is_kept(
    served: tuple[ServedProcess, Running],
) -> None:
    _, server = served
    tokens = {user: server.token_for(f"burst-{user}") for user in range(USERS)}

    def client(number: int, round_: int) -> tuple[int, str]:
        user = number % USERS
        text = f"Keeps bicycle number {number} from round {round_}."
        created = server.call("POST", "/v1/memories", token=tokens[user], body={"text": text})
        assert created.status == 201, created.body
        assert created.body["text"] == text  # its own request's answer, no one else's
        listed = server.call("GET", "/v1/memories?limit=100", token=tokens[user])
        assert listed.status == 200
        return user, created.body["memory_id"]

    # Given 50 clients at once, three rounds in a row (a connection reset raises here)
    acknowledged: dict[int, set[str]] = {user: set() for user in range(USERS)}
    for round_ in range(ROUNDS):
        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            answers = pool.map(client, range(CLIENTS), [round_] * CLIENTS)
            for user, memory_id in answers:
                acknowledged[user].add(memory_id)

    # Then every acknowledged write is listed for its user with its own words, and nothing
    # else is (concurrent requests once read each other's bodies and users)
    assert sum(map(len, acknowledged.values())) == CLIENTS * ROUNDS
    for user, memory_ids in acknowledged.items():
        listed = server.call("GET", "/v1/memories?limit=100", token=tokens[user]).body
        found = {m["memory_id"]: m["text"] for m in listed["memories"]}
        assert set(found) == memory_ids, (user, memory_ids ^ set(found))
        said = {
            f"Keeps bicycle number {n} from round {r}."
            for n in range(user, CLIENTS, USERS)
            for r in range(ROUNDS)
        }
        assert set(found.values()) == said
