"""Notices: "noted: …" lines shown to the user, each with an undo."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from chatmemory.domain.notice import Notice


class NoticeStore(ABC):
    """A user's notices, newest first."""

    @abstractmethod
    def add_notice(self, notice: Notice) -> None:
        """Store a notice; re-adding the same notice id changes nothing."""

    @abstractmethod
    def get_notice(self, user_id: str, notice_id: str) -> Notice | None: ...

    @abstractmethod
    def list_notices(
        self, user_id: str, *, include_undone: bool = False, limit: int = 50
    ) -> list[Notice]:
        """Newest first."""

    @abstractmethod
    def mark_notice_undone(self, user_id: str, notice_id: str, at: datetime) -> bool:
        """True the first time; False if it was already undone or does not exist."""

    @abstractmethod
    def delete_notices(self, user_id: str, notice_ids: Sequence[str]) -> None: ...

    @abstractmethod
    def notices_about(self, user_id: str, memory_ids: Sequence[str]) -> list[Notice]:
        """Every notice (undone ones too) that names any of these memories: the purge
        rewrites or drops them, since their text quotes the memory."""
