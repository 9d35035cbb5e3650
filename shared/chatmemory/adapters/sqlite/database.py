"""The one SQLite file every embedded store shares: connections, migrations, atomic writes."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.time import to_storage
from chatmemory.ports.clock import Clock
from chatmemory.ports.unit_of_work import UnitOfWork

R = TypeVar("R")


class Database:
    """A local SQLite file (WAL): the laptop default, and the reference for the contract.

    One connection per thread (the dev server is threaded, `chatmemory flush` is another
    process); WAL lets readers proceed while one writer holds the lock. A thread's
    connection is closed once the thread has ended (when the next one opens, or on
    `close`), so open connections never outnumber the threads alive that used the file:
    a server that ran a thread per connection once leaked one per request, for good.
    """

    def __init__(self, path: str | Path, *, clock: Clock) -> None:
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self._local = threading.local()
        self._connections: dict[threading.Thread, sqlite3.Connection] = {}
        self._lock = threading.Lock()
        self._migrate()

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self._path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=10000")
            self._local.conn = conn
            with self._lock:
                self._close_ended_threads()
                self._connections[threading.current_thread()] = conn
        return conn

    def _close_ended_threads(self) -> None:
        """Close the connections of threads that have ended (their work is over: a
        connection is only ever used by its own thread)."""
        for thread in [thread for thread in self._connections if not thread.is_alive()]:
            self._connections.pop(thread).close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything inside commits together or not at all.

        Inside a unit of work, the write joins the unit's transaction instead.
        """
        conn = self.connection()
        if getattr(self._local, "in_unit", False):
            yield conn
            return
        conn.execute("BEGIN IMMEDIATE")
        self._local.in_unit = True
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            # A COMMIT that failed (a full disk, an I/O error) may leave the transaction
            # open; rolled back here, the connection is usable again once the disk is.
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
        finally:
            self._local.in_unit = False

    def _migrate(self) -> None:
        """Apply numbered scripts from migrations/ past `PRAGMA user_version`."""
        folder = resources.files("chatmemory.adapters.sqlite").joinpath("migrations")
        scripts = sorted(
            (int(entry.name.split("_", 1)[0]), entry)
            for entry in folder.iterdir()
            if entry.name.endswith(".sql")
        )
        with self.write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in scripts:
                if number <= version:
                    continue
                for statement in _statements(script.read_text(encoding="utf-8")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number:d}")

    def close(self) -> None:
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def now(self) -> str:
        return to_storage(self.clock.now())

    def forgotten_before(self, conn: sqlite3.Connection, user_id: str) -> str | None:
        """The "forget everything" watermark (storage form), if there ever was one."""
        row = conn.execute(
            "SELECT forgotten_before FROM user_state WHERE user_id = ?", (user_id,)
        ).fetchone()
        return None if row is None else row["forgotten_before"]

    def visible_clause(self, conn: sqlite3.Connection, user_id: str) -> tuple[str, list[Any]]:
        """SQL that keeps only memory rows a read may return (the memory port's visibility)."""
        clause = "user_id = ? AND hidden = 0 AND (valid_until IS NULL OR valid_until > ?)"
        params: list[Any] = [user_id, self.now()]
        forgotten = self.forgotten_before(conn, user_id)
        if forgotten is not None:
            clause += " AND created_at > ?"
            params.append(forgotten)
        return clause, params


class SqliteUnitOfWork(UnitOfWork):
    """One `BEGIN IMMEDIATE` transaction around the work: writers are serialised, so a
    unit never loses a race and `retry` has nothing to do."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def run(self, work: Callable[[], R], *, retry: bool = False, what: str = "") -> R:
        with self._database.write():
            return work()


def check_owner(user_id: str, owner: str) -> None:
    if user_id != owner:
        raise InvalidField("user_id", "a row may only be written under its own user")


def marks(values: Any) -> str:
    """`?, ?, …`, one per value, for an IN list."""
    return ", ".join("?" for _ in values)


def seq_window(after_seq: int, upto_seq: int | None, last: int | None) -> tuple[str, list[Any]]:
    """The tail of a transcript query (` AND seq > ? … ORDER BY …`) and its parameters:
    after_seq < seq <= upto_seq, or the `last` newest of that (the caller sorts them)."""
    sql = " AND seq > ?"
    params: list[Any] = [after_seq]
    if upto_seq is not None:
        sql += " AND seq <= ?"
        params.append(upto_seq)
    if last is None:
        return sql + " ORDER BY seq", params
    rules.int_range("last", last, 0)
    return sql + " ORDER BY seq DESC LIMIT ?", [*params, last]


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (comments and blank lines dropped)."""
    buffer = ""
    for line in script.splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        yield buffer.strip()
