"""The embedded stores: one SQLite file (WAL) under the local state folder, one module
per aggregate (the persona partition among them), all on one `Database`."""

from __future__ import annotations

from pathlib import Path

from chatmemory.adapters.sqlite.conversation_erasure import SqliteConversationErasure
from chatmemory.adapters.sqlite.conversations import SqliteConversationStore
from chatmemory.adapters.sqlite.database import Database, SqliteUnitOfWork
from chatmemory.adapters.sqlite.events import SqliteEventLog
from chatmemory.adapters.sqlite.memories import SqliteMemoryStore
from chatmemory.adapters.sqlite.notices import SqliteNoticeStore
from chatmemory.adapters.sqlite.persona_memories import SqlitePersonaMemoryStore
from chatmemory.adapters.sqlite.quotas import SqliteQuotaStore
from chatmemory.adapters.sqlite.recall import SqliteRecallSource
from chatmemory.adapters.sqlite.rhythm import SqliteRhythmStore
from chatmemory.adapters.sqlite.rooms import SqliteRoomStore
from chatmemory.adapters.sqlite.runs import SqliteRunStore
from chatmemory.adapters.sqlite.tombstones import SqliteTombstoneStore
from chatmemory.adapters.sqlite.user_state import SqliteUserStateStore
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores


def sqlite_stores(database: Database) -> Stores:
    """Every store on one database file (and so on one connection per thread)."""
    memories = SqliteMemoryStore(database)
    return Stores(
        memories=memories,
        visibility=memories,
        recall=SqliteRecallSource(database),
        tombstones=SqliteTombstoneStore(database),
        conversations=SqliteConversationStore(database),
        conversation_erasure=SqliteConversationErasure(database),
        runs=SqliteRunStore(database),
        user_state=SqliteUserStateStore(database),
        notices=SqliteNoticeStore(database),
        events=SqliteEventLog(database),
        rooms=SqliteRoomStore(database),
        persona_memories=SqlitePersonaMemoryStore(database),
        threads=memories,
        rhythm=SqliteRhythmStore(database),
        quotas=SqliteQuotaStore(database),
        unit_of_work=SqliteUnitOfWork(database),
    )


def open_sqlite(path: str | Path, *, clock: Clock) -> Stores:
    """The stores on the SQLite file at `path`, migrated to the current schema."""
    return sqlite_stores(Database(path, clock=clock))


__all__ = ["Database", "open_sqlite", "sqlite_stores"]
