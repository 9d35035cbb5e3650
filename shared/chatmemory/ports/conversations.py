"""Conversations and their messages: the chat itself, with its summary and cursors.

A conversation, and its messages, are hidden once `expires_at` passed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from chatmemory.domain.conversation import Conversation, Message, NewMessage, Role
from chatmemory.domain.observed_turn import ObservedTurn


class ConversationStore(ABC):
    """A user's conversations, their messages, the fold's summary and the pipeline's cursor."""

    @abstractmethod
    def create_conversation(self, conversation: Conversation) -> None:
        """Store a new conversation; ConcurrentChange if the id exists."""

    @abstractmethod
    def get_conversation(self, user_id: str, conversation_id: str) -> Conversation | None:
        """The conversation, or None (absent, another user's, expired)."""

    @abstractmethod
    def list_conversations(self, user_id: str) -> list[Conversation]:
        """The user's unexpired conversations, most recently updated first."""

    @abstractmethod
    def last_seen(self, user_id: str, persona: str) -> datetime | None:
        """When the user's most recently updated unexpired conversation with this persona
        that is not temporary and has messages was updated; None when there is none (a
        first meeting). What a new chat's return greeting asks on its first turn, so it
        reads that one conversation, not every one the user has."""

    def append_message(
        self,
        user_id: str,
        conversation_id: str,
        *,
        role: Role,
        content: str,
        tokens: int,
        at: datetime,
        memories_used: Sequence[str] = (),
    ) -> Message:
        """Store the next message with the next sequence number (see append_messages)."""
        [message] = self.append_messages(
            user_id, conversation_id, [NewMessage(role, content, tokens, tuple(memories_used))], at
        )
        return message

    @abstractmethod
    def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        create: Conversation | None = None,
    ) -> list[Message]:
        """Store these messages with the next sequence numbers (1, 2, …), atomically.

        The messages and the conversation's `last_seq`/`updated_at` (and, for a user
        message, `last_user_message_at`) move together or not at all; with `create`, the
        conversation itself is written in the same atomic write (ConcurrentChange if it
        exists). Messages of a temporary conversation expire with it.
        ConversationNotFound if the conversation is not visible (and not being created).
        """

    @abstractmethod
    def append_observed(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        turn_id: str,
        fingerprint: str,
        create: Conversation | None = None,
    ) -> tuple[ObservedTurn, bool]:
        """Store these messages as `append_messages` does, at most once per (user, turn_id).

        The turn's record (ids, seqs, the fingerprint; it expires with the conversation) is
        written in the same atomic write as the messages: (the record, True). If the user
        already has a live record of `turn_id`, nothing is written, not even `create`:
        (that record, False) — the caller compares its fingerprint.
        """

    @abstractmethod
    def list_messages(
        self,
        user_id: str,
        conversation_id: str,
        *,
        after_seq: int = 0,
        upto_seq: int | None = None,
        last: int | None = None,
    ) -> list[Message]:
        """Messages with after_seq < seq <= upto_seq, ascending by seq.

        `last=n` keeps only the n most recent of that range. Empty if the conversation
        is not visible.
        """

    @abstractmethod
    def update_summary(
        self,
        user_id: str,
        conversation_id: str,
        *,
        summary: str,
        upto_seq: int,
        expected_upto_seq: int,
        fold_count: int,
        at: datetime,
        expected_fold_count: int | None = None,
    ) -> bool:
        """Apply a fold only if `summary_upto_seq` still equals `expected_upto_seq` (and,
        if given, `fold_count` still equals `expected_fold_count`).

        True if applied; False if another fold won (or the conversation is gone). A purge
        rewrites the summary without moving `summary_upto_seq` and bumps `fold_count`, so
        a fold that read the summary before the rewrite cannot put it back.
        """

    @abstractmethod
    def advance_extraction(
        self, user_id: str, conversation_id: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        """Move the write pipeline's cursor, only from where the caller read it."""

    @abstractmethod
    def pending_extractions(
        self, *, said_before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(user id, conversation id) of conversations `awaiting_extraction` whose last
        user message is older than `said_before`; oldest first.

        The one read across users — for the daily sweep and `chatmemory flush`, never on
        the request path. Temporary and expired conversations are never listed.
        """
