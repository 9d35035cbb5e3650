"""Who is asking: the `sub` claim of a verified bearer token. Nothing else.

On the HTTP API the JWT authorizer verifies tokens; where no authorizer stands in front
(the dev server, the streaming endpoint) the server verifies them itself and refuses a bad
one with `InvalidToken`, whichever verifier found it bad.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatmemory.domain import rules
from chatmemory.domain.errors import DomainError, InvalidField

NOT_AUTHENTICATED = "a valid bearer token is required"


class Unauthorized(DomainError):
    code = "unauthorized"


class InvalidToken(Exception):
    """The bearer token is missing, malformed, tampered with, not signed by its issuer,
    expired, not for us or without a subject. The message names which, for logs only."""


def user_id_from_event(raw_event: Mapping[str, Any]) -> str:
    """The user id from an API Gateway HTTP API event's JWT claims.

    API Gateway's JWT authorizer (or the local server, which plays its part) verified
    the token and put its claims in the request context. The body, the query and the
    model never get a say.
    """
    context = raw_event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    return user_id_from_claims((authorizer.get("jwt") or {}).get("claims") or {})


def user_id_from_claims(claims: Mapping[str, Any]) -> str:
    """The user id in a verified token's claims: its `sub`, if it is a usable user id."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise Unauthorized(NOT_AUTHENTICATED)
    try:
        return rules.user_id(subject, "sub")
    except InvalidField as exc:
        raise Unauthorized("the token's subject is not a usable user id") from exc
