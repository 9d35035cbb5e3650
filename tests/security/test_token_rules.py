"""One rule for bearer tokens at every door: the scheme in any case, and no token that was
signed to live longer than a year (what `chatmemory token` mints at most) — through the
local server, the streaming endpoint's verifier, and the handlers behind API Gateway's
authorizer, which has no such limit of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.api.identity import MAX_TOKEN_LIFETIME, InvalidToken
from chatmemory.aws.jwks import JwksVerifier
from chatmemory.config import Container, Settings, use_container
from tests.aws.test_jwks import AUDIENCES, ISSUER, Issuer
from tests.support.functions import invoke, load_handler, sample_event
from tests.support.local_server import Running

pytestmark = pytest.mark.e2e

USER = "alice"
CENTURY = timedelta(days=36525)


def _listing(server: Running, authorization: str) -> int:
    return server.call("GET", "/v1/memories", headers={"Authorization": authorization}).status


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_read_in_any_case(server: Running, scheme: str) -> None:
    token = server.token_for(USER)

    assert _listing(server, f"{scheme} {token}") == 200


@pytest.mark.parametrize("scheme", ["Basic", "Token", "Bearer:"])
def test_another_scheme_is_401(server: Running, scheme: str) -> None:
    assert _listing(server, f"{scheme} {server.token_for(USER)}") == 401


def test_a_token_signed_to_live_a_century_is_refused_and_one_for_a_year_is_not(
    server: Running,
) -> None:
    # Given two tokens signed with the server's own secret: one for the longest the CLI
    # mints, one for a hundred years
    now = datetime.now(UTC)
    year = server.tokens.issue(USER, now, ttl=MAX_TOKEN_LIFETIME)
    century = server.tokens.issue(USER, now, ttl=CENTURY)

    # Then the year's is served, and the century's refused as any bad token is
    assert _listing(server, f"Bearer {year}") == 200
    refused = server.call("GET", "/v1/memories", token=century)
    assert refused.status == 401
    assert refused.body["error"]["code"] == "unauthorized"
    assert refused.headers["WWW-Authenticate"] == "Bearer"

    # And the streaming chat refuses it too, before any stream
    streamed = server.call(
        "POST",
        "/v1/chat",
        token=century,
        body={"message": "hello"},
        headers={"Accept": "text/event-stream"},
    )
    assert streamed.status == 401


def test_the_streaming_endpoints_verifier_refuses_a_century_token() -> None:
    issuer = Issuer()
    verifier = JwksVerifier(ISSUER, AUDIENCES, fetch=issuer.fetch)
    now = datetime.now(UTC)

    assert verifier.verify(issuer.token(exp=now + timedelta(days=30)))["sub"]
    with pytest.raises(InvalidToken, match="TokenLivesTooLong"):
        verifier.verify(issuer.token(exp=now + CENTURY))
    # Without `iat`, the lifetime is counted from now
    with pytest.raises(InvalidToken, match="TokenLivesTooLong"):
        verifier.verify(issuer.token(iat=None, exp=now + CENTURY))


@pytest.fixture
def handlers_container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.mark.usefixtures("handlers_container")
def test_behind_api_gateways_authorizer_a_century_token_is_refused_by_the_handler() -> None:
    # Given the claims API Gateway's JWT authorizer passes on (as strings) for a token it
    # verified: signed today, to expire in a hundred years
    handler = load_handler("memories")
    event: dict[str, Any] = sample_event("memories", "list_memories")
    now = datetime.now(UTC)
    claims = event["requestContext"]["authorizer"]["jwt"]["claims"]
    claims["iat"] = str(int(now.timestamp()))
    claims["exp"] = str(int((now + CENTURY).timestamp()))

    # When the handler is invoked with them
    refused = invoke(handler, event)

    # Then it refuses the caller, as it would any token it cannot accept
    assert refused.status == 401, json.dumps(refused.body)
    assert refused.body["error"]["code"] == "unauthorized"

    # And a token for a day is served
    claims["exp"] = str(int((now + timedelta(days=1)).timestamp()))
    assert invoke(handler, event).status == 200
