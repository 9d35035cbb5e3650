"""Bad bearer tokens are refused with 401 on every route that needs one, streamed chat included.

The routes come from the served OpenAPI document, so a route added later is covered too.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory.config import Container
from chatmemory.local.sam_template import http_routes, load_template, match_route
from tests.support.forged_tokens import local_claims, signed, unsigned
from tests.support.local_server import ROOT, Answer, Running
from tests.support.openapi_operations import Operation, minimal_body
from tests.support.stored import nothing_stored_for

pytestmark = pytest.mark.e2e

USER = "alice"
SOME_ID = "some_id_0"  # well formed for every id parameter, and nobody's
AS_JSON: dict[str, str] = {}
AS_STREAM = {"Accept": "text/event-stream"}


def _tampered(server: Running) -> str:
    """A real token of alice's whose payload was rewritten to name bob, signature kept."""
    header, _, signature = server.token_for(USER).split(".")
    payload = unsigned(local_claims("bob")).split(".")[1]
    return f"{header}.{payload}.{signature}"


BAD_TOKENS: dict[str, Callable[[Running], str | None]] = {
    "no token": lambda server: None,
    "not a JWT": lambda server: "not-a-token",
    "tampered payload": _tampered,
    "signed with another key": lambda server: signed(
        local_claims(USER), "another-secret-that-is-long-enough-to-look-real"
    ),
    "alg none": lambda server: unsigned(local_claims(USER)),
    "expired": lambda server: server.tokens.issue(
        USER, datetime.now(UTC) - timedelta(days=2), ttl=timedelta(hours=1)
    ),
    "another audience": lambda server: signed(
        local_claims(USER, aud="someone-else"), server.secret
    ),
    "no sub": lambda server: signed(local_claims(sub=None), server.secret),
    "empty sub": lambda server: signed(local_claims(sub=""), server.secret),
    # Signed with the right key, but the subject is no user id the product could use.
    "sub with surrounding spaces": lambda server: signed(
        local_claims(sub=f" {USER} "), server.secret
    ),
    "sub too long": lambda server: signed(local_claims(sub="u" * 200), server.secret),
    "sub not a string": lambda server: signed(local_claims(sub=42), server.secret),
}


def _send(
    server: Running,
    document: dict[str, Any],
    operation: Operation,
    token: str | None,
    headers: dict[str, str],
) -> Answer:
    """The operation with a body it would accept and a well-formed id: only the token varies."""
    body = minimal_body(document, operation.body_schema) if operation.body_schema else None
    path = operation.url(**dict.fromkeys(operation.path_params, SOME_ID))
    return server.call(operation.method, path, token=token, body=body, headers=headers)


def _is_refused(answer: Answer) -> bool:
    return (
        answer.status == 401
        and isinstance(answer.body, dict)
        and answer.body.get("error", {}).get("code") == "unauthorized"
        and bool(answer.body["error"].get("message"))
        and answer.headers.get("WWW-Authenticate") == "Bearer"
    )


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
def test_a_bad_token_is_refused_on_every_route_that_needs_one(
    server: Running,
    container: Container,
    document: dict[str, Any],
    served_operations: list[Operation],
    kind: str,
) -> None:
    # Given a token that must not let anyone in
    token = BAD_TOKENS[kind](server)
    guarded = [op for op in served_operations if op.needs_token]
    assert guarded

    # When it is sent to every guarded route, asking for JSON and for a stream
    not_refused = {
        f"{op.label} ({'stream' if headers else 'json'})": (answer.status, answer.body)
        for op in guarded
        for headers in (AS_JSON, AS_STREAM)
        if not _is_refused(answer := _send(server, document, op, token, headers))
    }

    # Then every one answers 401 in the contract's shape, and nothing was written for the user
    assert not_refused == {}
    assert nothing_stored_for(container.stores, USER)


def test_the_same_requests_with_a_valid_token_get_past_the_door(
    server: Running, document: dict[str, Any], served_operations: list[Operation]
) -> None:
    # Given a valid token for the same user (so the refusals above are about the token alone)
    token = server.token_for(USER)

    # When the same requests are sent with it
    refused = [
        op.label
        for op in served_operations
        for headers in (AS_JSON, AS_STREAM)
        if _send(server, document, op, token, headers).status in (400, 401)
    ]

    # Then none is refused at the door or for its shape
    assert refused == []


def test_routes_that_need_no_token_answer_without_one(
    server: Running, document: dict[str, Any], served_operations: list[Operation]
) -> None:
    public = [op for op in served_operations if not op.needs_token]

    answers = {op.label: _send(server, document, op, None, AS_JSON).status for op in public}

    assert answers == dict.fromkeys((op.label for op in public), 200)


def test_the_document_says_which_routes_need_a_token_as_the_gateway_enforces_it(
    served_operations: list[Operation],
) -> None:
    # Given the routes API Gateway serves (template.yaml) and the document clients read
    routes = http_routes(load_template(ROOT / "template.yaml"))
    # (the manage page's static files are the page, not the API: web/page.py serves them)
    named = [route for route in routes if not route.is_greedy and route.function != "WebFunction"]

    # When each documented operation is matched to the gateway route that serves it
    disagreements = {}
    for op in served_operations:
        route = match_route(named, op.method, op.url(**dict.fromkeys(op.path_params, SOME_ID)))
        if route is None or route.authorized != op.needs_token:
            disagreements[op.label] = None if route is None else route.authorized

    # Then every operation is served, guarded exactly as documented, and nothing is undocumented
    assert disagreements == {}
    documented = {(op.method, op.path) for op in served_operations}
    assert {(route.method, route.path) for route in named} <= documented
