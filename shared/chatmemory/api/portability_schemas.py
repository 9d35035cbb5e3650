"""The export document (`chatmemory.export/1`, docs/api.md "Export and import"): one
model for what `GET /v1/memories/export` answers and what `POST /v1/memories/import` takes,
so any slice of an export is a batch an import accepts.

A row here is what the store keeps of a memory, not what a read computes from it
(`due_in`, `retention`, a thread's `state`): those follow from these fields on the other
side. Timestamps carry microseconds, so the order of versions survives the trip.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
)
from pydantic_core import PydanticCustomError

from chatmemory.api.schemas import (
    MUTED_MAX,
    CategoryName,
    MemoryText,
    PersonaName,
)
from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status, subject_for_user
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.portability import CONCLUDED_BY, EXPORT_SCHEMA, IMPORT_BATCH_MAX
from chatmemory.domain.threads import Cadence, ThreadMeta, ThreadStatus, meta_of
from chatmemory.domain.time import bounded, to_storage, world_time
from chatmemory.domain.uses import MAX_USES, USE_CHARS, clean_uses
from chatmemory.domain.uses_origin import AWAITING, FROM_CATEGORY, USES_FROM
from chatmemory.services.portability import ExportPage, ImportReport, SettingsImport


def _iso_text(value: object) -> object:
    """An ISO-8601 string (never epoch seconds, which pydantic would also take)."""
    if not isinstance(value, str | datetime):
        raise PydanticCustomError("datetime_type", "Input should be an ISO-8601 timestamp")
    return value


def _own_time(value: datetime) -> datetime:
    return bounded("timestamp", value)


def _world_time(value: datetime) -> datetime:
    return world_time("timestamp", value)


# The service's own times of a row (learned, changed, used, reinforced, set aside), and
# world time (when it was true): each in its range (domain/time.py), refused at the door.
Instant = Annotated[
    AwareDatetime,
    BeforeValidator(_iso_text),
    AfterValidator(_own_time),
    PlainSerializer(to_storage, return_type=str),
    Field(
        description="ISO-8601 UTC with microseconds: `2026-11-30T09:15:00.000000Z`; from "
        "1970-01-01 to before 2200-01-01."
    ),
]
WorldInstant = Annotated[
    AwareDatetime,
    BeforeValidator(_iso_text),
    AfterValidator(_world_time),
    PlainSerializer(to_storage, return_type=str),
    Field(
        description="ISO-8601 UTC with microseconds: `2026-11-30T09:15:00.000000Z`; from "
        "1900-01-01 to before 2200-01-01."
    ),
]
RowId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
MessageId = Annotated[str, Field(min_length=1, max_length=160, pattern=r"^[A-Za-z0-9_.:-]+$")]
Day = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")]
Use = Annotated[str, Field(min_length=1, max_length=USE_CHARS)]
SlotKey = Annotated[
    str, Field(min_length=1, max_length=rules.KEY_MAX, pattern=r"^[a-z0-9][a-z0-9_.:-]*$")
]

_THREAD_KEYS = ("cadence", "status", "asked", "deflects", "sleeps_until", "event_on")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PortableThread(_Strict):
    """A thread's manners as stored (its `state` is read from them and today)."""

    cadence: Cadence
    status: ThreadStatus
    asked: Day | None = None
    deflects: int = Field(default=0, ge=0)
    sleeps_until: Day | None = None
    event_on: Day | None = None
    acknowledged: StrictBool = False
    concluded_by: RowId | None = Field(
        default=None, description="A resolved thread: the fact it rests under, until closed."
    )

    @classmethod
    def of(cls, memory: Memory) -> PortableThread:
        manners = meta_of(memory).to_meta()  # unreadable manners export as dormant
        concluded = memory.meta.get(CONCLUDED_BY)
        return cls(
            **{key: manners[key] for key in _THREAD_KEYS},
            acknowledged=manners["acknowledged"],
            concluded_by=concluded if isinstance(concluded, str) else None,
        )

    def to_meta(self) -> dict[str, Any]:
        meta = ThreadMeta.from_meta(self.model_dump(exclude={"concluded_by"})).to_meta()
        return meta if self.concluded_by is None else {**meta, CONCLUDED_BY: self.concluded_by}


