"""Per-turn recall: the few memories that matter for this message, and nothing else.

gate (does this message need personal context at all?) → index candidates, plus the
store's fresh writes a lagging index may not show yet → only memories the store still
shows as active (tombstones, expiry and history are filtered in code, never trusted to
the index) → relevance → the best memory must clear the threshold; up to four more join
it at the lower companion bar, if they come near enough to it (a question often needs two
facts, and the second reads weaker) → their rows, re-read → optionally a reranker
reorders the few that qualified.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from chatmemory.domain import fading, vectors
from chatmemory.domain.memory import Memory, Status, as_it_stood, believed_at
from chatmemory.domain.personal_context import GateReading
from chatmemory.domain.ranking import TURN_LIMIT
from chatmemory.ports.clock import Clock
from chatmemory.ports.embedder import Embedder, Vectors
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.recall_source import MemoryDigest
from chatmemory.ports.reranker import Reranker, RerankerUnavailable
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorHit, VectorIndex
from chatmemory.services.references import ReferenceBooks
from chatmemory.services.relevance import USES_FROM_CATEGORY, Candidate, RelevanceModel

log = logging.getLogger(__name__)

#: how many of the index's nearest memories relevance scores. The index ranks by a memory's
#: single best vector, relevance by the blend of its words and uses; a memory whose uses
#: fit together but none alone stands out can sit past the 40th by the first and win by
#: the second. 80 reaches every memory the blend would send on the labelled sets.
CANDIDATES = 80
#: the most the index is asked for when memories it still holds, but the store no longer
#: shows, crowd its nearest (eight times the candidates)
_MOST_CANDIDATES = 8 * CANDIDATES
# A write may take this much longer than the index's refresh interval to be searchable.
_FRESH_MARGIN = timedelta(seconds=30)


#: how many of the qualified memories a reranker is shown (it reorders, never adds)
RERANK_POOL = 15


@dataclass(frozen=True, slots=True)
class Recalled:
    memory: Memory
    score: float


@dataclass(frozen=True, slots=True)
class _Reading:
    """A message as recall reads it: the text with the person's references, its vector,
    and the store's digests when the book needed them (a turn reads them once)."""

    text: str
    query: Vectors
    visible: list[MemoryDigest] | None = None


@dataclass(frozen=True, slots=True)
class RecallTrace:
    """What one turn's recall decided, for the benchmark: the gate's score and verdict,
    every candidate's match (gate not applied), and the ids it sent, in order."""

    gate: float
    gate_open: bool
    matches: dict[str, float]
    sent: tuple[str, ...]
    reranked: bool = False


