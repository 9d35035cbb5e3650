"""Opaque page cursors, bound to the user they were issued for."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

from chatmemory.domain.errors import InvalidField


def _owner_tag(user_id: str) -> str:
    return hashlib.sha256(user_id.encode()).hexdigest()[:16]


def encode_cursor(user_id: str, position: dict[str, Any]) -> str:
    """A cursor clients cannot parse usefully and cannot replay as another user."""
    body = json.dumps({"o": _owner_tag(user_id), "p": position}, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def decode_cursor(user_id: str, cursor: str) -> dict[str, Any]:
    """The position inside a cursor this service issued to this user; InvalidField otherwise."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        body = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidField("next", "is not a cursor this service issued") from exc
    if not isinstance(body, dict) or body.get("o") != _owner_tag(user_id):
        raise InvalidField("next", "is not a cursor this service issued")
    position = body.get("p")
    if not isinstance(position, dict):
        raise InvalidField("next", "is not a cursor this service issued")
    return position
