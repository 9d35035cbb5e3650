"""A turn a client reports after it happened (`POST /v1/observe`), recorded by its id.

An agent that runs its own chat (an MCP host, an app with its own model) tells chatmemory
what was said once the turn is over, and may send it again when it never heard back. The
turn's id is the client's: the store writes the record of it in the same atomic write as
its messages, so a retry finds the record and stores nothing twice. The record holds ids,
sequence numbers and a fingerprint of the request, never the text, and expires with its
conversation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.ids import is_conversation_id, message_id_for
from chatmemory.domain.time import require_utc

TURN_ID_MAX = 128
_SEPARATOR = "\x1f"  # unit separator: the parts can never run into each other


def turn_id(value: str) -> str:
    """A client's turn id: 1..128 letters, digits and _ . : - (a uuid, "conv-7:turn-3")."""
    return rules.opaque_id("turn_id", value, TURN_ID_MAX)


def fingerprint(
    *,
    user_message: str,
    assistant_message: str,
    conversation_id: str | None,
    persona: str | None,
    temporary: bool,
) -> str:
    """What identifies the request behind a turn id, as a digest: a retry has the same one,
    the id reused for a different turn does not (and is refused, not silently dropped)."""
    parts = [
        conversation_id or "",
        persona or "",
        "temporary" if temporary else "kept",
        user_message,
        assistant_message,
    ]
    return hashlib.sha256(_SEPARATOR.join(parts).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ObservedTurn:
    """The record of one observed turn: where its messages went, under which seqs."""

    user_id: str
    turn_id: str
    conversation_id: str
    first_seq: int
    count: int
    fingerprint: str
    observed_at: datetime
    expires_at: datetime | None = None

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        turn_id(self.turn_id)
        if not is_conversation_id(self.conversation_id):
            raise InvalidField("conversation_id", "is not a conversation id")
        rules.int_range("first_seq", self.first_seq, 1)
        rules.int_range("count", self.count, 1, 2)
        if len(self.fingerprint) != 64:
            raise InvalidField("fingerprint", "must be a sha256 hex digest")
        object.__setattr__(self, "observed_at", require_utc("observed_at", self.observed_at))
        if self.expires_at is not None:
            object.__setattr__(self, "expires_at", require_utc("expires_at", self.expires_at))

    @property
    def message_ids(self) -> list[str]:
        """The ids of the messages the turn stored, in order (the user's first)."""
        last = self.first_seq + self.count
        return [message_id_for(self.conversation_id, seq) for seq in range(self.first_seq, last)]

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now
