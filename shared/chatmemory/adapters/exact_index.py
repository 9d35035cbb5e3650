"""The exact index: scores a user's memories in-process with one matrix product.

It asks the store which memories are visible on every search, so it never lags: a
memory saved on this turn is found on the next, and a deleted one is never found.
Decoded vectors are kept per user and re-read only for rows whose version changed.
The local default, and the fallback on AWS.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chatmemory.domain import rules, vectors
from chatmemory.domain.memory import Memory
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.recall_source import MemoryDigest, RecallSource
from chatmemory.ports.vector_index import VectorHit, VectorIndex

_CACHED_USERS = 64


@dataclass(frozen=True, slots=True)
class _UserMatrix:
    """One user's vectors, row-stacked: `owner[i]` is the memory of row i."""

    key: tuple[object, ...]  # the query's width, then (memory id, version) of every memory
    digests: tuple[MemoryDigest, ...]
    matrix: Vectors
    owner: npt.NDArray[np.intp]
    first_row: npt.NDArray[np.intp]  # where each memory's rows start (row 0 = its words)


class ExactIndex(VectorIndex):
    refresh_lag_seconds = 0.0

    def __init__(self, source: RecallSource) -> None:
        self._source = source
        self._users: OrderedDict[tuple[str, str | None], _UserMatrix] = OrderedDict()
        self._rows: dict[tuple[str, str], tuple[str, Vectors]] = {}  # (user, id) → (version, rows)
        self._lock = threading.Lock()

    def upsert(self, memory: Memory) -> None:
        """Nothing to do: the rows in the store are the index."""

    def remove(self, user_id: str, memory_ids: Sequence[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._rows.pop((user_id, memory_id), None)

    def search(
        self,
        user_id: str,
        query: Vectors,
        *,
        k: int,
        persona: str | None = None,
        visible: Sequence[MemoryDigest] | None = None,
    ) -> list[VectorHit]:
        rules.user_id(user_id)
        if k <= 0:
            return []
        digests = (
            list(visible) if visible is not None else self._source.memory_digests(user_id, persona)
        )
        state = self._matrix(user_id, persona, digests, width=int(query.shape[-1]))
        if not state.digests:
            return []
        row_scores = state.matrix @ query.reshape(-1)
        best = np.maximum.reduceat(row_scores, state.first_row)
        top = min(k, len(state.digests))
        chosen = np.argpartition(-best, top - 1)[:top]
        chosen = chosen[np.argsort(-best[chosen], kind="stable")]
        ends = np.append(state.first_row[1:], len(row_scores))
        hits = []
        for i in chosen:
            start, end = int(state.first_row[i]), int(ends[i])
            uses = tuple(float(s) for s in np.sort(row_scores[start + 1 : end])[::-1])
            digest = state.digests[i]
            hits.append(
                VectorHit(
                    digest.memory_id,
                    float(best[i]),
                    said=float(row_scores[start]),
                    useful=uses[0] if uses else None,
                    uses=uses,
                    importance=digest.importance,
                    borrowed_uses=digest.borrowed_uses,
                )
            )
        return hits

    def _matrix(
        self, user_id: str, persona: str | None, digests: Sequence[MemoryDigest], *, width: int
    ) -> _UserMatrix:
        """The user's rows of the query's size. A row of another size (written before the
        embedder changed) cannot be compared: it waits, left out, for its re-index."""
        key = (width, *((d.memory_id, d.version) for d in digests))
        with self._lock:
            cached = self._users.get((user_id, persona))
            if cached is not None and cached.key == key:
                self._users.move_to_end((user_id, persona))
                return cached
            stale = [
                d.memory_id
                for d in digests
                if self._rows.get((user_id, d.memory_id), ("", None))[0] != d.version
            ]
        fetched = self._source.memory_embeddings(user_id, stale) if stale else {}
        versions = {d.memory_id: d.version for d in digests}
        with self._lock:
            for memory_id in stale:
                version = versions[memory_id]
                blob = fetched.get(memory_id)
                rows = _normalised(vectors.unpack_rows(blob)) if blob else None
                if rows is None:
                    self._rows.pop((user_id, memory_id), None)
                else:
                    self._rows[(user_id, memory_id)] = (version, rows)
            present = [
                (d, self._rows[(user_id, d.memory_id)][1])
                for d in digests
                if (user_id, d.memory_id) in self._rows
                and self._rows[(user_id, d.memory_id)][1].shape[1] == width
            ]
            state = _stack(key, present)
            self._users[(user_id, persona)] = state
            while len(self._users) > _CACHED_USERS:
                (old_user, _), _unused = self._users.popitem(last=False)
                if not any(user == old_user for user, _ in self._users):
                    for row_key in [rk for rk in self._rows if rk[0] == old_user]:
                        del self._rows[row_key]
        return state


def _normalised(rows: Vectors) -> Vectors:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    normalised: Vectors = (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return normalised


def _stack(key: tuple[object, ...], present: list[tuple[MemoryDigest, Vectors]]) -> _UserMatrix:
    if not present:
        empty = np.zeros((0, 1), dtype=np.float32)
        return _UserMatrix(key, (), empty, np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))
    counts = np.fromiter((len(rows) for _, rows in present), dtype=np.intp, count=len(present))
    first_row = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
    return _UserMatrix(
        key=key,
        digests=tuple(digest for digest, _ in present),
        matrix=np.concatenate([rows for _, rows in present]),
        owner=np.repeat(np.arange(len(present), dtype=np.intp), counts),
        first_row=first_row,
    )
