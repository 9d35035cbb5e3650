"""Recording proxies for the store and the vector index: who touched memory, and how.

Every call through the product's store or index is noted with the user it was about and
what kind of access it is. The gates for temporary chats and `enabled: false` read the
notes: a turn that should neither read nor write memory must leave no MEMORY_READ and
no MEMORY_WRITE for its user.

How each method counts (ARCHITECTURE.md: "Temporary chats read and write nothing;
`enabled: false` stops reads and writes"):
- MEMORY_READ: anything that returns what is remembered or derived from it — memory
  rows (a user's threads among them), a persona's own rows, digests, vectors, the
  profile, memory events, notices, extraction runs (their candidates quote the user), a
  persona's room block (it quotes memories), and a vector search.
- MEMORY_WRITE: anything that changes it — memory rows (a thread's manners and a row's
  uses too), a persona's own rows, use counts, tombstones, purges, "forget everything"
  (and taking the user out of the witnessed lists, and their lines out of the room
  transcripts), runs, the profile, events, notices, the settings, a persona's room
  block, and the index's upserts and removals.
- DELETION_CHECK: reading tombstones (and the "forget everything" watermark). They hold
  ids and times, never words, and the read path reads them only to withhold text (a
  summary that may still hold a deleted fact), so a chat that must not read memory may
  still check them.
- CHAT: the conversation and its messages, its summary and its extraction cursor (and
  deleting it, and masking the secrets stored in messages); a room, its members, its
  transcript, each persona's cursor there and the last day a thread was raised in it (a
  day: no user, no text). A temporary chat's own turns are
  the chat itself, not memory (its messages expire).
- CONTROL: reading the settings — how a turn learns that memory is off.
- SWEEP: the cross-user (and cross-room) listings the background sweeps start from (no
  user, no text).
- BOOKKEEPING: the write pipeline's run record when it holds no candidate — it says
  only that a slice of a chat was read (the pipeline writes one when it finds memory
  off, so the slice is never read again). A run that holds candidates quotes the user:
  reading or writing it is a MEMORY_READ or MEMORY_WRITE.
- QUOTA: taking a turn from the user's quota for this minute (a count, no text).
A method not listed here is UNCLASSIFIED; the gates fail on any call to one, so a new
store method has to be placed in one of these kinds before the gates pass.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from chatmemory.ports.conversation_erasure import ConversationErasure
from chatmemory.ports.conversations import ConversationStore
from chatmemory.ports.deletions import TombstoneStore
from chatmemory.ports.events import EventLog
from chatmemory.ports.memories import MemoryStore
from chatmemory.ports.memory_visibility import MemoryVisibility
from chatmemory.ports.notices import NoticeStore
from chatmemory.ports.persona_memories import PersonaMemoryStore
from chatmemory.ports.quotas import QuotaStore
from chatmemory.ports.recall_source import RecallSource
from chatmemory.ports.rhythm import RhythmStore
from chatmemory.ports.rooms import RoomStore
from chatmemory.ports.runs import RunStore
from chatmemory.ports.stores import Stores
from chatmemory.ports.threads import ThreadStore
from chatmemory.ports.user_state import UserStateStore
from chatmemory.ports.vector_index import VectorIndex


class Access(StrEnum):
    MEMORY_READ = "memory read"
    MEMORY_WRITE = "memory write"
    DELETION_CHECK = "deletion check"
    CHAT = "chat"
    CONTROL = "control"
    SWEEP = "sweep"
    BOOKKEEPING = "pipeline bookkeeping"
    QUOTA = "quota"
    UNCLASSIFIED = "unclassified"


MEMORY = frozenset({Access.MEMORY_READ, Access.MEMORY_WRITE, Access.UNCLASSIFIED})

STORE_ACCESS: dict[str, Access] = {
    # memory rows and what is derived from them
    "get_memory": Access.MEMORY_READ,
    "get_memories": Access.MEMORY_READ,
    "list_memories": Access.MEMORY_READ,
    "iter_memories": Access.MEMORY_READ,
    "memory_digests": Access.MEMORY_READ,
    "memory_embeddings": Access.MEMORY_READ,
    "get_profile": Access.MEMORY_READ,
    "list_events": Access.MEMORY_READ,
    "get_notice": Access.MEMORY_READ,
    "list_notices": Access.MEMORY_READ,
    "notices_about": Access.MEMORY_READ,
    "get_extraction_run": Access.MEMORY_READ,
    "list_threads": Access.MEMORY_READ,  # a user's thread rows, every turn
    "traces": Access.MEMORY_READ,  # what a delete reads of a row: its ids, persona and kind
    "add_memory": Access.MEMORY_WRITE,
    "put_memory": Access.MEMORY_WRITE,
    "set_thread_meta": Access.MEMORY_WRITE,  # a thread's manners
    "supersede_memory": Access.MEMORY_WRITE,
    "close_memory": Access.MEMORY_WRITE,
    "record_use": Access.MEMORY_WRITE,
    "set_fading": Access.MEMORY_WRITE,
    "set_uses": Access.MEMORY_WRITE,  # a row's own uses and their vectors (the uses job)
    "hide_memories": Access.MEMORY_WRITE,
    "hide_active_memory": Access.MEMORY_WRITE,
    "reinstate_memory": Access.MEMORY_WRITE,
    "add_tombstones": Access.MEMORY_WRITE,
    "raise_forget_watermark": Access.MEMORY_WRITE,  # "forget everything"
    "put_tombstone": Access.MEMORY_WRITE,
    "purge_memories": Access.MEMORY_WRITE,
    "put_extraction_run": Access.MEMORY_WRITE,
    "delete_extraction_runs": Access.MEMORY_WRITE,
    "put_profile": Access.MEMORY_WRITE,
    "delete_profiles": Access.MEMORY_WRITE,
    "put_settings": Access.MEMORY_WRITE,
    "add_events": Access.MEMORY_WRITE,
    "add_notice": Access.MEMORY_WRITE,
    "mark_notice_undone": Access.MEMORY_WRITE,
    "delete_notices": Access.MEMORY_WRITE,
    "get_block": Access.MEMORY_READ,  # a persona's room block quotes memories
    "put_block": Access.MEMORY_WRITE,
    # a user's rhythm (seed 003): when they chat is a memory — counters, samples, patterns
    "get_rhythm": Access.MEMORY_READ,
    "put_rhythm": Access.MEMORY_WRITE,
    "delete_rhythm": Access.MEMORY_WRITE,  # "forget everything"
    # a persona's own rows (noted for the persona's slug; `drop_witness` for the user)
    "list_persona_memories": Access.MEMORY_READ,
    "add_persona_memory": Access.MEMORY_WRITE,
    "supersede_persona_memory": Access.MEMORY_WRITE,
    "close_persona_memory": Access.MEMORY_WRITE,
    "record_persona_use": Access.MEMORY_WRITE,
    # "forget everything": the user leaves the witnessed lists, of a persona's own rows
    # and of other users' rows alike (`PersonaMemoryStore` and `MemoryStore` share the name)
    "drop_witness": Access.MEMORY_WRITE,
    # and their own lines leave every room's transcript (noted for the user)
    "forget_speaker": Access.MEMORY_WRITE,
    # deletions: ids and times only, read to withhold text
    "get_tombstone": Access.DELETION_CHECK,
    "list_tombstones": Access.DELETION_CHECK,
    "visible_ids": Access.DELETION_CHECK,  # which ids a recent reply used are gone
    "id_in_use": Access.DELETION_CHECK,  # whether an id was ever used: ids only
    "forgotten_before": Access.DELETION_CHECK,  # when "forget everything" last happened
    # the chat itself
    "create_conversation": Access.CHAT,
    "get_conversation": Access.CHAT,
    "list_conversations": Access.CHAT,
    "last_seen": Access.CHAT,  # a new chat's return greeting: one time, no text
    "append_message": Access.CHAT,
    "append_messages": Access.CHAT,
    "append_observed": Access.CHAT,
    "list_messages": Access.CHAT,
    "update_summary": Access.CHAT,
    "advance_extraction": Access.CHAT,
    # the chat removed at its owner's request: hidden, then purged (ids; text only goes)
    "hide_conversations": Access.CHAT,
    "purge_conversation": Access.CHAT,
    # the stored messages' secrets masked in place, store-wide (a data migration)
    "mask_stored_messages": Access.CHAT,
    # a room, its members, its transcript and each persona's cursor
    "create_room": Access.CHAT,
    "get_room": Access.CHAT,
    "change_members": Access.CHAT,
    "append_room_messages": Access.CHAT,
    "list_room_messages": Access.CHAT,
    "extraction_cursor": Access.CHAT,
    "advance_room_extraction": Access.CHAT,
    "mark_threads_asked": Access.CHAT,  # the room's one stamp of a day: no text, no user
    # is memory on?
    "get_settings": Access.CONTROL,
    # the background sweeps' listings across users
    "pending_extractions": Access.SWEEP,
    "pending_purges": Access.SWEEP,
    "quiet_rooms": Access.SWEEP,
    "threads_due": Access.SWEEP,  # the nightly review's ids
    "pending_uses": Access.SWEEP,  # rows still waiting for their own uses (flush's ids)
    "pending_vectors": Access.SWEEP,  # rows stored without vectors (flush's ids)
    "memory_owners": Access.SWEEP,  # the re-index's user ids (an operator's run)
    "hidden_conversations": Access.SWEEP,  # deleted conversations whose purge did not finish
    # the per-user quota's counter: a number per minute; what a user has stored: two counts
    "take": Access.QUOTA,
    "stored": Access.QUOTA,
}

INDEX_ACCESS: dict[str, Access] = {
    "search": Access.MEMORY_READ,
    "upsert": Access.MEMORY_WRITE,
    "remove": Access.MEMORY_WRITE,
}


@dataclass(frozen=True, slots=True)
class Call:
    target: str  # "store" or "index"
    method: str
    access: Access
    user_id: str | None  # None: a listing across users

    def __str__(self) -> str:
        return f"{self.target}.{self.method} ({self.access}) for {self.user_id}"


class Recorder:
    """The calls seen since the last `clear()`, from every thread."""

    def __init__(self) -> None:
        self._calls: list[Call] = []
        self._lock = threading.Lock()

    def note(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def of(self, user_id: str, accesses: Iterable[Access] = tuple(Access)) -> list[Call]:
        """The calls about this user of these kinds (unattributed calls count for everyone)."""
        wanted = set(accesses)
        return [
            call for call in self.calls if call.access in wanted and call.user_id in (user_id, None)
        ]

    def memory_calls(self, user_id: str) -> list[Call]:
        """Reads and writes of this user's memory (and calls no one has classified)."""
        return self.of(user_id, MEMORY)

    def users(self) -> set[str | None]:
        return {call.user_id for call in self.calls}


