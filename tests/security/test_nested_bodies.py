"""A body nested thousands of levels deep is refused 400, in the contract's shape, on every
path that reads a body — before any parser recurses into it (Python's json raised
RecursionError on 20,000 levels: a 500) — and the server goes on serving."""

from __future__ import annotations

import pytest

from chatmemory.api.errors import MAX_BODY_BYTES
from chatmemory.api.json_nesting import MAX_JSON_DEPTH, nests_too_deep
from chatmemory.config import Container
from tests.support.local_server import Running
from tests.support.stored import stored_for

pytestmark = pytest.mark.e2e

USER = "alice"
LEVELS = 20_000
ARRAYS = b"[" * LEVELS + b"]" * LEVELS
OBJECTS = b'{"a":' * (LEVELS // 2) + b"1" + b"}" * (LEVELS // 2)
AS_STREAM = {"Accept": "text/event-stream"}


@pytest.mark.parametrize(
    "route",
    [
        ("POST", "/v1/memories", {}),
        ("PATCH", "/v1/memories/mem_0123456789abcdef0123456789abcdef", {}),
        ("POST", "/v1/context", {}),
        ("POST", "/v1/chat", {}),
        ("POST", "/v1/chat", AS_STREAM),
        ("POST", "/v1/memories/import", {}),
        ("PUT", "/v1/memory/settings", {}),
        ("POST", "/v1/observe", {}),
        ("POST", "/v1/rooms", {}),
    ],
    ids=lambda route: f"{route[0]} {route[1]}{' (stream)' if route[2] else ''}",
)
@pytest.mark.parametrize("bomb", [ARRAYS, OBJECTS], ids=["arrays", "objects"])
def test_a_body_nested_twenty_thousand_levels_deep_is_400_and_nothing_is_written(
    server: Running,
    container: Container,
    route: tuple[str, str, dict[str, str]],
    bomb: bytes,
) -> None:
    # Given a nesting bomb within the size limit
    method, path, headers = route
    assert len(bomb) <= MAX_BODY_BYTES
    token = server.token_for(USER)
    before = stored_for(container.stores, USER)

    # When it is sent
    answer = server.call(method, path, token=token, raw=bomb, headers=headers)

    # Then it is refused in the contract's shape, naming the limit, and nothing is stored
    assert answer.status == 400, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert f"deeper than {MAX_JSON_DEPTH} levels" in answer.body["error"]["message"]
    assert stored_for(container.stores, USER) == before
    # And the server still serves
    assert server.call("GET", "/v1/memories", token=token).status == 200


@pytest.mark.parametrize(
    ("body", "too_deep"),
    [
        (b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, False),
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), True),
        (b'{"text": "' + b"[{" * 5000 + b'"}', False),  # brackets inside a string are text
        (b'{"text": "a \\" [[[[", "x": ' + b"[" * 40 + b"]" * 40 + b"}", True),
        ('{"text": "Ünïcödé ' + "[" * 100 + '"}', False),
        (b'{"memories": [{"thread": {"deflects": [1, 2]}}]}', False),
    ],
    ids=["at-the-limit", "one-past", "in-a-string", "after-an-escaped-quote", "text", "import"],
)
def test_nesting_is_counted_outside_strings_only(body: bytes | str, too_deep: bool) -> None:
    assert nests_too_deep(body) is too_deep
