"""The memory row: one standalone sentence about someone, scoped, dated and traceable."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from chatmemory.domain import rules
from chatmemory.domain.errors import ConcurrentChange, InvalidField
from chatmemory.domain.time import bounded, world_time


class Kind(StrEnum):
    """What sort of thing is remembered (seed 000 kinds, plus seed 004's thread)."""

    FACT = "fact"
    PREFERENCE = "preference"
    EVENT = "event"
    PROMISE = "promise"
    OPEN_LOOP = "open_loop"
    RELATIONSHIP = "relationship"
    THREAD = "thread"


class Status(StrEnum):
    """Active rows are beliefs; superseded and closed rows are history, never retrieved."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    CLOSED = "closed"


class StatedBy(StrEnum):
    """Who said it: a stated fact beats an inferred one."""

    USER = "user"
    INFERRED = "inferred"


def subject_for_user(user_id: str) -> str:
    """The subject of a memory about this user (`u:<id>`)."""
    return f"u:{user_id}"


def _check_subject(value: str) -> str:
    if value in ("self", "world"):
        return value
    if value.startswith("u:") and len(value) > 2:
        rules.user_id(value[2:], field="subject")
        return value
    raise InvalidField("subject", "must be 'u:<user id>', 'self' or 'world'")


def _days(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidField(name, "must be a number of days")
    if not 0 < value <= 36_500:
        raise InvalidField(name, "must be in (0, 36500]")
    return float(value)


# When the service learned, changed, used, reinforced or set aside a memory (its own
# times), and when what it says was true in the world: each within its range
# (domain/time.py), so every store reads back the instant it wrote.
_SYSTEM_TIMES = ("created_at", "updated_at")
_OPTIONAL_SYSTEM_TIMES = ("last_used_at", "reinforced_at", "archived_at")
_WORLD_TIMES = ("valid_from", "valid_to", "valid_until")


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    """A belief about someone, with its provenance and its place in time.

    A contradiction never overwrites a row: the old one is closed (`valid_to`,
    `closed_by`) and the new one links back through `supersedes`.
    """

    user_id: str
    memory_id: str
    text: str
    created_at: datetime
    updated_at: datetime
    persona: str = rules.DEFAULT_PERSONA
    subject: str = ""  # "" means "about the user" and is filled in as u:<user_id>
    witnessed: tuple[str, ...] = ()
    counterpart: str | None = None  # a persona's own promise or open loop: whom it is with
    room_id: str | None = None
    kind: Kind = Kind.FACT
    category: str = rules.DEFAULT_CATEGORY
    key: str | None = None
    importance: int = 5
    stated_by: StatedBy = StatedBy.USER
    status: Status = Status.ACTIVE
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    closed_by: str | None = None
    supersedes: str | None = None
    valid_until: datetime | None = None
    evidence: tuple[str, ...] = ()
    source_message_id: str | None = None
    last_used_at: datetime | None = None
    recall_count: int = 0
    # Fading (seed 003, domain/fading.py): stability in days once evidence changed it
    # (None: its category's), the last supporting evidence (None: when it was written),
    # and when the per-user cap set it aside (None: in use unless it faded).
    stability_days: float | None = None
    reinforced_at: datetime | None = None
    archived_at: datetime | None = None
    embedding: bytes | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.opaque_id("memory_id", self.memory_id)
        rules.text("text", self.text, rules.MEMORY_TEXT_MAX)
        rules.persona(self.persona)
        subject = self.subject or f"u:{self.user_id}"
        object.__setattr__(self, "subject", _check_subject(subject))
        object.__setattr__(
            self, "witnessed", tuple(rules.user_id(w, "witnessed") for w in self.witnessed)
        )
        if self.counterpart is not None:
            self._check_counterpart(self.counterpart)
        if self.room_id is not None:
            rules.opaque_id("room_id", self.room_id)
        object.__setattr__(self, "kind", _enum("kind", Kind, self.kind))
        rules.category(self.category)
        if self.key is not None:
            rules.key(self.key)
        rules.int_range("importance", self.importance, 1, 10)
        object.__setattr__(self, "stated_by", _enum("stated_by", StatedBy, self.stated_by))
        object.__setattr__(self, "status", _enum("status", Status, self.status))
        self._check_times()
        if self.closed_by is not None:
            rules.opaque_id("closed_by", self.closed_by)
        if self.supersedes is not None:
            rules.opaque_id("supersedes", self.supersedes)
        object.__setattr__(self, "evidence", rules.id_tuple("evidence", self.evidence))
        if self.source_message_id is not None:
            rules.opaque_id("source_message_id", self.source_message_id, max_len=160)
        rules.int_range("recall_count", self.recall_count, 0, rules.MAX_COUNT)
        if self.stability_days is not None:
            object.__setattr__(self, "stability_days", _days("stability_days", self.stability_days))
        if self.embedding is not None:
            if not isinstance(self.embedding, bytes | bytearray):
                raise InvalidField("embedding", "must be bytes (a packed vector)")
            if len(self.embedding) > rules.EMBEDDING_MAX_BYTES:
                raise InvalidField(
                    "embedding", f"must be at most {rules.EMBEDDING_MAX_BYTES} bytes"
                )
            object.__setattr__(self, "embedding", bytes(self.embedding))
        object.__setattr__(
            self, "meta", rules.json_mapping("meta", self.meta, rules.META_MAX_BYTES)
        )
        self._check_time_and_status()

    def _check_times(self) -> None:
        for name in _SYSTEM_TIMES:
            object.__setattr__(self, name, bounded(name, getattr(self, name)))
        for name in _OPTIONAL_SYSTEM_TIMES:
            if getattr(self, name) is not None:
                object.__setattr__(self, name, bounded(name, getattr(self, name)))
        for name in _WORLD_TIMES:
            if getattr(self, name) is not None:
                object.__setattr__(self, name, world_time(name, getattr(self, name)))

    def _check_counterpart(self, counterpart: str) -> None:
        # Only a persona's own item (a promise, an open loop) is *with* someone; a row about
        # a user is already scoped by its subject.
        if self.subject != "self":
            raise InvalidField("counterpart", "only a persona's own ('self') memory has one")
        if not counterpart.startswith("u:") or len(counterpart) < 3:
            raise InvalidField("counterpart", "must be 'u:<user id>'")
        rules.user_id(counterpart[2:], field="counterpart")

    def _check_time_and_status(self) -> None:
        if self.updated_at < self.created_at:
            raise InvalidField("updated_at", "must not be before created_at")
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise InvalidField("valid_to", "must not be before valid_from")
        if self.status is Status.ACTIVE and (self.valid_to or self.closed_by):
            raise InvalidField("status", "an active memory has no valid_to or closed_by")
        if self.status is not Status.ACTIVE and self.valid_to is None:
            raise InvalidField("valid_to", f"a {self.status} memory records when it stopped")
        if self.status is Status.SUPERSEDED and not self.closed_by:
            raise InvalidField("closed_by", "a superseded memory links to what replaced it")
        if self.supersedes is not None and self.supersedes == self.memory_id:
            raise InvalidField("supersedes", "a memory cannot supersede itself")

    # ---- questions the read path asks -------------------------------------------------

    def is_expired(self, now: datetime) -> bool:
        """Past its shelf life (`valid_until`): gone from every read, like DynamoDB's TTL."""
        return self.valid_until is not None and self.valid_until <= now

    def is_about_user(self) -> bool:
        return self.subject == f"u:{self.user_id}"

    @property
    def held_by_persona(self) -> bool:
        """No user's row: a world fact, or the persona's own note with no one. It lives in
        the persona's partition; anything about (or with) a user lives in that user's."""
        return self.subject == "world" or (self.subject == "self" and self.counterpart is None)

    # ---- transitions: each returns a new row; nothing is overwritten in place -------------

    def superseded_by(self, replacement: Memory) -> Memory:
        """This row as history, closed by the belief that replaced it.

        World time ends where the replacement's begins (its `valid_from`, else when it
        was written) — Graphiti's invalidation rule; system time moves forward only.
        """
        ended = replacement.valid_from or replacement.created_at
        if self.valid_from and ended < self.valid_from:
            ended = self.valid_from
        return dataclasses.replace(
            self,
            status=Status.SUPERSEDED,
            valid_to=ended,
            closed_by=replacement.memory_id,
            updated_at=max(replacement.created_at, self.updated_at),
        )

    def closed(self, at: datetime, closed_by: str | None = None) -> Memory:
        """This row as history: it stopped being true and nothing replaced it."""
        return dataclasses.replace(
            self,
            status=Status.CLOSED,
            valid_to=max(at, self.valid_from) if self.valid_from else at,
            closed_by=closed_by,
            updated_at=max(at, self.updated_at),
        )

    def reinstated(self, at: datetime) -> Memory:
        """This row believed again: the change that made it history was undone (an undo
        restores exactly the state before that change)."""
        return dataclasses.replace(
            self,
            status=Status.ACTIVE,
            valid_to=None,
            closed_by=None,
            updated_at=max(at, self.updated_at),
        )

    def reinstated_from(self, newer: Memory, at: datetime) -> Memory:
        """This row believed again in place of `newer`, the correction that replaced it.

        ConcurrentChange unless `newer` is an active correction of exactly this row and this
        row is still the history it left: an undo restores that state or nothing."""
        if newer.status is not Status.ACTIVE or newer.supersedes != self.memory_id:
            raise ConcurrentChange("the memory is not an active correction of this one")
        if self.status is not Status.SUPERSEDED or self.closed_by != newer.memory_id:
            raise ConcurrentChange("the earlier version was changed since")
        return self.reinstated(at)

    def recalled(self, at: datetime) -> Memory:
        """Reinforced: loading a memory into a prompt keeps it fresh (seed 000 §3.5)."""
        return dataclasses.replace(
            self,
            last_used_at=at,
            recall_count=self.recall_count + 1,
            updated_at=max(self.updated_at, at),
        )

    def with_changes(self, **changes: Any) -> Memory:
        return dataclasses.replace(self, **changes)


_E = TypeVar("_E", bound=StrEnum)


def _enum(field_name: str, enum: type[_E], value: object) -> _E:
    try:
        return enum(str(value))
    except ValueError as exc:
        allowed = ", ".join(member.value for member in enum)
        raise InvalidField(field_name, f"must be one of: {allowed}") from exc


def check_persona_row(memory: Memory, persona: str | None = None) -> None:
    """InvalidField unless the row is the persona's alone: a world fact, or its own note
    with no counterpart, kept under the persona's slug. Anything about (or with) a user
    belongs in that user's partition, where their delete reaches it."""
    if memory.subject not in ("world", "self"):
        raise InvalidField("subject", "a row about a user is kept in that user's partition")
    if memory.counterpart is not None:
        raise InvalidField("counterpart", "a row with a counterpart is kept in theirs")
    if memory.user_id != memory.persona:
        raise InvalidField("user_id", "a persona's own row is kept under the persona's slug")
    if persona is not None and memory.persona != persona:
        raise InvalidField("persona", "does not match the persona named")


def believed_at(memory: Memory, at: datetime) -> bool:
    """Whether the store held this row as a belief at `at` (system time: when it was
    learned, and when a correction or a close stopped it; a history row's `updated_at`
    is that moment, since nothing changes a row once it is history)."""
    if memory.created_at > at:
        return False
    return memory.status is Status.ACTIVE or memory.updated_at > at


def as_it_stood(memory: Memory, at: datetime) -> Memory:
    """The row as it read at `at`, when it was believed: a later correction or close is
    not yet there. Call only for a row `believed_at(memory, at)`."""
    if memory.status is Status.ACTIVE:
        return memory
    return dataclasses.replace(
        memory, status=Status.ACTIVE, valid_to=None, closed_by=None, updated_at=at
    )


def versions_to_forget(memories: Sequence[Memory], memory_id: str) -> list[str]:
    """The id and every older version it superseded, oldest first.

    A delete must reach the history text too: older versions say much the same thing.
    Newer versions are left alone: deleting "lived in Pune" must not erase "lives in
    Bengaluru".
    """
    by_id = {m.memory_id: m for m in memories}
    chain = [memory_id]
    seen = {memory_id}
    current = by_id.get(memory_id)
    while current and current.supersedes and current.supersedes not in seen:
        seen.add(current.supersedes)
        chain.insert(0, current.supersedes)
        current = by_id.get(current.supersedes)
    return chain
