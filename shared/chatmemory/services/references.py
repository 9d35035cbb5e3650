"""Each person's book of references (domain/references.py), read from their memories in
use and kept per process.

The digests are read on every call, as the exact index reads them: a memory deleted,
corrected or faded leaves the book on the very next turn. Only rows whose version changed
are re-read, and what is kept is what each memory adds (relations, names, home), never
its text.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from chatmemory.domain import references
from chatmemory.domain.references import Noted, References
from chatmemory.ports.recall_source import MemoryDigest
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)

_CACHED_USERS = 64
_READ_BATCH = 100


class ReferenceBooks:
    def __init__(self, stores: Stores, *, users: int = _CACHED_USERS) -> None:
        self._stores = stores
        self._users = users
        self._noted: OrderedDict[tuple[str, str | None], dict[str, tuple[str, Noted]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def read(
        self,
        user_id: str,
        message: str,
        persona: str | None = None,
        digests: Sequence[MemoryDigest] | None = None,
    ) -> tuple[str, list[MemoryDigest] | None]:
        """The message read with the person's book ("my husband" → "… (Chris)"), and the
        store's digests the book was read from (read here unless given), for the search to
        use. The message as it was, and no digests, when it could name no one or the book
        cannot be read: recall goes on without it."""
        if not references.may_refer(message):
            return message, None
        try:
            if digests is None:
                digests = self._stores.recall.memory_digests(user_id, persona)
            book = self.of(user_id, persona, digests)
        except Exception as exc:
            log.warning("reference book unavailable", extra={"error_type": type(exc).__name__})
            return message, None
        return references.read_with(message, book), list(digests)

    def of(
        self,
        user_id: str,
        persona: str | None = None,
        digests: Sequence[MemoryDigest] | None = None,
    ) -> References:
        """The person's book as their memories in use stand now (`digests`: the store's,
        newest first, when the caller has just read them)."""
        if digests is None:
            digests = self._stores.recall.memory_digests(user_id, persona)
        key = (user_id, persona)
        with self._lock:
            known = dict(self._noted.get(key, {}))
        stale = [d.memory_id for d in digests if known.get(d.memory_id, ("",))[0] != d.version]
        versions = {d.memory_id: d.version for d in digests}
        for start in range(0, len(stale), _READ_BATCH):
            rows = self._stores.memories.get_memories(user_id, stale[start : start + _READ_BATCH])
            for row in rows:
                known[row.memory_id] = (versions[row.memory_id], references.noted_in(row.text))
        current = {d.memory_id: known[d.memory_id] for d in digests if d.memory_id in known}
        with self._lock:
            self._noted[key] = current
            self._noted.move_to_end(key)
            while len(self._noted) > self._users:
                self._noted.popitem(last=False)
        return references.book(current[d.memory_id][1] for d in digests if d.memory_id in current)