class PortableMemory(_Strict):
    """One version of a memory, with everything the store keeps of it but its vectors
    (made again on import from its words and uses)."""

    memory_id: RowId = Field(description="The id it had; see the id rule for where it lands.")
    text: MemoryText
    category: CategoryName
    kind: Kind
    persona: PersonaName
    subject: Literal["user", "self"] = Field(
        default="user",
        description="user: about you · self: the persona's own promise or open loop with you.",
    )
    stated_by: StatedBy
    importance: int = Field(default=5, ge=1, le=10)
    status: Status = Field(description="active (archived ones too) · superseded · closed")
    key: SlotKey | None = Field(default=None, description='The slot it fills ("home_city").')
    created_at: Instant = Field(description="When the store learned it.")
    updated_at: Instant
    valid_from: WorldInstant | None = None
    valid_until: WorldInstant | None = None
    valid_to: WorldInstant | None = None
    supersedes: RowId | None = None
    closed_by: RowId | None = None
    source_message_id: MessageId | None = None
    evidence: Annotated[list[MessageId], Field(max_length=200)] = Field(default_factory=list)
    last_used_at: Instant | None = None
    recall_count: int = Field(default=0, ge=0, le=rules.MAX_COUNT)
    seen: int | None = Field(
        default=None, ge=1, le=rules.MAX_COUNT, description="Times the belief was said."
    )
    stability_days: float | None = Field(
        default=None, gt=0, le=36_500, description="S once evidence changed it; null: its kind's."
    )
    reinforced_at: Instant | None = Field(default=None, description="Its last evidence.")
    archived_at: Instant | None = Field(default=None, description="When the cap set it aside.")
    uses: Annotated[list[Use], Field(max_length=MAX_USES)] | None = Field(
        default=None, description="What it is useful for (null: its category's)."
    )
    uses_from: Literal["category", "carried"] | None = Field(
        default=None, description="null: written for it · category · carried (a correction's)."
    )
    thread: PortableThread | None = None

    @classmethod
    def of(cls, memory: Memory) -> PortableMemory:
        meta = memory.meta
        origin = meta.get(USES_FROM)
        seen = meta.get("seen")
        # Uses borrowed from the category are its category's again on the other side.
        given = meta.get("uses")
        uses = list(clean_uses(given)) if isinstance(given, list) else []
        own_uses = bool(uses) and origin != FROM_CATEGORY
        return cls(
            memory_id=memory.memory_id,
            text=memory.text,
            category=memory.category,
            kind=memory.kind,
            persona=memory.persona,
            subject="self" if memory.subject == "self" else "user",
            stated_by=memory.stated_by,
            importance=memory.importance,
            status=memory.status,
            key=memory.key,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            valid_from=memory.valid_from,
            valid_until=memory.valid_until,
            valid_to=memory.valid_to,
            supersedes=memory.supersedes,
            closed_by=memory.closed_by,
            source_message_id=memory.source_message_id,
            evidence=list(memory.evidence),
            last_used_at=memory.last_used_at,
            recall_count=memory.recall_count,
            seen=seen if type(seen) is int and seen >= 1 else None,
            stability_days=memory.stability_days,
            reinforced_at=memory.reinforced_at,
            archived_at=memory.archived_at,
            uses=uses if own_uses else None,
            uses_from=origin if own_uses and origin in AWAITING else None,
            thread=PortableThread.of(memory) if memory.kind is Kind.THREAD else None,
        )

    def to_memory(self, user_id: str) -> Memory:
        """The row as this user's (InvalidField when the fields break a rule together:
        say, a superseded row without what replaced it)."""
        if (self.thread is not None) != (self.kind is Kind.THREAD):
            raise InvalidField("thread", "is given for a thread, and only for one")
        meta: dict[str, Any] = {}
        if self.uses:
            meta["uses"] = list(self.uses)
            if self.uses_from is not None:
                meta[USES_FROM] = self.uses_from
        if self.seen is not None:
            meta["seen"] = self.seen
        if self.thread is not None:
            try:
                meta.update(self.thread.to_meta())
            except InvalidField as broken:
                raise InvalidField(
                    broken.field.replace("meta.", "thread.", 1), broken.reason
                ) from None
        owner = subject_for_user(user_id)
        return Memory(
            user_id=user_id,
            memory_id=self.memory_id,
            text=self.text,
            created_at=self.created_at,
            updated_at=self.updated_at,
            persona=self.persona,
            subject="self" if self.subject == "self" else owner,
            counterpart=owner if self.subject == "self" else None,
            kind=self.kind,
            category=self.category,
            key=self.key,
            importance=self.importance,
            stated_by=self.stated_by,
            status=self.status,
            valid_from=self.valid_from,
            valid_to=self.valid_to,
            closed_by=self.closed_by,
            supersedes=self.supersedes,
            valid_until=self.valid_until,
            evidence=tuple(self.evidence),
            source_message_id=self.source_message_id,
            last_used_at=self.last_used_at,
            recall_count=self.recall_count,
            stability_days=self.stability_days,
            reinforced_at=self.reinforced_at,
            archived_at=self.archived_at,
            meta=meta,
        )


