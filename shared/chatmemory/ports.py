"""The interfaces the services need. Adapters implement them; `config.py` picks which.

Every store method takes the user id explicitly and touches only that user's rows:
there is no way to ask a store about "everyone" on the request path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.extraction import Candidate, ExtractionInput, ExtractionRun
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.notice import Notice
from chatmemory.domain.profile import Profile
from chatmemory.domain.prompt import RenderedPrompt, Turn
from chatmemory.domain.purge import PurgeRequest
from chatmemory.domain.routing import Neighbour, RouteDecision
from chatmemory.domain.rules import DEFAULT_PERSONA
from chatmemory.domain.tombstone import Tombstone

T = TypeVar("T")

MAX_PAGE = 100


Vectors = npt.NDArray[np.float32]


class Clock(ABC):
    """Where "now" comes from, so tests drive time instead of sleeping."""

    @abstractmethod
    def now(self) -> datetime:
        """The current instant, aware UTC."""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; `next_cursor` is opaque and None on the last page."""

    items: list[T]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """Which of a user's memories to list. `status=None` means every status."""

    status: Status | None = Status.ACTIVE
    persona: str | None = None
    created_after: datetime | None = None


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append; the store gives it its sequence number."""

    role: Role
    content: str
    tokens: int
    memories_used: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryDigest:
    """What per-turn recall needs to know about an active memory, without its vectors.

    `version` changes whenever the row's vectors may have changed, so an in-process index
    can keep decoded vectors and re-read only what changed. `borrowed_uses`: its uses
    came from its category, not from the memory itself.
    """

    memory_id: str
    persona: str
    importance: int
    version: str
    borrowed_uses: bool = False


class Store(ABC):
    """Persistence for everything chatmemory remembers about a user.

    Visibility, the same in every adapter:
    - a memory is hidden from every memory read once it has a tombstone, once a
      "forget everything" happened after it was created, or once `valid_until` passed
      (DynamoDB's TTL deletes lazily, so adapters filter expired rows themselves);
    - a conversation, and its messages, are hidden once `expires_at` passed.
    Listings are newest first (created_at, then id, descending) unless said otherwise.
    Writes that take `events` store them in the same atomic write as the change.
    """

    # ---- memories -------------------------------------------------------------------

    @abstractmethod
    def add_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> bool:
        """Insert a new row; False (and nothing written) if the id exists or was tombstoned."""

    @abstractmethod
    def put_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> None:
        """Insert or replace the whole row (e.g. to attach an embedding).

        MemoryNotFound for an id with a tombstone: a deleted memory is never written again,
        even after the purge removed its row.
        """

    @abstractmethod
    def get_memory(self, user_id: str, memory_id: str) -> Memory | None:
        """The visible row, or None (absent, another user's, tombstoned, forgotten, expired)."""

    @abstractmethod
    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """The visible rows among these ids, in the order asked (missing ones left out)."""

    @abstractmethod
    def list_memories(
        self,
        user_id: str,
        query: MemoryQuery | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Memory]:
        """A page of visible rows matching `query` (default: active), newest first.

        `limit` is 1..MAX_PAGE. `created_after` keeps rows created strictly after it.

        Raises InvalidField("next") for a cursor this store did not issue for this user.
        """

    def iter_memories(self, user_id: str, query: MemoryQuery | None = None) -> Iterator[Memory]:
        """Every visible row matching `query`, newest first, page by page."""
        cursor: str | None = None
        while True:
            page = self.list_memories(user_id, query, limit=MAX_PAGE, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def visible_ids(self, user_id: str, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids still name a visible memory (any status): ids only, no text.

        The read path's check that a recent reply it is about to show did not quote a
        memory deleted since; it reads no memory into the prompt.
        """
        return {memory.memory_id for memory in self.get_memories(user_id, memory_ids)}

    @abstractmethod
    def memory_digests(self, user_id: str, persona: str | None = None) -> list[MemoryDigest]:
        """Every visible active memory, lean (all personas if None), newest first.

        The read path's hot loop: one query, no vectors, no history rows, no entities.
        """

    @abstractmethod
    def memory_embeddings(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The packed vectors of these memories (those that have any), by id."""

    @abstractmethod
    def supersede_memory(
        self,
        user_id: str,
        old_memory_id: str,
        new_memory: Memory,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        """Atomically close `old_memory_id` as superseded by `new_memory` and write the new row.

        The old row becomes `old.superseded_by(new_memory)` (status superseded, `valid_to`
        where the new belief starts, `closed_by` = the new id); the new row must say
        `supersedes=old_memory_id`.
        Returns the old row as stored. Raises MemoryNotFound if the old row is not
        visible, ConcurrentChange if it is no longer active or the new id exists —
        in every failure nothing is written.
        """

    @abstractmethod
    def close_memory(
        self,
        user_id: str,
        memory_id: str,
        at: datetime,
        closed_by: str | None = None,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        """Mark an active row closed (stopped being true, nothing replaced it).

        Returns the closed row. MemoryNotFound if not visible; ConcurrentChange if not active.
        """

    @abstractmethod
    def record_use(
        self,
        user_id: str,
        memory_ids: Sequence[str],
        at: datetime,
        events: Sequence[MemoryEvent] = (),
    ) -> None:
        """Reinforce memories loaded into a prompt: `last_used_at=at`, `recall_count += 1`.

        Ids that are not visible are skipped silently (a delete may race a read), and so
        are the events about them.
        """

    # ---- deletion -------------------------------------------------------------------

    @abstractmethod
    def tombstone_memories(
        self, user_id: str, tombstones: Sequence[Tombstone], events: Sequence[MemoryEvent] = ()
    ) -> None:
        """Write tombstones; every row named in their `versions` is hidden from the next read.

        Idempotent: tombstoning an id twice keeps the first tombstone.
        """

    @abstractmethod
    def revert_supersede(
        self, user_id: str, tombstone: Tombstone, events: Sequence[MemoryEvent] = ()
    ) -> Memory:
        """Undo a supersede in one atomic write: hide the newer row (`tombstone.memory_id`,
        its only version) behind the tombstone, and make the row it superseded active again.

        Returns the reinstated row. MemoryNotFound if the newer row is not visible;
        ConcurrentChange if it is not active or supersedes nothing, or if the older row is
        not visible or no longer superseded by it. In every failure nothing is written.
        """

    @abstractmethod
    def forget_everything(self, user_id: str, at: datetime) -> None:
        """In one write, hide every memory created up to `at` and delete every profile."""

    @abstractmethod
    def forgotten_before(self, user_id: str) -> datetime | None:
        """When the user last asked to forget everything (the watermark), or None."""

    @abstractmethod
    def get_tombstone(self, user_id: str, memory_id: str) -> Tombstone | None: ...

    @abstractmethod
    def list_tombstones(self, user_id: str, *, unpurged_only: bool = False) -> list[Tombstone]:
        """The user's tombstones, oldest deletion first."""

    @abstractmethod
    def put_tombstone(self, tombstone: Tombstone) -> None:
        """Replace a tombstone (the purge records `purged_at` or its last error here)."""

    @abstractmethod
    def purge_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Physically delete these rows (the tombstones stay). Missing ids are ignored."""

    # ---- conversations and messages -----------------------------------------------

    @abstractmethod
    def create_conversation(self, conversation: Conversation) -> None:
        """Store a new conversation; ConcurrentChange if the id exists."""

    @abstractmethod
    def get_conversation(self, user_id: str, conversation_id: str) -> Conversation | None:
        """The conversation, or None (absent, another user's, expired)."""

    @abstractmethod
    def list_conversations(self, user_id: str) -> list[Conversation]:
        """The user's unexpired conversations, most recently updated first."""

    def append_message(
        self,
        user_id: str,
        conversation_id: str,
        *,
        role: Role,
        content: str,
        tokens: int,
        at: datetime,
        memories_used: Sequence[str] = (),
    ) -> Message:
        """Store the next message with the next sequence number (see append_messages)."""
        [message] = self.append_messages(
            user_id, conversation_id, [NewMessage(role, content, tokens, tuple(memories_used))], at
        )
        return message

    @abstractmethod
    def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        create: Conversation | None = None,
    ) -> list[Message]:
        """Store these messages with the next sequence numbers (1, 2, …), atomically.

        The messages and the conversation's `last_seq`/`updated_at` (and, for a user
        message, `last_user_message_at`) move together or not at all; with `create`, the
        conversation itself is written in the same atomic write (ConcurrentChange if it
        exists). Messages of a temporary conversation expire with it.
        ConversationNotFound if the conversation is not visible (and not being created).
        """

    @abstractmethod
    def list_messages(
        self,
        user_id: str,
        conversation_id: str,
        *,
        after_seq: int = 0,
        upto_seq: int | None = None,
        last: int | None = None,
    ) -> list[Message]:
        """Messages with after_seq < seq <= upto_seq, ascending by seq.

        `last=n` keeps only the n most recent of that range. Empty if the conversation
        is not visible.
        """

    @abstractmethod
    def update_summary(
        self,
        user_id: str,
        conversation_id: str,
        *,
        summary: str,
        upto_seq: int,
        expected_upto_seq: int,
        fold_count: int,
        at: datetime,
        expected_fold_count: int | None = None,
    ) -> bool:
        """Apply a fold only if `summary_upto_seq` still equals `expected_upto_seq` (and,
        if given, `fold_count` still equals `expected_fold_count`).

        True if applied; False if another fold won (or the conversation is gone). A purge
        rewrites the summary without moving `summary_upto_seq` and bumps `fold_count`, so
        a fold that read the summary before the rewrite cannot put it back.
        """

    @abstractmethod
    def advance_extraction(
        self, user_id: str, conversation_id: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        """Move the write pipeline's cursor, only from where the caller read it."""

    @abstractmethod
    def pending_extractions(
        self, *, said_before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(user id, conversation id) of conversations with user messages the pipeline has
        not read yet, whose last user message is older than `said_before`; oldest first.

        The one read across users — for the daily sweep and `chatmemory flush`, never on
        the request path. Temporary and expired conversations are never listed.
        """

    @abstractmethod
    def pending_purges(self, *, deleted_before: datetime, limit: int = 100) -> list[str]:
        """Users with tombstones deleted before `deleted_before` whose purge has not
        finished, oldest deletion first.

        Like `pending_extractions`, a read across users for the daily sweep and
        `chatmemory flush` only.
        """

    # ---- the write pipeline's runs ------------------------------------------------------

    @abstractmethod
    def put_extraction_run(self, run: ExtractionRun, *, only_if_new: bool = False) -> bool:
        """Insert or replace a run (runs expire with `expires_at`); with `only_if_new`,
        write nothing if the run exists. True if written."""

    @abstractmethod
    def get_extraction_run(self, user_id: str, run_id: str) -> ExtractionRun | None: ...

    @abstractmethod
    def delete_extraction_runs(self, user_id: str, conversation_id: str) -> None:
        """Drop a conversation's runs (their candidates quote the user)."""

    # ---- profile, settings ----------------------------------------------------------

    @abstractmethod
    def get_profile(self, user_id: str, persona: str = DEFAULT_PERSONA) -> Profile | None: ...

    @abstractmethod
    def put_profile(self, profile: Profile) -> None: ...

    @abstractmethod
    def delete_profiles(self, user_id: str) -> None:
        """Delete the user's profile for every persona."""

    @abstractmethod
    def get_settings(self, user_id: str) -> MemorySettings:
        """The user's settings; defaults (enabled, empty note) if never saved."""

    @abstractmethod
    def put_settings(self, settings: MemorySettings) -> None: ...

    # ---- events and notices ---------------------------------------------------------

    @abstractmethod
    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        """Append audit events (ids and times only). Re-adding an event id changes nothing."""

    @abstractmethod
    def list_events(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        """A memory's events, oldest first."""

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


# ---- retrieval ------------------------------------------------------------------------


class Embedder(ABC):
    """Turns text into unit vectors. One model per process, loaded once."""

    #: stable name, used to pick per-embedder thresholds ("minilm-l6-v2", "titan-v2-1024", …)
    name: str
    dimensions: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Vectors:
        """An (n, dimensions) float32 array of L2-normalised rows, one per text."""


@dataclass(frozen=True, slots=True)
class VectorHit:
    memory_id: str
    score: float  # cosine similarity, best of the memory's vectors
    said: float | None = None  # cosine to what the memory says (row 0), if known
    useful: float | None = None  # best cosine to what it is useful for (rows 1+), if any
    # Known to an index that reads the store itself (so its hits are visible rows):
    importance: int | None = None
    borrowed_uses: bool | None = None


class VectorIndex(ABC):
    """Finds a user's memories nearest to a query vector.

    Every search is scoped to one user: there is no way to search without a user id.
    An index may lag the store (`refresh_lag`); the read path merges fresh writes from
    the store and drops anything the store no longer shows, so the index is never the
    only source of truth.
    """

    #: how long after a write the index may still not return it
    refresh_lag_seconds: float = 0.0

    @abstractmethod
    def upsert(self, memory: Memory) -> None:
        """Index (or re-index) an active memory's vectors; rows without vectors are skipped."""

    @abstractmethod
    def remove(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Drop these memories from the index. Unknown ids are ignored."""

    @abstractmethod
    def search(
        self, user_id: str, query: Vectors, *, k: int, persona: str | None = None
    ) -> list[VectorHit]:
        """Up to k of this user's active, unexpired memories, best first (one hit per memory).

        `query` is one L2-normalised vector. Raises InvalidField("user_id") without a user.
        """


# ---- the model --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model; `input_schema` is JSON Schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


#: runs a tool the model called and returns the result text the model reads next; a
#: failure it expects (bad arguments, a secret) comes back as text, not as an exception
ToolRunner = Callable[[ToolCall], str]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ReplyDelta:
    """A piece of the reply, as soon as the model produced it."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyDone:
    """The whole reply (text across every tool round) and what it cost."""

    text: str
    usage: Usage
    stop_reason: str


class Model(ABC):
    """A chat model: streams a reply, calling tools on the way; also folds summaries."""

    #: the model's id ("claude-…") or "offline"
    name: str
    #: True for the offline stand-in, which must never be mistaken for a real model
    offline: bool = False

    @abstractmethod
    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        """Stream the reply to `prompt`; ends with exactly one ReplyDone.

        When the model calls a tool, `run_tool` runs it and the reply continues with the
        result. `stop_reason == "refusal"` means the model declined: the turn is not kept.
        Raises ModelUnavailable if the model cannot answer.
        """

    @abstractmethod
    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        """Fold `turns` into `summary` (empty: summarize from scratch), within max_tokens."""

    @abstractmethod
    def extract(self, request: ExtractionInput) -> list[Candidate]:
        """Candidate memories from a transcript slice: one call (fast tier).

        Evidence must name message ids of the slice; items the model got wrong (bad
        fields, unknown evidence) are dropped, not repaired. ModelUnavailable on failure.
        """

    @abstractmethod
    def route(self, cases: Sequence[RoutingCase]) -> list[RouteDecision]:
        """One decision per case, in order: one call for all of them (fast tier)."""


@dataclass(frozen=True, slots=True)
class RoutingCase:
    """A candidate and its numbered neighbours, as the router sees them."""

    candidate: Candidate
    neighbours: tuple[Neighbour, ...]


# ---- background work ------------------------------------------------------------------------


class Jobs(ABC):
    """Work that runs off the request path: in-process locally, on a queue on AWS."""

    @abstractmethod
    def fold_later(self, user_id: str, conversation_id: str) -> None:
        """Ask for this conversation's oldest turns to be folded into its summary."""

    @abstractmethod
    def idle_later(self, user_id: str, conversation_id: str, due_at: datetime) -> None:
        """(Re)arm the conversation's idle timer: check it again at `due_at`.

        Every user message re-arms it; the check finds out whether a newer message came
        since, so only the last one of a burst starts the write pipeline (a debounce).
        """


class PipelineStarter(ABC):
    """Starts the write pipeline for one conversation's new messages."""

    @abstractmethod
    def start_write(self, user_id: str, conversation_id: str, upto_seq: int) -> bool:
        """Start it (once per slice: a repeat start is a no-op); True if it started now."""


class PurgeStarter(ABC):
    """Starts the purge of deletions: a Standard workflow on AWS, a queued job locally."""

    @abstractmethod
    def start_purge(self, request: PurgeRequest, *, origin: str = "delete") -> bool:
        """Start it; True if it started now, False if the same purge was already started.

        `origin` ("delete", "sweep") keeps a re-drive from being taken for a repeat.
        """
