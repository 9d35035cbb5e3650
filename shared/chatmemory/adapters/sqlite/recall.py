"""The read path's lean view of the embedded memory rows."""

from __future__ import annotations

from collections.abc import Sequence

from chatmemory.adapters.sqlite.database import Database, marks
from chatmemory.adapters.sqlite.rows import opt_parse
from chatmemory.domain import fading
from chatmemory.domain.memory import Kind
from chatmemory.domain.time import from_storage
from chatmemory.domain.uses_origin import USES_FROM
from chatmemory.ports.recall_source import MemoryDigest, RecallSource

_BOUND_PARAMETERS = 500  # SQLite caps bound parameters per statement


class SqliteRecallSource(RecallSource):
    def __init__(self, database: Database) -> None:
        self._db = database

    def memory_digests(self, user_id: str, persona: str | None = None) -> list[MemoryDigest]:
        conn = self._db.connection()
        clause, params = self._db.visible_clause(conn, user_id)
        clause += " AND status = 'active'"
        if persona is not None:
            clause += " AND persona = ?"
            params.append(persona)
        # The version: the uses job rewrites a row's vectors in place without touching
        # `updated_at` (what the memory says did not change), and always leaves it with
        # uses and without the `uses_from` that said they were borrowed or carried.
        rows = conn.execute(
            "SELECT memory_id, persona, importance, updated_at || ':' || "
            "COALESCE(length(embedding), 0) || ':' || "
            f"(instr(meta, '\"{USES_FROM}\"') > 0) || (instr(meta, '\"uses\"') > 0), "
            'instr(meta, \'"uses_from": "category"\') > 0, '
            "kind, category, created_at, stability_days, reinforced_at, last_used_at, "
            f"archived_at FROM memories WHERE {clause} "
            "ORDER BY created_at DESC, memory_id DESC",
            params,
        ).fetchall()
        # Only what is in use: a belief the cap set aside, or one that faded, is kept but
        # never recalled (the index query still reads it; SQLite reads are local).
        now = self._db.clock.now()
        return [
            MemoryDigest(row[0], row[1], row[2], row[3], bool(row[4]))
            for row in rows
            if fading.in_use(
                fading.ShelfLife(
                    kind=Kind(row[5]),
                    category=row[6],
                    created_at=from_storage(row[7]),
                    stability_days=row[8],
                    reinforced_at=opt_parse(row[9]),
                    last_used_at=opt_parse(row[10]),
                    archived_at=opt_parse(row[11]),
                ),
                now,
            )
        ]

    def memory_embeddings(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        conn = self._db.connection()
        found: dict[str, bytes] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), _BOUND_PARAMETERS):
            chunk = ids[start : start + _BOUND_PARAMETERS]
            for memory_id, embedding in conn.execute(
                "SELECT memory_id, embedding FROM memories WHERE user_id = ? "
                f"AND memory_id IN ({marks(chunk)}) AND embedding IS NOT NULL",
                [user_id, *chunk],
            ):
                found[memory_id] = embedding
        return found
