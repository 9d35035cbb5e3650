"""Deleting a user's conversations, one or all: hidden from the very next request, then
purged — its messages, summary, observed-turn records and extraction runs.

Memories learned from a conversation are not deleted with it: they are the user's, listed
and deleted on their own (a memory keeps its `source_message_id`, an id that no longer
reads; recall's evidence leaves a message that is gone out).
"""

from __future__ import annotations

import logging

from chatmemory.domain.errors import ConversationNotFound
from chatmemory.domain.ids import is_conversation_id
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)


class ConversationDeletes:
    """`DELETE /v1/conversations/{id}` and `DELETE /v1/conversations`, and the sweep that
    finishes a purge that stopped."""

    def __init__(self, stores: Stores) -> None:
        self._stores = stores

    def delete(self, user_id: str, conversation_id: str) -> None:
        """Delete one of the user's conversations; ConversationNotFound when the user has
        no such conversation to see (another user's id is one of those)."""
        if not is_conversation_id(conversation_id):
            raise ConversationNotFound(conversation_id)
        if self._stores.conversations.get_conversation(user_id, conversation_id) is None:
            raise ConversationNotFound(conversation_id)
        # The runs first: a failure here leaves the conversation as it was, to delete again.
        self._stores.runs.delete_extraction_runs(user_id, conversation_id)
        if not self._stores.conversation_erasure.hide_conversations(user_id, [conversation_id]):
            raise ConversationNotFound(conversation_id)  # deleted meanwhile
        self._purge(user_id, conversation_id)

    def delete_all(self, user_id: str) -> int:
        """Delete every conversation of the user (expired ones too); how many there were."""
        for conversation in self._stores.conversations.list_conversations(user_id):
            self._stores.runs.delete_extraction_runs(user_id, conversation.conversation_id)
        hidden = self._stores.conversation_erasure.hide_conversations(user_id)
        for conversation_id in hidden:
            self._purge(user_id, conversation_id)
        return len(hidden)

    def finish(self, *, batch: int = 100) -> int:
        """Purge every conversation deleted whose purge did not finish (a timeout, a
        throttle): the daily sweep's and `chatmemory flush`'s. How many were finished."""
        erasure = self._stores.conversation_erasure
        finished = 0
        seen: set[tuple[str, str]] = set()
        while True:
            # The listing may lag the purges just done (an index): ask past those seen.
            waiting = [
                pair
                for pair in erasure.hidden_conversations(limit=batch + len(seen))
                if pair not in seen
            ]
            if not waiting:
                return finished
            for pair in waiting:
                seen.add(pair)
                finished += self._purge(*pair)

    def _purge(self, user_id: str, conversation_id: str) -> bool:
        """What a hidden conversation left, removed; a failure leaves it hidden for the
        sweep (the very next read already treats it as missing)."""
        try:
            # Again: a run a pipeline step in flight wrote since the first time.
            self._stores.runs.delete_extraction_runs(user_id, conversation_id)
            self._stores.conversation_erasure.purge_conversation(user_id, conversation_id)
        except Exception as exc:
            log.warning("conversation purge not finished", extra={"error_type": type(exc).__name__})
            return False
        return True
