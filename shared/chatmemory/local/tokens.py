"""Local bearer tokens: HS256, signed with a secret kept in the state folder.

In AWS the HTTP API's JWT authorizer verifies tokens from the real identity provider;
locally the dev server plays that part with these. A user's token names the user in
`sub`; the app credential names the app in `sub` and `client_id` (as a Cognito
client-credentials token does) and carries the rooms scope, signed the same way.
"""

from __future__ import annotations

import os
import secrets
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jwt

from chatmemory.api.identity import APP_SCOPE, InvalidToken, lifetime_problem
from chatmemory.domain import rules

ISSUER = "chatmemory-local"
AUDIENCE = "chatmemory"
SECRET_FILE = "local-signing-secret"  # noqa: S105 - a file name, not a secret
DEFAULT_TTL = timedelta(days=7)


#: the state folder's key for memory ids (domain/ids.py IdentityKey)
IDENTITY_KEY_FILE = "identity-key"


def load_or_create_secret(
    state_dir: Path, configured: str | None = None, *, file_name: str = SECRET_FILE
) -> str:
    """The configured secret, else the state folder's `file_name`, created (0600) on
    first use."""
    if configured:
        return configured
    path = state_dir / file_name
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    state_dir.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(48)
    # Written whole under a name of its own, then linked into place: another process (the
    # server and a flush starting together) either wins the link or reads a whole file.
    draft = path.with_name(f".{file_name}.{secrets.token_hex(8)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(secret)
    try:
        os.link(draft, path)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    finally:
        draft.unlink()
    return secret


class LocalTokens:
    def __init__(self, secret: str) -> None:
        if len(secret) < 32:
            raise ValueError("the local signing secret must be at least 32 characters")
        self._secret = secret

    def issue(self, user_id: str, now: datetime, ttl: timedelta = DEFAULT_TTL) -> str:
        """A user's token: `sub` is the user id."""
        rules.user_id(user_id)
        return self._signed({"sub": user_id}, now, ttl)

    def issue_app(self, app: str, now: datetime, ttl: timedelta = DEFAULT_TTL) -> str:
        """The app credential: acts for this deployment's users in room calls."""
        rules.user_id(app, "app")
        return self._signed({"sub": app, "client_id": app, "scope": APP_SCOPE}, now, ttl)

    def _signed(self, claims: dict[str, Any], now: datetime, ttl: timedelta) -> str:
        stamped = {**claims, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + ttl}
        return jwt.encode(stamped, self._secret, algorithm="HS256")

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of a valid token; InvalidToken otherwise (alg must be HS256, and it
        may live at most `MAX_TOKEN_LIFETIME`, as the CLI mints them)."""
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._secret,
                algorithms=["HS256"],
                audience=AUDIENCE,
                issuer=ISSUER,
                options={"require": ["sub", "exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(type(exc).__name__) from exc
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidToken("MissingSubject")
        problem = lifetime_problem(claims)
        if problem is not None:
            raise InvalidToken(problem)
        return claims
