"""Conversations and their messages: the raw record that summaries are folded from."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.ids import is_conversation_id, message_id_for
from chatmemory.domain.secrets import mask_secrets, secret_values
from chatmemory.domain.time import require_utc


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """A conversation's running state: the summary folded so far and the cursors.

    `summary_upto_seq` is the last message seq the summary covers; a fold applies only
    if it still matches what the folder read, so two folds can never both win.
    `extracted_upto_seq` is the write pipeline's cursor.
    """

    user_id: str
    conversation_id: str
    created_at: datetime
    updated_at: datetime
    persona: str = rules.DEFAULT_PERSONA
    temporary: bool = False
    expires_at: datetime | None = None
    last_seq: int = 0
    summary: str = ""
    summary_upto_seq: int = 0
    fold_count: int = 0
    extracted_upto_seq: int = 0
    last_user_message_at: datetime | None = None

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        if not is_conversation_id(self.conversation_id):
            raise InvalidField("conversation_id", "is not a conversation id")
        rules.persona(self.persona)
        for name in ("created_at", "updated_at"):
            object.__setattr__(self, name, require_utc(name, getattr(self, name)))
        for name in ("expires_at", "last_user_message_at"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, require_utc(name, value))
        if self.temporary and self.expires_at is None:
            raise InvalidField("expires_at", "a temporary conversation must expire")
        rules.text("summary", self.summary, rules.SUMMARY_MAX_CHARS, allow_empty=True)
        for name in ("last_seq", "summary_upto_seq", "fold_count", "extracted_upto_seq"):
            rules.int_range(name, getattr(self, name), 0)
        if self.summary_upto_seq > self.last_seq:
            raise InvalidField("summary_upto_seq", "cannot cover messages that do not exist")
        if self.extracted_upto_seq > self.last_seq:
            raise InvalidField("extracted_upto_seq", "cannot pass the last message")

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def awaiting_extraction(self) -> bool:
        """True while it has user messages the write pipeline has not read.

        Never for a temporary chat, which nothing reads: the sweep lists only these.
        """
        return (
            not self.temporary
            and self.last_user_message_at is not None
            and self.extracted_upto_seq < self.last_seq
        )

    def numbered(self, messages: Sequence[NewMessage], at: datetime) -> list[Message]:
        """`messages` as the next ones of this conversation: seq last_seq+1, +2, …

        They expire with the conversation. The store writes them together with
        `appended`, guarded on `last_seq`, so two appends can never take the same seq.
        """
        # A secret said in one message of the batch (the user's) is masked where another
        # repeats it without the words that mark it (the reply).
        said = secret_values(new.content for new in messages)
        return [
            Message(
                user_id=self.user_id,
                conversation_id=self.conversation_id,
                seq=self.last_seq + offset,
                role=new.role,
                # Secrets are never stored: the turn in flight answered from the words as
                # said; every stored copy keeps the sentence with the secret masked.
                content=mask_secrets(new.content, said),
                tokens=new.tokens,
                created_at=at,
                expires_at=self.expires_at,
                memories_used=new.memories_used,
            )
            for offset, new in enumerate(messages, start=1)
        ]

    def appended(self, stored: Sequence[Message], at: datetime) -> Conversation:
        """The conversation once `stored` (from `numbered`) are its newest messages."""
        if not stored:
            return self
        said = any(message.role is Role.USER for message in stored)
        return dataclasses.replace(
            self,
            last_seq=stored[-1].seq,
            updated_at=max(self.updated_at, at),
            last_user_message_at=at if said else self.last_user_message_at,
        )


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append; the conversation gives it its sequence number."""

    role: Role
    content: str
    tokens: int
    memories_used: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One stored turn. Raw messages are never deleted by folding."""

    user_id: str
    conversation_id: str
    seq: int
    role: Role
    content: str
    tokens: int
    created_at: datetime
    expires_at: datetime | None = None
    memories_used: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        if not is_conversation_id(self.conversation_id):
            raise InvalidField("conversation_id", "is not a conversation id")
        rules.int_range("seq", self.seq, 1)
        try:
            object.__setattr__(self, "role", Role(self.role))
        except ValueError as exc:
            raise InvalidField("role", "must be user or assistant") from exc
        limit = rules.MESSAGE_MAX if self.role is Role.USER else rules.ASSISTANT_MESSAGE_MAX
        rules.text("content", self.content, limit, allow_empty=self.role is Role.ASSISTANT)
        rules.int_range("tokens", self.tokens, 0)
        object.__setattr__(self, "created_at", require_utc("created_at", self.created_at))
        if self.expires_at is not None:
            object.__setattr__(self, "expires_at", require_utc("expires_at", self.expires_at))
        object.__setattr__(
            self, "memories_used", rules.id_tuple("memories_used", self.memories_used)
        )

    @property
    def message_id(self) -> str:
        return message_id_for(self.conversation_id, self.seq)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True, slots=True)
class MaskedTranscript:
    """What masking a conversation's stored words changes: each message whose stored text
    changes (by seq) and its summary's new text (None: the summary is unchanged)."""

    messages: dict[int, str]
    summary: str | None


def masked_transcript(messages: Sequence[Message], summary: str = "") -> MaskedTranscript:
    """A conversation's stored messages and summary as `numbered` stores words today: every
    secret masked, and a value said in one message of an exchange (the messages stored
    together, at one instant) masked where another repeats it bare. The summary, folded
    from all of them, is masked with every value any of them said. Idempotent.

    For messages stored before masking existed (a data migration): new ones are already so.
    A masked text longer than its limit is cut to it (the mark may be cut; never the value).
    """
    exchanges: dict[datetime, list[Message]] = {}
    for message in messages:
        exchanges.setdefault(message.created_at, []).append(message)
    changed: dict[int, str] = {}
    said_anywhere: list[str] = []
    for exchange in exchanges.values():
        said = secret_values(message.content for message in exchange)
        said_anywhere += said
        for message in exchange:
            limit = rules.MESSAGE_MAX if message.role is Role.USER else rules.ASSISTANT_MESSAGE_MAX
            masked = mask_secrets(message.content, said)[:limit]
            if masked != message.content:
                changed[message.seq] = masked
    masked_summary = mask_secrets(summary, dict.fromkeys(said_anywhere))[: rules.SUMMARY_MAX_CHARS]
    return MaskedTranscript(changed, None if masked_summary == summary else masked_summary)