def _user_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The user a call is about: a `user_id` argument, or the user of the row written."""
    if "user_id" in kwargs:
        return str(kwargs["user_id"])
    if not args:
        return None
    first = args[0]
    if isinstance(first, str):
        return first
    if isinstance(first, list | tuple):
        first = first[0] if first else None
    owner = getattr(first, "user_id", None)
    return str(owner) if owner is not None else None


def _holds_candidates(run: Any) -> bool:
    return bool(getattr(run, "candidates", None))


def _forwarder(target: str, name: str, access: Access) -> Callable[..., Any]:
    def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        user_id = _user_of(args, kwargs)
        if name == "get_extraction_run":  # the kind depends on the run it returns
            run = getattr(self._inner, name)(*args, **kwargs)
            kind = access if _holds_candidates(run) else Access.BOOKKEEPING
            self._recorder.note(Call(target, name, kind, user_id))
            return run
        if name == "put_extraction_run" and args and not _holds_candidates(args[0]):
            self._recorder.note(Call(target, name, Access.BOOKKEEPING, user_id))
        else:
            self._recorder.note(Call(target, name, access, user_id))
        return getattr(self._inner, name)(*args, **kwargs)

    recorded.__name__ = name
    return recorded


def _passed_through(name: str) -> property:
    return property(lambda self: getattr(self._inner, name))


def _recording(port: type, target: str, table: dict[str, Access]) -> Any:
    """A subclass of `port` that forwards every method of the port to the wrapped
    adapter, noting each call first. It is a real `port` (isinstance checks hold), and
    a method added to the port later is forwarded too — as UNCLASSIFIED until listed."""
    namespace: dict[str, Any] = {}
    for name, member in inspect.getmembers(port):
        if name.startswith("_"):
            continue
        if callable(member):
            namespace[name] = _forwarder(target, name, table.get(name, Access.UNCLASSIFIED))
        else:  # class attributes such as an index's `refresh_lag_seconds`
            namespace[name] = _passed_through(name)

    def __init__(self: Any, inner: Any, recorder: Recorder) -> None:  # noqa: N807
        self._inner = inner
        self._recorder = recorder

    def __getattr__(self: Any, name: str) -> Any:  # noqa: N807
        # what the adapter has beyond its port (never reached for the port's methods)
        return getattr(self._inner, name)

    namespace["__init__"] = __init__
    namespace["__getattr__"] = __getattr__
    namespace["inner"] = property(lambda self: self._inner)
    namespace["__doc__"] = f"A {port.__name__} that notes every call before forwarding it."
    return type(f"Recording{port.__name__}", (port,), namespace)


#: every store port, each behind a proxy that notes its calls (the unit of work holds no
#: data: the writes made inside it are noted by the stores that make them)
_STORE_PORTS: dict[str, type] = {
    "memories": MemoryStore,
    "visibility": MemoryVisibility,
    "recall": RecallSource,
    "tombstones": TombstoneStore,
    "conversations": ConversationStore,
    "conversation_erasure": ConversationErasure,
    "runs": RunStore,
    "user_state": UserStateStore,
    "notices": NoticeStore,
    "events": EventLog,
    "rooms": RoomStore,
    "persona_memories": PersonaMemoryStore,
    "threads": ThreadStore,
    "rhythm": RhythmStore,
    "quotas": QuotaStore,
}
_RECORDING_PORTS = {
    field: _recording(port, "store", STORE_ACCESS) for field, port in _STORE_PORTS.items()
}


def store_ports() -> list[type]:
    """The store ports a backend's `Stores` bundles, in the bundle's field order."""
    return list(_STORE_PORTS.values())


def recording_stores(stores: Stores, recorder: Recorder) -> Stores:
    """`stores` with every store behind a recording proxy (see the module docstring)."""
    return dataclasses.replace(
        stores,
        **{
            field: proxy(getattr(stores, field), recorder)
            for field, proxy in _RECORDING_PORTS.items()
        },
    )


#: a VectorIndex that notes every call
RecordingIndex: Callable[[VectorIndex, Recorder], VectorIndex] = _recording(
    VectorIndex, "index", INDEX_ACCESS
)
