"""Notices ("noted: … · undo") for memories written in the background."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain.errors import NoticeNotFound
from chatmemory.domain.events import Actor
from chatmemory.domain.notice import announce
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import MemoryService


@dataclass(frozen=True, slots=True)
class NoticeView:
    """A notice as the user sees it now: only memories that still exist are named."""

    notice_id: str
    text: str
    memory_ids: tuple[str, ...]
    created_at: datetime
    persona: str
    conversation_id: str | None


class NoticeService:
    def __init__(self, stores: Stores, clock: Clock, memories: MemoryService) -> None:
        self._stores = stores
        self._clock = clock
        self._memories = memories

    def pending(self, user_id: str, *, limit: int = 50) -> list[NoticeView]:
        """Pending notices, newest first. Text is rendered from the memories still visible,
        so a deleted memory's words never come back through an old notice."""
        views = []
        for notice in self._stores.notices.list_notices(user_id, limit=limit):
            visible = [
                memory
                for memory_id in notice.memory_ids
                if (memory := self._stores.memories.get_memory(user_id, memory_id)) is not None
            ]
            if not visible:
                continue
            views.append(
                NoticeView(
                    notice_id=notice.notice_id,
                    text=announce((memory.text for memory in visible), persona=notice.persona),
                    memory_ids=tuple(memory.memory_id for memory in visible),
                    created_at=notice.created_at,
                    persona=notice.persona,
                    conversation_id=notice.conversation_id,
                )
            )
        return views

    def undo(self, user_id: str, notice_id: str) -> list[str]:
        """Undo the writes the notice announced: what they added is deleted, what they
        corrected is believed again as it was (see MemoryService.undo_writes).

        Returns the ids undone now; undoing twice changes nothing more.
        """
        notice = self._stores.notices.get_notice(user_id, notice_id)
        if notice is None:
            raise NoticeNotFound(notice_id)
        if notice.undone_at is not None:
            return []
        deleted = self._memories.undo_writes(user_id, notice.memory_ids, actor=Actor.USER)
        self._stores.notices.mark_notice_undone(user_id, notice_id, self._clock.now())
        return deleted
