"""Request and response models of the HTTP contract (docs/api.md), validated by pydantic."""

from __future__ import annotations

from datetime import date, datetime
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

from chatmemory.domain import fading, rules
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.threads import last_beat_of, meta_of, ripeness
from chatmemory.domain.time import to_api, world_time
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


def _world_time(value: datetime) -> datetime:
    return world_time("timestamp", value)


Timestamp = Annotated[
    AwareDatetime,
    BeforeValidator(_iso_text),
    AfterValidator(_world_time),
    Field(description="ISO-8601 UTC, from 1900-01-01 to before 2200-01-01."),
]


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
    timezone: (
        Annotated[
            str,
            Field(min_length=1, max_length=64),
            AfterValidator(MemorySettings.checked_timezone),
        ]
        | None
    ) = Field(
        default=None,
        description='Your time zone, an IANA name (default "UTC"): the local hours your '
        "rhythm is read in.",
        examples=["Europe/Paris"],
    )


class StatusFilter(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    SUPERSEDED = "superseded"
    CLOSED = "closed"
    ALL = "all"


KindFilter = StrEnum("KindFilter", {kind.name: kind.value for kind in Kind})  # type: ignore[misc]
KindFilter.__doc__ = "Which kind of memory `GET /v1/memories` lists (all kinds when absent)."


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


class ContextRequestBody(ChatRequest):
    as_of: Annotated[str, Field(min_length=10, max_length=40)] | None = Field(
        default=None,
        description="Build the context from what was believed then (a date means the end "
        "of that day, UTC): no profile and no threads, only the memories held at that time.",
        examples=["2026-09-15"],
    )


# ---- responses ---------------------------------------------------------------------------


class ThreadOut(BaseModel):
    """A thread's manners (seed 004): what the persona knows of how to follow it."""

    cadence: str = Field(description="fast (days) · slow (weeks) · event (a dated event)")
    status: str = Field(
        description="live · dormant (never raised until you bring it up) · resolved"
    )
    last_heard: str = Field(description="The day you last said something about it (YYYY-MM-DD).")
    asked: str | None = Field(description="The last day a persona raised it.")
    deflects: int = Field(description="How many times you changed the subject when it came up.")
    sleeps_until: str | None = Field(description="After a change of subject: not raised before.")
    event_on: str | None = Field(description="The day an event thread waits for.")
    acknowledged: bool = Field(description="A resolved thread has had its one acknowledgement.")
    state: str | None = Field(
        default=None,
        description="What today allows: ripe · recent · not_yet · resting · sleeping · leave · "
        "resolved · settled · stale · dormant · asked_here (an active thread, in listings "
        "and single reads; null on its history).",
    )

    @classmethod
    def of(cls, memory: Memory, today: date | None = None) -> ThreadOut:
        meta, beat = meta_of(memory), last_beat_of(memory)
        return cls(
            cadence=meta.cadence.value,
            status=meta.status.value,
            last_heard=beat.isoformat(),
            asked=_opt_day(meta.asked),
            deflects=meta.deflects,
            sleeps_until=_opt_day(meta.sleeps_until),
            event_on=_opt_day(meta.event_on),
            acknowledged=meta.acknowledged,
            state=(
                ripeness(meta, beat, today).value
                if today is not None and memory.status is Status.ACTIVE
                else None
            ),
        )


class DueOut(BaseModel):
    """How long a belief is still good for (seed 003's due_in)."""

    seconds: int = Field(description="Until it falls due; negative once overdue.")
    text: str = Field(description='"2 days left", "due today", "overdue by a week".')
    on: str = Field(description="The instant it falls due (ISO-8601 UTC).")

    @classmethod
    def of(cls, memory: Memory, now: datetime) -> DueOut:
        left = fading.due_in(memory, now)
        return cls(
            seconds=int(left.total_seconds()),
            text=fading.describe_due(left),
            on=to_api(fading.due_at(memory)),
        )


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
    thread: ThreadOut | None = Field(
        default=None, description="A thread's manners; null for every other kind."
    )
    due_in: DueOut = Field(
        description="How long it is still good for: until `valid_until`, else until its "
        "retention falls to one half."
    )
    retention: float = Field(
        description="exp(-t / S) since the last supporting evidence, 0..1 (1 on a thread)."
    )
    stability_days: float = Field(
        description="S: how many days it takes to fade to 37%; grows with each evidence."
    )
    archived: str | None = Field(
        default=None,
        description="Why an archived memory is out of use (status `archived`): faded · "
        "unused · capped; null otherwise.",
    )

    @classmethod
    def of(cls, memory: Memory, now: datetime) -> MemoryOut:
        """Read at `now`: shelf life and retention move with time; a thread also says
        what the day allows of it."""
        why = fading.archived(memory, now)
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
            status="archived" if why is not None else memory.status.value,
            valid_to=_opt(memory.valid_to),
            supersedes=memory.supersedes,
            closed_by=memory.closed_by,
            importance=memory.importance,
            evidence=list(memory.evidence),
            last_used_at=_opt(memory.last_used_at),
            thread=ThreadOut.of(memory, now.date()) if memory.kind is Kind.THREAD else None,
            due_in=DueOut.of(memory, now),
            retention=round(fading.retention(memory, now), 4),
            stability_days=round(fading.stability(memory), 2),
            archived=None if why is None else why.value,
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
    def of(cls, group: PersonaMemories, now: datetime) -> PersonaGroupOut:
        return cls(
            persona=group.persona,
            memories=[
                PersonaMemoryOut(**MemoryOut.of(row.memory, now).model_dump(), arc=row.arc)
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
    timezone: str

    @classmethod
    def of(cls, settings: MemorySettings) -> SettingsOut:
        return cls(
            enabled=settings.enabled,
            note=settings.note,
            muted_personas=sorted(settings.muted_personas),
            timezone=settings.timezone,
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
    status: Literal["ok", "starting", "degraded"]
    reason: Literal["storage_unavailable"] | None = Field(
        default=None, description="Why it is degraded; only then present."
    )


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


def _opt(value: datetime | None) -> str | None:
    return None if value is None else to_api(value)


def _opt_day(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


class TurnOut(BaseModel):
    role: str
    content: str


class RememberedOut(BaseModel):
    memory_id: str
    text: str
    date: str
    due: str = Field(
        default="",
        description='How long it is still good for, as the model reads it: "2 days left", '
        '"overdue by a week".',
    )


class ThreadLineOut(BaseModel):
    memory_id: str
    text: str = Field(description="The thread's current state, as stored.")
    line: str = Field(
        description="What the model reads: the state, how long since it was last heard, and "
        "what the moment allows."
    )


class BlocksOut(BaseModel):
    system: str
    profile: str
    note: str
    summary: str
    recent: list[TurnOut]
    memories: list[RememberedOut]
    threads: list[ThreadLineOut] = Field(
        description="The parts of your story the persona follows (seed 004), in the system "
        "prompt under the profile and note."
    )
    kickoff: str = Field(
        description="On a chat reopened after three or more quiet days: the return "
        'greeting\'s cue, before the memories in the new message ("" otherwise).'
    )


class UsedMemoryOut(BaseModel):
    memory_id: str
    block: Literal["memories", "threads", "profile", "persona_block"] = Field(
        description="The prompt block its words came through: `memories` (recalled for "
        "this message), `threads` (a story followed, and the return greeting), `profile` "
        "(the always-on digest), `persona_block` (a persona's block in a room)."
    )


_MEMORIES_USED = (
    "Every memory whose words are in this turn's prompt, each once: the recalled ones "
    "first, best first, then the threads, then the profile."
)
_MEMORIES_USED_IN = "The same memories, each with the block that carried it."


class ContextOut(BaseModel):
    conversation_id: str | None
    blocks: BlocksOut
    memories_used: list[str] = Field(description=_MEMORIES_USED)
    memories_used_in: list[UsedMemoryOut] = Field(description=_MEMORIES_USED_IN)
    prompt_tokens: int = Field(
        description="Estimated Claude input tokens of the rendered prompt (≈4 chars per "
        "token for Latin script, 1 per CJK character; see domain/tokens.py)."
    )


class ChatOut(BaseModel):
    conversation_id: str
    message_id: str
    reply: str
    memories_used: list[str] = Field(description=_MEMORIES_USED)
    memories_used_in: list[UsedMemoryOut] = Field(description=_MEMORIES_USED_IN)
    saved: list[str] = Field(description="ids written on this turn (save_memory, corrections)")
    model: str = Field(description='the model that answered ("offline": the stand-in)')