class Retriever:
    def __init__(
        self,
        stores: Stores,
        embedder: Embedder,
        index: VectorIndex,
        clock: Clock,
        relevance: RelevanceModel,
        *,
        limit: int = TURN_LIMIT,
        reranker: Reranker | None = None,
        books: ReferenceBooks | None = None,
    ) -> None:
        self._stores = stores
        self._books = books if books is not None else ReferenceBooks(stores)
        self._embedder = embedder
        self._index = index
        self._clock = clock
        self._relevance = relevance
        self._limit = limit
        self._reranker = reranker

    @property
    def relevance(self) -> RelevanceModel:
        return self._relevance

    def with_relevance(self, relevance: RelevanceModel) -> Retriever:
        """The same retriever judging with another calibration (the benchmark's curves)."""
        return Retriever(
            self._stores,
            self._embedder,
            self._index,
            self._clock,
            relevance,
            limit=self._limit,
            reranker=self._reranker,
            books=self._books,
        )

    def recall(self, user_id: str, message: str, *, persona: str | None = None) -> list[Recalled]:
        """Up to five of the user's active memories worth putting in front of this message.

        Most messages need none: when the gate says so, the index is not even searched.
        """
        return self._recall(user_id, message, persona)[0]

    def trace(self, user_id: str, message: str, *, persona: str | None = None) -> RecallTrace:
        """What `recall` decides for this message and why (nothing is recorded as used)."""
        read = self._read(user_id, message, persona)
        gate = self._relevance.personal_context(read.text, read.query)
        candidates = self._candidates(user_id, read.query, persona, read.visible)
        recalled, reranked = self._recall(
            user_id, message, persona, read=read, candidates=candidates
        )
        return RecallTrace(
            gate=gate,
            gate_open=self._relevance.gate_open(gate),
            matches={c.memory_id: self._relevance.match(c) for c in candidates},
            sent=tuple(item.memory.memory_id for item in recalled),
            reranked=reranked,
        )

    def _recall(
        self,
        user_id: str,
        message: str,
        persona: str | None,
        *,
        read: _Reading | None = None,
        candidates: list[Candidate] | None = None,
    ) -> tuple[list[Recalled], bool]:
        if read is None:
            read = self._read(user_id, message, persona)
        gate = self._relevance.personal_context(read.text, read.query)
        if not self._relevance.gate_open(gate):
            return [], False
        if candidates is None:
            candidates = self._candidates(user_id, read.query, persona, read.visible)
        scored = {c.memory_id: self._relevance.match(c) for c in candidates}
        qualified = self._relevance.cut(scored, gate)
        # The store has the last word: only rows it still shows may enter a prompt. Read
        # the best few; if some vanished meanwhile, the next ones take their places.
        wanted = RERANK_POOL if self._reranker is not None else self._limit
        recalled: list[Recalled] = []
        now = self._clock.now()
        batch = max(self._limit * 2, wanted)
        for start in range(0, len(qualified), batch):
            chunk = qualified[start : start + batch]
            rows = self._stores.memories.get_memories(user_id, [c.memory_id for c in chunk])
            # In use only: an archived belief (faded, unused for a year, set aside by the
            # cap) is kept and listed, never recalled.
            visible = {
                m.memory_id: m
                for m in rows
                if not m.is_expired(now) and fading.in_use(m, now)  # in use: active, not archived
            }
            recalled += [
                Recalled(visible[c.memory_id], c.score) for c in chunk if c.memory_id in visible
            ]
            if len(recalled) >= wanted:
                break
        # Retention weighs into the order: of two near matches, the fresher belief first.
        weighed = fading.weighted([(item.memory, item.score) for item in recalled], now)
        ordered = [Recalled(memory, score) for memory, score in weighed[:wanted]]
        if self._reranker is not None and len(ordered) > 1:
            reranked = self._reranked(message, ordered)
            if reranked is not None:
                return reranked[: self._limit], True
        return ordered[: self._limit], False

    def _reranked(self, message: str, ordered: list[Recalled]) -> list[Recalled] | None:
        """The reranker's order of the memories that qualified, or None to keep ours (it
        failed). It reorders; it never brings in a memory that did not qualify."""
        assert self._reranker is not None
        try:
            judged = self._reranker.rerank(
                message, [item.memory.text for item in ordered], top_n=len(ordered)
            )
        except RerankerUnavailable:
            return None
        except Exception as exc:  # a broken reranker degrades to our order, never the turn
            log.warning("reranker failed", extra={"error_type": type(exc).__name__})
            return None
        return [Recalled(ordered[r.index].memory, r.relevance) for r in judged]

    def recall_as_of(
        self, user_id: str, message: str, at: datetime, *, persona: str | None = None
    ) -> list[Recalled]:
        """What per-turn recall would have found among the beliefs held at `at`.

        The index holds today's beliefs only, so the past is scored in-process from the
        rows' own vectors (every version the store keeps; a deleted one is gone from every
        past). Nothing is reinforced: reading the past is not a use.
        """
        read = self._read(user_id, message, persona)
        query = read.query
        gate = self._relevance.personal_context(read.text, query)
        if not self._relevance.gate_open(gate):
            return []
        then: dict[str, Memory] = {}
        everything = MemoryQuery(status=None, persona=persona)
        for memory in self._stores.memories.iter_memories(user_id, everything):
            if not believed_at(memory, at) or memory.embedding is None:
                continue
            stood = as_it_stood(memory, at)
            if not stood.is_expired(at) and fading.in_use(stood, at):
                then[memory.memory_id] = stood
        candidates = [candidate_from_row(memory, query) for memory in then.values()]
        qualified = self._relevance.cut(
            {c.memory_id: self._relevance.match(c) for c in candidates}, gate
        )
        weighed = fading.weighted([(then[c.memory_id], c.score) for c in qualified], at)
        return [Recalled(memory, score) for memory, score in weighed[: self._limit]]

    def candidates(
        self, user_id: str, message: str, *, persona: str | None = None
    ) -> dict[str, float]:
        """Every candidate's relevance before the cut, gate included."""
        read = self._read(user_id, message, persona)
        return self._scored(user_id, read, persona)

    def explain(
        self, user_id: str, message: str, *, persona: str | None = None
    ) -> tuple[float, dict[str, float]]:
        """(the gate's score, each candidate's match) — the parts `recall` combines.

        The benchmark draws its curves from these; nothing on the read path uses it.
        """
        reading, candidates = self.parts(user_id, message, persona=persona)
        gate = self._relevance.gate_score(reading)
        return gate, {c.memory_id: self._relevance.match(c) for c in candidates}

    def parts(
        self, user_id: str, message: str, *, persona: str | None = None
    ) -> tuple[GateReading, list[Candidate]]:
        """(what the gate reads off the message as recall reads it, every candidate as
        relevance sees it), before any weighing: what bench/calibrate.py fits the weights
        and bars on."""
        read = self._read(user_id, message, persona)
        reading = self._relevance.reading(read.text, read.query)
        return reading, self._candidates(user_id, read.query, persona, read.visible)

    def _read(self, user_id: str, message: str, persona: str | None) -> _Reading:
        """The message with what the person's memories say of the people, pets and home
        it names ("my husband" → "(Chris)"), its vector, and the store's digests if the
        book needed them."""
        text, visible = self._books.read(user_id, message, persona)
        return _Reading(text, self._embedder.embed([text])[0], visible)

    def _scored(self, user_id: str, read: _Reading, persona: str | None) -> dict[str, float]:
        candidates = self._candidates(user_id, read.query, persona, read.visible)
        return self._relevance.score(read.text, read.query, candidates)

    def _candidates(
        self,
        user_id: str,
        query: Vectors,
        persona: str | None,
        digests: Sequence[MemoryDigest] | None = None,
    ) -> list[Candidate]:
        """The index's nearest memories that the store still shows, and the writes too
        fresh for a lagging index (`digests`: the store's, if this turn read them already)."""
        hits = self._index.search(user_id, query, k=CANDIDATES, persona=persona, visible=digests)
        candidates: dict[str, Candidate] = {}
        if self._index.refresh_lag_seconds <= 0 and all(h.importance is not None for h in hits):
            # The index read the store itself: its hits are exactly the visible rows.
            for hit in hits:
                candidates[hit.memory_id] = _candidate(
                    hit, hit.importance or 0, bool(hit.borrowed_uses)
                )
        else:
            if digests is None:
                digests = self._stores.recall.memory_digests(user_id, persona)
            visible = {d.memory_id: d for d in digests}
            hits = self._past_set_aside(user_id, query, persona, hits, visible)
            for hit in hits:
                digest = visible.get(hit.memory_id)
                if digest is None:  # the index still shows it; the store no longer does
                    continue
                candidates[hit.memory_id] = _candidate(hit, digest.importance, digest.borrowed_uses)
            for fresh in self._fresh(user_id, query, persona):
                if fresh.memory_id in visible:
                    candidates[fresh.memory_id] = fresh
        return list(candidates.values())

    def _past_set_aside(
        self,
        user_id: str,
        query: Vectors,
        persona: str | None,
        hits: list[VectorHit],
        visible: Mapping[str, object],
    ) -> list[VectorHit]:
        """The index's nearest, asked for again (twice as many each time, up to
        `_MOST_CANDIDATES`) while memories the store no longer shows crowd them: the index
        keeps a belief that faded or was set aside at the cap, and a user with a long past
        can have hundreds nearer to a question than the one in use it needs."""
        k = CANDIDATES
        while (
            len(hits) >= k
            and k < _MOST_CANDIDATES
            and sum(hit.memory_id in visible for hit in hits) < CANDIDATES
        ):
            k = min(k * 2, _MOST_CANDIDATES)
            hits = self._index.search(user_id, query, k=k, persona=persona)
        return hits

    def _fresh(self, user_id: str, query: Vectors, persona: str | None) -> list[Candidate]:
        """Memories written too recently for a lagging index, scored in-process."""
        lag = self._index.refresh_lag_seconds
        if lag <= 0:
            return []
        since = self._clock.now() - timedelta(seconds=lag) - _FRESH_MARGIN
        fresh = self._stores.memories.list_memories(
            user_id,
            MemoryQuery(status=Status.ACTIVE, persona=persona, created_after=since),
            limit=100,
        ).items
        return [candidate_from_row(memory, query) for memory in fresh if memory.embedding]


