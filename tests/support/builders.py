"""Small builders for domain objects, so tests say only what matters to them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from chatmemory.domain.conversation import Conversation
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.ids import new_conversation_id, new_event_id, new_memory_id
from chatmemory.domain.memory import Memory


def memory(user_id: str, text: str, at: datetime, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "user_id": user_id,
        "memory_id": new_memory_id(),
        "text": text,
        "created_at": at,
        "updated_at": at,
    }
    values.update(fields)
    return Memory(**values)


def conversation(
    user_id: str, at: datetime, *, temporary: bool = False, ttl: timedelta = timedelta(hours=24)
) -> Conversation:
    return Conversation(
        user_id=user_id,
        conversation_id=new_conversation_id(),
        created_at=at,
        updated_at=at,
        temporary=temporary,
        expires_at=at + ttl if temporary else None,
    )


def event(
    user_id: str, memory_id: str, op: Op, at: datetime, actor: Actor = Actor.USER
) -> MemoryEvent:
    return MemoryEvent(
        user_id=user_id, memory_id=memory_id, event_id=new_event_id(at), op=op, actor=actor, at=at
    )
