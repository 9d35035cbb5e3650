"""The embedded write-pipeline run records."""

from __future__ import annotations

import json

from chatmemory.adapters.sqlite.database import Database
from chatmemory.domain.extraction import ExtractionRun, run_from_json, run_to_json
from chatmemory.domain.time import to_storage
from chatmemory.ports.runs import RunStore


class SqliteRunStore(RunStore):
    def __init__(self, database: Database) -> None:
        self._db = database

    def put_extraction_run(self, run: ExtractionRun, *, only_if_new: bool = False) -> bool:
        verb = "INSERT OR IGNORE" if only_if_new else "INSERT OR REPLACE"
        with self._db.write() as conn:
            cursor = conn.execute(
                f"{verb} INTO extraction_runs (user_id, run_id, conversation_id, "
                "expires_at, body) VALUES (?, ?, ?, ?, ?)",
                (
                    run.user_id,
                    run.run_id,
                    run.conversation_id,
                    to_storage(run.expires_at),
                    json.dumps(run_to_json(run), ensure_ascii=False),
                ),
            )
            return cursor.rowcount == 1

    def get_extraction_run(self, user_id: str, run_id: str) -> ExtractionRun | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT body FROM extraction_runs WHERE user_id = ? AND run_id = ? "
                "AND expires_at > ?",
                (user_id, run_id, self._db.now()),
            )
            .fetchone()
        )
        return None if row is None else run_from_json(json.loads(row["body"]))

    def delete_extraction_runs(self, user_id: str, conversation_id: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                "DELETE FROM extraction_runs WHERE user_id = ? AND conversation_id = ?",
                (user_id, conversation_id),
            )
