"""Bearer tokens the local server must refuse, built the way an attacker would build them."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from chatmemory.local.tokens import AUDIENCE, ISSUER


def local_claims(sub: object = "alice", **overrides: Any) -> dict[str, Any]:
    """Claims the local server would accept, with `sub` (None: left out) and overrides."""
    claims: dict[str, Any] = {
        "sub": sub,
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": int((datetime.now(UTC) + timedelta(hours=1)).timestamp()),
    }
    claims.update(overrides)
    return {name: value for name, value in claims.items() if value is not None}


def signed(claims: dict[str, Any], key: str, algorithm: str = "HS256") -> str:
    return jwt.encode(claims, key, algorithm=algorithm)


def unsigned(claims: dict[str, Any]) -> str:
    """`alg: none` and an empty signature: a token anyone can write."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."
