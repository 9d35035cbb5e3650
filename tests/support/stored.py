"""Everything the store keeps for one user, read straight from the store (not through the API)."""

from __future__ import annotations

from typing import Any

from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores


def stored_for(stores: Stores, user_id: str) -> dict[str, Any]:
    """A snapshot to compare before and after a request: equal means nothing was written."""
    memories = list(stores.memories.iter_memories(user_id, MemoryQuery(status=None)))
    conversations = stores.conversations.list_conversations(user_id)
    return {
        "memories": memories,
        "events": {m.memory_id: stores.events.list_events(user_id, m.memory_id) for m in memories},
        "conversations": conversations,
        "messages": {
            c.conversation_id: stores.conversations.list_messages(user_id, c.conversation_id)
            for c in conversations
        },
        "settings": stores.user_state.get_settings(user_id),
        "profile": stores.user_state.get_profile(user_id),
        "notices": stores.notices.list_notices(user_id, include_undone=True),
        "tombstones": stores.tombstones.list_tombstones(user_id),
    }


def nothing_stored_for(stores: Stores, user_id: str) -> bool:
    return stored_for(stores, user_id) == {
        "memories": [],
        "events": {},
        "conversations": [],
        "messages": {},
        "settings": MemorySettings(user_id=user_id),
        "profile": None,
        "notices": [],
        "tombstones": [],
    }
