"""A bounded, repeatable fuzz of every documented operation: nothing a client sends makes a
5xx, and every answer is one the served document declares — its status, its content type,
its body's schema and its headers.

Schemathesis turns each operation of the document the server serves into requests — valid
ones and deliberately invalid ones — sent as a signed-in user, with ids that exist as well
as ids that do not. A fixed seed and derandomized generation make every run send the same
requests, and the example budget keeps the whole pass to seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from chatmemory.config import Container
from tests.support.local_server import Running
from tests.support.openapi_operations import operations as documented

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = 20261130
EXAMPLES_PER_OPERATION = 50
STREAMED = "text/event-stream"  # operations whose description offers it are fuzzed both ways


Operation = schemathesis.APIOperation[Any, Any, Any, Any]


def _operations(document: dict[str, Any]) -> list[Operation]:
    """Every operation of the document, as schemathesis reads it."""
    # A whole streamed reply is read, so its end can be checked (the default stops early).
    config = schemathesis.Config.from_dict({"max-stream-events": 10_000, "request-timeout": 10})
    found = []
    for result in schemathesis.openapi.from_dict(document, config=config).get_all_operations():
        assert isinstance(result, Ok), f"schemathesis cannot read an operation: {result!r}"
        found.append(result.ok())
    return found


def _own_ids(server: Running, container: Container, user: str) -> dict[str, str]:
    """Objects of the user's own (their private chat among them), so requests reach past
    "not found"."""
    token = server.token_for(user)
    chat = server.call(
        "POST", "/v1/chat", token=token, body={"message": "I'm vegetarian and I live in Pune."}
    )
    container.idle.sweep(now_or_never=True)
    notices = server.call("GET", "/v1/notices", token=token).body["notices"]
    memory = server.call("POST", "/v1/memories", token=token, body={"text": "Has a cat."})
    room = server.call(
        "POST",
        "/v1/rooms",
        token=token,
        body={"kind": "private", "personas": ["warren"], "members": [user]},
    )
    return {
        "memory_id": memory.body["memory_id"],
        "notice_id": notices[0]["notice_id"],
        "conversation_id": chat.body["conversation_id"],
        "room_id": room.body["room_id"],
        "user_id": user,
    }


def _cases(operation: Operation, ids: dict[str, str]) -> st.SearchStrategy[Any]:
    """Valid and invalid requests, with path ids of the user's own and made-up ones."""
    own = {p.name: ids[p.name] for p in operation.path_parameters}
    return st.one_of(
        *(
            operation.as_strategy(mode, path_parameters=path_ids)
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
            for path_ids in ({}, own)
        )
    )


def _fuzz(strategy: st.SearchStrategy[Any], send: Callable[[Any], None]) -> None:
    @seed(SEED)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        send(case)

    run()


CONFORMANCE = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


def _conforms(server: Running, headers: dict[str, str], case: Any) -> None:
    case.call_and_validate(base_url=server.url, headers=headers, checks=CONFORMANCE)


def _streams_cleanly(server: Running, headers: dict[str, str], case: Any) -> None:
    """Refused before streaming, or streamed to its end with no error event."""
    response = case.call(base_url=server.url, headers={**headers, "Accept": STREAMED})
    case.validate_response(
        response, checks=[not_a_server_error, status_code_conformance, content_type_conformance]
    )
    if response.status_code == 200:
        assert "event: error" not in response.text, case.as_curl_command()
        assert "event: done" in response.text, case.as_curl_command()


def test_every_answer_to_any_request_is_one_the_document_declares(
    server: Running, container: Container, document: dict[str, Any]
) -> None:
    # Given every operation the served document declares, each fuzzed by a user of its own
    operations = _operations(document)
    fuzzed = []

    for number, operation in enumerate(operations):
        token = server.token_for(f"fuzzer-{number}")
        ids = _own_ids(server, container, f"fuzzer-{number}")

        # When each is sent generated requests (a failure names the request that made a 5xx)
        auth = {"Authorization": f"Bearer {token}"}
        _fuzz(_cases(operation, ids), partial(_conforms, server, auth))
        fuzzed.append(operation.label)

    # Then none answered 5xx or off the document, and no documented operation was left out
    assert sorted(fuzzed) == sorted(op.label for op in documented(document))


def test_no_streamed_request_fails_on_our_side(
    server: Running, container: Container, document: dict[str, Any]
) -> None:
    # Given the operations that also answer as Server-Sent Events
    streaming = [
        op for op in _operations(document) if STREAMED in op.definition.raw.get("description", "")
    ]
    assert streaming, "no operation offers a stream any more: update this test"

    for number, operation in enumerate(streaming):
        token = server.token_for(f"streamer-{number}")
        ids = _own_ids(server, container, f"streamer-{number}")

        # When each generated request asks for a stream, then none fails on our side
        auth = {"Authorization": f"Bearer {token}"}
        _fuzz(_cases(operation, ids), partial(_streams_cleanly, server, auth))
