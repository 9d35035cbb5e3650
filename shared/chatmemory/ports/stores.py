"""Every store port of one backend, handed to the services together."""

from __future__ import annotations

from dataclasses import dataclass

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
from chatmemory.ports.threads import ThreadStore
from chatmemory.ports.unit_of_work import UnitOfWork
from chatmemory.ports.user_state import UserStateStore


@dataclass(frozen=True, slots=True)
class Stores:
    """One backend's stores, sharing one connection or one table.

    A service keeps the ones it uses; `config.py` builds this once per process.
    """

    memories: MemoryStore
    visibility: MemoryVisibility
    recall: RecallSource
    tombstones: TombstoneStore
    conversations: ConversationStore
    conversation_erasure: ConversationErasure
    runs: RunStore
    user_state: UserStateStore
    notices: NoticeStore
    events: EventLog
    rooms: RoomStore
    persona_memories: PersonaMemoryStore
    threads: ThreadStore
    rhythm: RhythmStore
    quotas: QuotaStore
    unit_of_work: UnitOfWork
