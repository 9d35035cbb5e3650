"""Another user's ids behave exactly like ids that do not exist: 404, and nothing changes.

Every operation that takes an id — in its path, or as a `*_id` field of its body — comes
from the served OpenAPI document, so a route added later is tried too (or fails loudly).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest

from chatmemory.config import Container
from tests.support.local_server import Answer, Running
from tests.support.openapi_operations import Operation, minimal_body
from tests.support.stored import nothing_stored_for, stored_for

pytestmark = pytest.mark.e2e

AS_JSON: dict[str, str] = {}
AS_STREAM = {"Accept": "text/event-stream"}
# Where a body's id names the object to create rather than one to find: a user's token may
# not choose it (docs/api.md "Rooms"), so alice's id is refused exactly as a free one is.
CREATES = {"POST /v1/rooms"}
# A body's id the client makes up for its own request (an idempotency key, docs/api.md
# "Observe"): each user has their own, so another user's is simply a new one of bob's.
CLIENT_KEYS = {"turn_id"}


@dataclass(frozen=True)
class Attempt:
    label: str
    method: str
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str]

    def send(self, server: Running, token: str) -> Answer:
        return server.call(
            self.method, self.path, token=token, body=self.body, headers=self.headers
        )


def _id_fields(operation: Operation) -> list[str]:
    return [
        name for name in operation.body_fields if name.endswith("_id") and name not in CLIENT_KEYS
    ]


def attempts_with(
    document: dict[str, Any], operations: list[Operation], ids: dict[str, str]
) -> list[Attempt]:
    """Each id-taking operation, given these ids, as JSON and as a stream."""
    attempts = []
    for op in operations:
        body_ids = _id_fields(op)
        if not op.path_params and not body_ids:
            continue
        body = minimal_body(document, op.body_schema) if op.body_schema else None
        if body is not None:
            body.update({name: ids[name] for name in body_ids})
        for headers in (AS_JSON, AS_STREAM):
            kind = "stream" if headers else "json"
            attempts.append(
                Attempt(f"{op.label} ({kind})", op.method, op.url(**ids), body, headers)
            )
    return attempts


def _unknown(real_id: str) -> str:
    """An id of the same shape that nobody has."""
    return real_id[:-1] + ("0" if real_id[-1] != "0" else "1")


@pytest.fixture
def alices_ids(server: Running, container: Container) -> dict[str, str]:
    """Alice's memory, a notice of what was learned from her chat, and that conversation."""
    alice = server.token_for("alice")
    chat = server.call(
        "POST", "/v1/chat", token=alice, body={"message": "Hi! I'm vegetarian and I live in Pune."}
    )
    assert chat.status == 200
    container.idle.sweep(now_or_never=True)  # what `chatmemory flush` does
    [notice] = server.call("GET", "/v1/notices", token=alice).body["notices"]
    memory = server.call("POST", "/v1/memories", token=alice, body={"text": "Has a cat."})
    assert memory.status == 201
    room = server.call(
        "POST",
        "/v1/rooms",
        token=alice,
        body={"kind": "private", "personas": ["warren"], "members": ["alice"]},
    )
    assert room.status == 201
    return {
        "memory_id": memory.body["memory_id"],
        "notice_id": notice["notice_id"],
        "conversation_id": chat.body["conversation_id"],
        "room_id": room.body["room_id"],
        "user_id": "alice",
    }


def test_every_id_taking_route_is_tried(
    document: dict[str, Any], served_operations: list[Operation], alices_ids: dict[str, str]
) -> None:
    # Given every parameter and body id the document names
    named = {p for op in served_operations for p in op.path_params} | {
        field for op in served_operations for field in _id_fields(op)
    }

    # Then alice owns an object of each kind, so no id-taking route goes untried
    assert named == set(alices_ids)
    with_path_ids = {op.label for op in served_operations if op.path_params}
    tried = {
        a.label.rsplit(" (", 1)[0] for a in attempts_with(document, served_operations, alices_ids)
    }
    assert with_path_ids <= tried


def test_another_users_ids_are_not_found_and_change_nothing(
    server: Running,
    container: Container,
    document: dict[str, Any],
    served_operations: list[Operation],
    alices_ids: dict[str, str],
) -> None:
    # Given alice's memory, notice and conversation, and everything stored for her now
    bob = server.token_for("bob")
    before = stored_for(container.stores, "alice")
    attempts = attempts_with(document, served_operations, alices_ids)
    unknown = {kind: _unknown(value) for kind, value in alices_ids.items()}

    # When bob sends alice's ids to every operation that takes one
    answers = {a.label: a.send(server, bob) for a in attempts}

    # Then each answers exactly as for an id nobody has: 404, with the same body
    for attempt, same_for_nobody in zip(
        attempts, attempts_with(document, served_operations, unknown), strict=True
    ):
        answer, baseline = answers[attempt.label], same_for_nobody.send(server, bob)
        assert (answer.status, answer.body) == (baseline.status, baseline.body), attempt.label
        if attempt.label.rsplit(" (", 1)[0] in CREATES:
            assert (answer.status, answer.body["error"]["code"]) == (403, "forbidden")
            continue
        assert (answer.status, answer.body["error"]["code"]) == (404, "not_found"), attempt.label

    # And nothing of alice's changed, and nothing was written for bob
    assert stored_for(container.stores, "alice") == before
    assert nothing_stored_for(container.stores, "bob")


def test_alices_ids_still_work_for_alice(
    server: Running,
    document: dict[str, Any],
    served_operations: list[Operation],
    alices_ids: dict[str, str],
) -> None:
    # Given the very requests bob was refused (so his 404s are about whose ids they are)
    alice = server.token_for("alice")
    reads = [
        a
        for a in attempts_with(document, served_operations, alices_ids)
        if a.method == "GET" or a.path == "/v1/context"
    ]

    # When alice sends the ones that change nothing
    answers = {a.label: a.send(server, alice).status for a in reads}

    # Then she is answered
    assert answers and set(answers.values()) == {200}, answers


def test_another_users_turn_id_is_a_new_turn_of_ones_own(
    server: Running, container: Container
) -> None:
    # Given a turn alice reported under her own turn id
    alice, bob = server.token_for("alice"), server.token_for("bob")
    turn = {"turn_id": "t-1", "user": "I'm vegetarian.", "assistant": "Noted."}
    hers = server.call("POST", "/v1/observe", token=alice, body=turn)
    before = stored_for(container.stores, "alice")

    # When bob reports a turn under the same id
    his = server.call("POST", "/v1/observe", token=bob, body={**turn, "user": "I'm a nurse."})

    # Then it is bob's own new turn, and nothing of alice's is touched or told
    assert (hers.status, his.status) == (201, 201)
    assert his.body["conversation_id"] != hers.body["conversation_id"]
    assert stored_for(container.stores, "alice") == before


def test_another_users_listing_cursor_reveals_nothing(server: Running) -> None:
    # Given a page of alice's memories and the cursor to her next page
    alice, bob = server.token_for("alice"), server.token_for("bob")
    for text in ("Has a cat.", "Has a dog.", "Drinks tea."):
        server.call("POST", "/v1/memories", token=alice, body={"text": text})
    cursor = server.call("GET", "/v1/memories?limit=1", token=alice).body["next"]
    assert cursor

    # When bob lists with alice's cursor
    answer = server.call("GET", f"/v1/memories?limit=1&next={quote(cursor)}", token=bob)

    # Then it is refused as a cursor he was never given, naming the field
    assert (answer.status, answer.body["error"]["code"]) == (400, "validation_error")
    assert "next" in answer.body["error"]["message"]