class PortableSettings(_Strict):
    enabled: StrictBool
    note: Annotated[str, Field(max_length=rules.NOTE_MAX)]
    muted_personas: Annotated[list[PersonaName], Field(max_length=MUTED_MAX)]
    timezone: Annotated[
        str, Field(min_length=1, max_length=64), AfterValidator(MemorySettings.checked_timezone)
    ]

    @classmethod
    def of(cls, settings: MemorySettings) -> PortableSettings:
        return cls(
            enabled=settings.enabled,
            note=settings.note,
            muted_personas=sorted(settings.muted_personas),
            timezone=settings.timezone,
        )

    def to_import(self) -> SettingsImport:
        return SettingsImport(
            enabled=self.enabled,
            note=self.note,
            muted_personas=frozenset(self.muted_personas),
            timezone=self.timezone,
        )


class PortableUser(_Strict):
    settings: PortableSettings


class ExportDocument(_Strict):
    """A user's export, or one page of it; a slice of one is what an import takes."""

    format: Literal["chatmemory.export/1"] = Field(
        alias="schema", description="The document's name and version."
    )
    exported_at: Instant | None = Field(default=None, description="When it was read.")
    user: PortableUser | None = Field(
        default=None, description="Your settings; an import applies them after the memories."
    )
    memories: list[PortableMemory] = Field(description="Every version, newest first.")
    next: str | None = Field(
        default=None,
        description="The export's next page (`GET /v1/memories/export?next=…`); null on "
        "the last. Ignored by an import.",
    )

    @classmethod
    def of(cls, page: ExportPage) -> ExportDocument:
        return cls.model_validate(
            {
                "schema": EXPORT_SCHEMA,
                "exported_at": page.exported_at,
                "user": PortableUser(settings=PortableSettings.of(page.settings)),
                "memories": [PortableMemory.of(memory) for memory in page.memories],
                "next": page.next_cursor,
            }
        )


class ImportBatch(ExportDocument):
    """What an import takes: a document (a page of an export, or a slice of one) of at most
    `IMPORT_BATCH_MAX` memories."""

    memories: Annotated[list[PortableMemory], Field(max_length=IMPORT_BATCH_MAX)]

    def rows(self, user_id: str) -> list[Memory]:
        """Every row as this user's; InvalidField naming the row's place when one breaks a
        rule, before anything is written."""
        rows: list[Memory] = []
        seen: set[str] = set()
        for index, row in enumerate(self.memories):
            if row.memory_id in seen:
                raise InvalidField(f"memories.{index}.memory_id", "appears twice in the batch")
            seen.add(row.memory_id)
            try:
                rows.append(row.to_memory(user_id))
            except InvalidField as broken:
                raise InvalidField(f"memories.{index}.{broken.field}", broken.reason) from None
        return rows


class SkippedOut(BaseModel):
    index: int | None = Field(description="The row's place in the batch; null: the settings.")
    memory_id: str | None
    reason: str = Field(description="A code, a colon, then why: `secret_refused: …`.")


class ImportReportOut(BaseModel):
    imported: int = Field(description="Rows written now.")
    unchanged: int = Field(description="Rows already here (an import done before).")
    skipped: list[SkippedOut]
    settings: Literal["imported", "unchanged", "skipped"] | None = Field(
        description="What became of the settings sent; null when none were."
    )

    @classmethod
    def of(cls, report: ImportReport) -> ImportReportOut:
        return cls(
            imported=report.imported,
            unchanged=report.unchanged,
            skipped=[
                SkippedOut(index=s.index, memory_id=s.memory_id, reason=s.reason)
                for s in report.skipped
            ],
            settings=report.settings,
        )
