"""Conversations removed for good at their owner's request, and the secrets in stored
messages masked: the writes that take words out of transcripts.

`ConversationStore` keeps the chat as it happens; this port removes it. A delete is two
halves, as a memory's is: `hide_conversations` makes the very next read treat the
conversation as missing, and `purge_conversation` removes what is left (a store that
does both in one write leaves the purge nothing to do). The service that composes them
also drops the conversation's extraction runs (`RunStore`) before the purge's last step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MaskingProgress:
    """One batch of the stored-message masking: conversations read, messages and summaries
    rewritten, and whether the store has now been masked through (recorded: never again)."""

    conversations: int
    rewritten: int
    done: bool


class ConversationErasure(ABC):
    """Hide a user's conversations at once, purge them for good, and mask stored messages."""

    @abstractmethod
    def hide_conversations(
        self, user_id: str, conversation_ids: Sequence[str] | None = None
    ) -> list[str]:
        """Hide these conversations of the user from every read, from the very next one on
        (None: every conversation the user has, expired ones too): the conversation, its
        messages and summary, its observed-turn records. Returns the ids hidden now; an id
        not visible to this user (another's, unknown, expired, already hidden) is skipped.
        Atomic per conversation."""

    @abstractmethod
    def purge_conversation(self, user_id: str, conversation_id: str) -> None:
        """Remove what is left of a hidden conversation for good, its row last, in batches.
        Idempotent: an interrupted purge is finished by running it again; a conversation
        still visible is left alone."""

    @abstractmethod
    def hidden_conversations(self, *, limit: int = 100) -> list[tuple[str, str]]:
        """(user id, conversation id) of conversations hidden and not yet purged, across
        users: what the daily sweep and `chatmemory flush` finish. Never on a request path."""

    @abstractmethod
    def mask_stored_messages(self, *, batch: int = 50) -> MaskingProgress:
        """Mask the secrets in the next `batch` conversations' stored messages and summary
        (`domain.conversation.masked_transcript`), resuming where the last batch stopped;
        each batch's progress is recorded, and once every conversation is done, so is
        that: later calls read one record and change nothing."""