def _candidate(hit: VectorHit, importance: int, borrowed_uses: bool) -> Candidate:
    return Candidate(
        memory_id=hit.memory_id,
        said=hit.said if hit.said is not None else hit.score,
        useful=hit.useful,
        importance=importance,
        borrowed_uses=borrowed_uses,
        uses=hit.uses,
    )


def candidate_from_row(memory: Memory, query: Vectors) -> Candidate:
    """Score a memory's own vectors against the query (rows are stored normalised-ish)."""
    assert memory.embedding is not None
    candidate = candidate_from_vectors(
        memory.memory_id,
        memory.embedding,
        query,
        importance=memory.importance,
        borrowed_uses=memory.meta.get("uses_from") == USES_FROM_CATEGORY,
    )
    assert candidate is not None, "a row's vectors come from the embedder that reads them"
    return candidate


def candidate_from_vectors(
    memory_id: str, packed: bytes, query: Vectors, *, importance: int, borrowed_uses: bool
) -> Candidate | None:
    """Packed vectors against the query: what the memory says (row 0), its best use.
    None when they were written by another embedder (they wait for their re-index)."""
    rows = vectors.unpack_rows(packed)
    if rows.shape[1] != query.shape[-1]:
        return None
    norms = np.linalg.norm(rows, axis=1)
    cosines = (rows @ query.reshape(-1)) / np.where(norms > 0, norms, 1.0)
    uses = tuple(float(c) for c in np.sort(cosines[1:])[::-1])
    return Candidate(
        memory_id=memory_id,
        said=float(cosines[0]),
        useful=uses[0] if uses else None,
        importance=importance,
        borrowed_uses=borrowed_uses,
        uses=uses,
    )


def recall_safely(
    retriever: Retriever,
    user_id: str,
    message: str,
    *,
    persona: str | None,
    as_of: datetime | None = None,
) -> tuple[list[Recalled], bool]:
    """Recall, or nothing if any memory component fails: a turn never breaks on memory.

    Returns (memories, degraded).
    """
    try:
        if as_of is not None:
            return retriever.recall_as_of(user_id, message, as_of, persona=persona), False
        return retriever.recall(user_id, message, persona=persona), False
    except Exception as exc:
        log.warning(
            "recall failed; answering without memories", extra={"error_type": type(exc).__name__}
        )
        return [], True


def memory_ids(recalled: Sequence[Recalled]) -> list[str]:
    return [item.memory.memory_id for item in recalled]
