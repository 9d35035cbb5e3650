"""Who is asking: a user (the `sub` of their token) or the app (a token with the rooms
scope). Nothing else.

On the HTTP API the JWT authorizer verifies tokens; where no authorizer stands in front
(the dev server, the streaming endpoint) the server verifies them itself and refuses a bad
one with `InvalidToken`, whichever verifier found it bad. Which caller a verified token is,
is decided in one place, `caller_from_claims`:

- a token whose `scope` holds `APP_SCOPE` is the app credential: the app's backend acting
  for the users of this deployment (one deployment serves one app) in room calls. It has
  no user, so every user route refuses it (`Forbidden`);
- any other token is a user's, and its `sub` is the user id.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from chatmemory.domain import rules
from chatmemory.domain.errors import DomainError, InvalidField

NOT_AUTHENTICATED = "a valid bearer token is required"
#: The scope that makes a token the app credential. On AWS it is a Cognito resource
#: server's scope (`<identifier>/<scope>`) granted to the app's client-credentials client.
APP_SCOPE: Final = "chatmemory/rooms"
APP_HAS_NO_USER = "this route acts for a user: an app credential has none, send a user's token"
#: The longest a token may live, from when it was issued (or from now, if it does not say):
#: what `chatmemory token --hours` mints at most. A token signed to outlive it is refused,
#: whoever signed it, so a leaked one cannot be good for a century.
MAX_TOKEN_LIFETIME: Final = timedelta(days=366)
_LIFETIME_LEEWAY_S = 60  # clock skew between the signer and the server
TOO_LONG_LIVED = "the token lives longer than this service accepts (at most a year)"


class Unauthorized(DomainError):
    code = "unauthorized"


class Forbidden(DomainError):
    """A verified caller asked for something its credential does not allow."""

    code = "forbidden"


class InvalidToken(Exception):
    """The bearer token is missing, malformed, tampered with, not signed by its issuer,
    expired, not for us or without a subject. The message names which, for logs only."""


@dataclass(frozen=True, slots=True)
class UserCaller:
    """A user acting for themselves: their own memories, chats and private rooms."""

    user_id: str


@dataclass(frozen=True, slots=True)
class AppCaller:
    """The app's backend, acting for the users of this deployment in room calls."""

    app: str  # the credential's client id, for logs and metrics: never a user id


Caller = UserCaller | AppCaller


def _claims_of(raw_event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The verified claims API Gateway's JWT authorizer (or the local server, which plays
    its part) put in the request context. The body, the query and the model get no say."""
    context = raw_event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    claims: Mapping[str, Any] = (authorizer.get("jwt") or {}).get("claims") or {}
    return claims


def caller_from_event(raw_event: Mapping[str, Any]) -> Caller:
    """The caller of an API Gateway HTTP API event, from its verified JWT claims."""
    return caller_from_claims(_claims_of(raw_event))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for any other header.
    The scheme is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are the same."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def lifetime_problem(claims: Mapping[str, Any], now: float | None = None) -> str | None:
    """Why the token's lifetime is refused, or None: an `exp` more than MAX_TOKEN_LIFETIME
    after its `iat`, or after `now` (epoch seconds, the wall clock by default).

    Claims arrive as numbers from a verifier and as strings through API Gateway's
    authorizer; a token without `exp` is the verifier's to refuse."""
    expires = _seconds(claims.get("exp"))
    if expires is None:
        return None
    longest = MAX_TOKEN_LIFETIME.total_seconds() + _LIFETIME_LEEWAY_S
    issued = _seconds(claims.get("iat"))
    moment = time.time() if now is None else now
    if expires - moment > longest or (issued is not None and expires - issued > longest):
        return "TokenLivesTooLong"
    return None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def caller_from_claims(claims: Mapping[str, Any]) -> Caller:
    """The app if the token carries `APP_SCOPE`, else the user its `sub` names.
    Unauthorized if it names neither usably, or if it was signed to live longer than
    MAX_TOKEN_LIFETIME (the HTTP API's authorizer has no such limit, so it is kept here)."""
    if lifetime_problem(claims) is not None:
        raise Unauthorized(TOO_LONG_LIVED)
    if APP_SCOPE in scopes_of(claims):
        return AppCaller(_app_name(claims))
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise Unauthorized(NOT_AUTHENTICATED)
    try:
        return UserCaller(rules.user_id(subject, "sub"))
    except InvalidField as exc:
        raise Unauthorized("the token's subject is not a usable user id") from exc


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The token's scopes: `scope` as a space-separated string (how Cognito writes it, and
    how the HTTP API passes every claim on), or a list of strings."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    if isinstance(scope, list):
        return frozenset(item for item in scope if isinstance(item, str))
    return frozenset()


def _app_name(claims: Mapping[str, Any]) -> str:
    # Cognito's client-credentials tokens name their client in `client_id` (and `sub`).
    for claim in ("client_id", "sub"):
        value = claims.get(claim)
        if isinstance(value, str) and value:
            try:
                return rules.user_id(value, claim)
            except InvalidField:
                break
    raise Unauthorized("the app credential does not name its client")


def user_id_from_event(raw_event: Mapping[str, Any]) -> str:
    """The user id of a user route's caller. Forbidden for the app credential, which acts
    in rooms only and has no user."""
    return user_id_from_claims(_claims_of(raw_event))


def user_id_from_claims(claims: Mapping[str, Any]) -> str:
    """The user id in a verified token's claims: its `sub`, if it is a user's token."""
    caller = caller_from_claims(claims)
    if isinstance(caller, AppCaller):
        raise Forbidden(APP_HAS_NO_USER)
    return caller.user_id
