"""Request and response models of the HTTP contract (docs/api.md), validated by pydantic."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
)
from pydantic_core import PydanticCustomError

from chatmemory.domain import rules
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Memory
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.time import to_api
from chatmemory.services.notices import NoticeView
from chatmemory.services.persona_view import PersonaMemories

PersonaName = Annotated[
    str, Field(min_length=1, max_length=rules.PERSONA_MAX, pattern=r"^[a-z0-9][a-z0-9_-]*$")
]
CategoryName = Annotated[
    str, Field(min_length=1, max_length=rules.CATEGORY_MAX, pattern=r"^[a-z][a-z0-9_]*$")
]
MemoryText = Annotated[str, Field(min_length=1, max_length=rules.MEMORY_TEXT_MAX)]


def _iso_text(value: object) -> object:
    """Timestamps arrive as ISO-8601 strings (docs/api.md); pydantic would also take a number as
    epoch seconds, which the contract never promised and a client would not expect."""
    if not isinstance(value, str | datetime):
        raise PydanticCustomError("datetime_type", "Input should be an ISO-8601 timestamp")
    return value


Timestamp = Annotated[AwareDatetime, BeforeValidator(_iso_text)]


def _storable_message(value: str) -> str:
    """A message the conversation can store, checked before the model is called: a blank
    one would otherwise be refused only after the reply, mid-stream."""
    return rules.text("message", value, rules.MESSAGE_MAX)


ChatMessage = Annotated[
    str, Field(min_length=1, max_length=rules.MESSAGE_MAX), AfterValidator(_storable_message)
]
RECOMMENDED_CATEGORIES = (
    "diet, location, work, education, family, pets, health, hobbies, language, travel, "
    "preferences, relationships, goals, general"
)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


# ---- requests ----------------------------------------------------------------------------


class MemoryCreate(_Body):
    text: MemoryText = Field(description="One standalone sentence, 1..500 characters.")
    category: CategoryName | None = Field(
        default=None, description=f"snake_case, ≤ 40 chars. Recommended: {RECOMMENDED_CATEGORIES}."
    )
    persona: PersonaName | None = Field(default=None, description='Default "assistant".')
    valid_until: Timestamp | None = Field(
        default=None, description="When this stops being true (shelf life), ISO-8601 UTC."
    )


class MemoryCorrection(_Body):
    text: MemoryText
    category: CategoryName | None = None
    valid_until: Timestamp | None = None


#: how many personas one user may mute (more than any app seats)
MUTED_MAX = 64


class SettingsUpdate(_Body):
    enabled: StrictBool | None = Field(
        default=None, description="false stops memory reads and writes at once."
    )
    note: Annotated[str, Field(max_length=rules.NOTE_MAX)] | None = Field(
        default=None, description="What every persona should know about you, ≤ 400 chars."
    )
    muted_personas: Annotated[list[PersonaName], Field(max_length=MUTED_MAX)] | None = Field(
        default=None,
        description="The personas that forget you (the whole list; [] unmutes them all): "
        "they read and write nothing about you from the next request on; what they "
        "remember stays until you delete it.",
        examples=[["nolan"]],
    )


class StatusFilter(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    CLOSED = "closed"
    ALL = "all"


class Grouping(StrEnum):
    """How `GET /v1/memories` may group what it lists."""

    PERSONA = "persona"


class ChatRequest(_Body):
    conversation_id: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="Omitted: start a new conversation."
    )
    message: ChatMessage
    temporary: StrictBool = Field(
        default=False, description="Reads no memory and writes none; messages expire."
    )
    persona: PersonaName | None = Field(default=None, description='Default "assistant".')


# ---- responses ---------------------------------------------------------------------------


class MemoryOut(BaseModel):
    memory_id: str
    text: str
    category: str
    kind: str
    persona: str
    stated_by: str
    source_message_id: str | None
    created_at: str
    updated_at: str
    valid_from: str | None
    valid_until: str | None
    status: str
    valid_to: str | None = None
    supersedes: str | None = None
    closed_by: str | None = None
    importance: int
    evidence: list[str]
    last_used_at: str | None = None

    @classmethod
    def of(cls, memory: Memory) -> MemoryOut:
        return cls(
            memory_id=memory.memory_id,
            text=memory.text,
            category=memory.category,
            kind=memory.kind.value,
            persona=memory.persona,
            stated_by=memory.stated_by.value,
            source_message_id=memory.source_message_id,
            created_at=to_api(memory.created_at),
            updated_at=to_api(memory.updated_at),
            valid_from=_opt(memory.valid_from),
            valid_until=_opt(memory.valid_until),
            status=memory.status.value,
            valid_to=_opt(memory.valid_to),
            supersedes=memory.supersedes,
            closed_by=memory.closed_by,
            importance=memory.importance,
            evidence=list(memory.evidence),
            last_used_at=_opt(memory.last_used_at),
        )


class MemoryPage(BaseModel):
    memories: list[MemoryOut]
    next: str | None


class PersonaMemoryOut(MemoryOut):
    arc: str | None = Field(
        default=None,
        description='When a closed or superseded memory was believed: "2026-07 → 2026-11".',
    )


class PersonaGroupOut(BaseModel):
    persona: str
    memories: list[PersonaMemoryOut] = Field(description="Newest first.")
    chars_current: int = Field(
        description="How full the block is this persona would build for you alone in a "
        "private chat (what it holds of you now)."
    )
    chars_limit: int
    meter: str = Field(description='"chars_current / chars_limit".')

    @classmethod
    def of(cls, group: PersonaMemories) -> PersonaGroupOut:
        return cls(
            persona=group.persona,
            memories=[
                PersonaMemoryOut(**MemoryOut.of(row.memory).model_dump(), arc=row.arc)
                for row in group.rows
            ],
            chars_current=group.chars_current,
            chars_limit=group.chars_limit,
            meter=group.meter,
        )


class PersonaGroupsOut(BaseModel):
    personas: list[PersonaGroupOut] = Field(description="By persona name.")


class EventOut(BaseModel):
    op: str
    actor: str
    at: str
    memory_id: str
    related_id: str | None = None

    @classmethod
    def of(cls, event: MemoryEvent) -> EventOut:
        return cls(
            op=event.op.value,
            actor=event.actor.value,
            at=to_api(event.at),
            memory_id=event.memory_id,
            related_id=event.related_id,
        )


class HistoryOut(BaseModel):
    events: list[EventOut]


class SettingsOut(BaseModel):
    enabled: bool
    note: str
    muted_personas: list[str]

    @classmethod
    def of(cls, settings: MemorySettings) -> SettingsOut:
        return cls(
            enabled=settings.enabled,
            note=settings.note,
            muted_personas=sorted(settings.muted_personas),
        )


class NoticeOut(BaseModel):
    notice_id: str
    text: str
    memory_ids: list[str]
    created_at: str
    persona: str
    conversation_id: str | None

    @classmethod
    def of(cls, notice: NoticeView) -> NoticeOut:
        return cls(
            notice_id=notice.notice_id,
            text=notice.text,
            memory_ids=list(notice.memory_ids),
            created_at=to_api(notice.created_at),
            persona=notice.persona,
            conversation_id=notice.conversation_id,
        )


class NoticesOut(BaseModel):
    notices: list[NoticeOut]


class UndoOut(BaseModel):
    notice_id: str
    deleted: list[str]


class HealthOut(BaseModel):
    status: Literal["ok", "starting"]


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


def _opt(value: datetime | None) -> str | None:
    return None if value is None else to_api(value)


class TurnOut(BaseModel):
    role: str
    content: str


class RememberedOut(BaseModel):
    memory_id: str
    text: str
    date: str


class BlocksOut(BaseModel):
    system: str
    profile: str
    note: str
    summary: str
    recent: list[TurnOut]
    memories: list[RememberedOut]


class ContextOut(BaseModel):
    conversation_id: str | None
    blocks: BlocksOut
    memories_used: list[str]
    prompt_tokens: int = Field(
        description="Estimated Claude input tokens of the rendered prompt (≈4 chars per "
        "token for Latin script, 1 per CJK character; see domain/tokens.py)."
    )


class ChatOut(BaseModel):
    conversation_id: str
    message_id: str
    reply: str
    memories_used: list[str] = Field(description="ids retrieved into this turn's prompt")
    saved: list[str] = Field(description="ids written on this turn (save_memory, corrections)")
    model: str = Field(description='the model that answered ("offline": the stand-in)')
