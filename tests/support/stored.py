"""Everything the store keeps for one user, read straight from the store (not through the API)."""

from __future__ import annotations

from typing import Any

from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.ports import MemoryQuery, Store


def stored_for(store: Store, user_id: str) -> dict[str, Any]:
    """A snapshot to compare before and after a request: equal means nothing was written."""
    memories = list(store.iter_memories(user_id, MemoryQuery(status=None)))
    conversations = store.list_conversations(user_id)
    return {
        "memories": memories,
        "events": {m.memory_id: store.list_events(user_id, m.memory_id) for m in memories},
        "conversations": conversations,
        "messages": {
            c.conversation_id: store.list_messages(user_id, c.conversation_id)
            for c in conversations
        },
        "settings": store.get_settings(user_id),
        "profile": store.get_profile(user_id),
        "notices": store.list_notices(user_id, include_undone=True),
        "tombstones": store.list_tombstones(user_id),
    }


def nothing_stored_for(store: Store, user_id: str) -> bool:
    return stored_for(store, user_id) == {
        "memories": [],
        "events": {},
        "conversations": [],
        "messages": {},
        "settings": MemorySettings(user_id=user_id),
        "profile": None,
        "notices": [],
        "tombstones": [],
    }
