"""Notices: the "noted: … · undo" toast for memories written in the background."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.time import require_utc


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """One notice per conversation per pipeline run, so a chatty evening is one toast."""

    user_id: str
    notice_id: str
    text: str
    memory_ids: tuple[str, ...]
    created_at: datetime
    persona: str = rules.DEFAULT_PERSONA
    conversation_id: str | None = None
    undone_at: datetime | None = None

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.opaque_id("notice_id", self.notice_id)
        rules.text("text", self.text, rules.NOTICE_TEXT_MAX)
        ids = rules.id_tuple("memory_ids", self.memory_ids)
        if not ids:
            raise InvalidField("memory_ids", "a notice announces at least one memory")
        object.__setattr__(self, "memory_ids", ids)
        object.__setattr__(self, "created_at", require_utc("created_at", self.created_at))
        rules.persona(self.persona)
        if self.conversation_id is not None:
            rules.opaque_id("conversation_id", self.conversation_id)
        if self.undone_at is not None:
            object.__setattr__(self, "undone_at", require_utc("undone_at", self.undone_at))


NOTICE_PREFIX = "noted: "


def announce(texts: Iterable[str], *, persona: str | None = None) -> str:
    """The toast's words for these memories, cut to fit (the memories themselves are whole);
    a persona's toast says who noted it ("Warren noted: …", seed 000 §5); the deployment's
    one assistant just says "noted: …"."""
    prefix = NOTICE_PREFIX
    if persona and persona != rules.DEFAULT_PERSONA:
        prefix = f"{persona.capitalize()} {NOTICE_PREFIX}"
    text = prefix + " · ".join(texts)
    if len(text) <= rules.NOTICE_TEXT_MAX:
        return text
    return text[: rules.NOTICE_TEXT_MAX - 1].rstrip() + "…"
