"""Two-stage recall (`POST /v1/recall`, seed 003): index first, read second.

An explicit lookup, not a turn: the caller asked, so the personal-context gate does not
apply, and nothing is recorded as used. Stage one ranks every active memory of the user
and persona by its stored vectors alone (what it says and what it is useful for, scored
as the read path scores them; no text is read to rank), reads back only the rows it may
return, and picks the relevant ones plus three "unasked but related" ones from categories
they do not cover (`domain/labels.py`).
Stage two goes back, for the first `expand` hits only, for why each was stored and the
sentences it rests on, read from this user's own transcript.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import fading, rules
from chatmemory.domain.conversation import Role
from chatmemory.domain.ids import parse_message_id
from chatmemory.domain.labels import (
    RELEVANT,
    RELEVANT_MAX,
    UNASKED,
    Ranked,
    label_for,
    pick,
    reasoning_for,
    room_seq,
)
from chatmemory.domain.memory import Memory
from chatmemory.domain.rooms import FORGOTTEN_LINE
from chatmemory.ports.clock import Clock
from chatmemory.ports.embedder import Embedder, Vectors
from chatmemory.ports.recall_source import MemoryDigest
from chatmemory.ports.stores import Stores
from chatmemory.services.references import ReferenceBooks
from chatmemory.services.relevance import Candidate, RelevanceModel
from chatmemory.services.retrieval import candidate_from_vectors

#: what a recall query may be
QUERY_MAX = 2000
#: how much of one evidence message is returned
EVIDENCE_CHARS = 4000
#: how many evidence messages one hit is expanded with at most (its source first)
EVIDENCE_MAX = 10
#: "unasked but related" means at least this close to the query: the relevance floor less
#: this margin (bench/recall_two_stage.py --sweep, dev split: from 0.05 on the three are
#: nearly always found; at 0 a third of them are missing)
RELATED_MARGIN = 0.10
# Rows are read back best first, this many at a time.
_READ_BATCH = 50


@dataclass(frozen=True, slots=True)
class RecallRequest:
    user_id: str
    query: str
    k: int = RELEVANT
    expand: int = 0
    persona: str | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """One sentence a memory rests on, as it was said."""

    message_id: str
    role: Role
    text: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RecallHit:
    rank: int
    memory: Memory
    label: str
    score: float
    unasked: bool  # from a category the relevant hits do not cover
    reasoning: str | None = None  # only on the first `expand` hits
    evidence: tuple[Evidence, ...] | None = None  # likewise


@dataclass(frozen=True, slots=True)
class Recall:
    """The hits, relevant ones first; `hidden`: relevant matches not returned; `at`: the
    instant they were read (what their shelf lives are measured from)."""

    hits: tuple[RecallHit, ...]
    hidden: int
    memory_on: bool
    at: datetime


class RecallService:
    def __init__(
        self,
        stores: Stores,
        embedder: Embedder,
        clock: Clock,
        relevance: RelevanceModel,
        *,
        floor: float | None = None,
        related_floor: float | None = None,
        books: ReferenceBooks | None = None,
    ) -> None:
        self._stores = stores
        self._books = books if books is not None else ReferenceBooks(stores)
        self._embedder = embedder
        self._clock = clock
        self._relevance = relevance
        self._floor = relevance.threshold if floor is None else floor
        self._related = self._floor - RELATED_MARGIN if related_floor is None else related_floor

    @property
    def floor(self) -> float:
        return self._floor

    def recall(self, request: RecallRequest) -> Recall:
        """The user's in-use memories for this query: the best `k` at or above the relevance
        floor, ranked, and up to three unasked ones marked as such; the first `expand` hits
        with their reasoning and evidence. Nothing at all while memory is off for this user
        or the persona is muted."""
        rules.text("query", request.query, QUERY_MAX)
        rules.int_range("k", request.k, 1, RELEVANT_MAX)
        rules.int_range("expand", request.expand, 0, request.k)
        persona = rules.persona(request.persona or rules.DEFAULT_PERSONA)
        now = self._clock.now()
        settings = self._stores.user_state.get_settings(request.user_id)
        if not settings.allows(persona):
            return Recall((), 0, memory_on=False, at=now)
        digests = self._stores.recall.memory_digests(request.user_id, persona)
        read, _ = self._books.read(request.user_id, request.query, persona, digests)
        query = self._embedder.embed([read])[0]
        scores = self._scores(request.user_id, query, digests)
        rows = self._in_use(request.user_id, scores, request.k, now)
        picked = pick(
            [Ranked(m.memory_id, m.category, scores[m.memory_id]) for m in rows.values()],
            floor=self._floor,
            related_floor=self._related,
            k=request.k,
        )
        # As on the read path, retention weighs into the order of the relevant hits: of two
        # near matches, the fresher belief first. The unasked keep their categories' order.
        relevant = fading.weighted([(rows[i.memory_id], i.score) for i in picked.relevant], now)
        unasked = [
            (rows[i.memory_id], i.score * fading.ranking_weight(rows[i.memory_id], now))
            for i in picked.unasked
        ]
        hits = []
        for rank, (memory, score, is_unasked) in enumerate(
            [(m, score, False) for m, score in relevant]
            + [(m, score, True) for m, score in unasked],
            start=1,
        ):
            expanded = rank <= request.expand
            hits.append(
                RecallHit(
                    rank=rank,
                    memory=memory,
                    label=label_for(memory.text),
                    score=round(score, 4),
                    unasked=is_unasked,
                    reasoning=reasoning_for(memory) if expanded else None,
                    evidence=self._evidence(request.user_id, memory) if expanded else None,
                )
            )
        return Recall(tuple(hits), picked.hidden, memory_on=True, at=now)

    # ---- stage one: the index ---------------------------------------------------------

    def _scores(
        self, user_id: str, query: Vectors, digests: list[MemoryDigest]
    ) -> dict[str, float]:
        """Every active memory's relevance to the query, from its vectors alone (rows with
        none yet, or from another embedder, are left out), best first."""
        blobs = self._stores.recall.memory_embeddings(user_id, [d.memory_id for d in digests])
        scores: dict[str, float] = {}
        for digest in digests:
            blob = blobs.get(digest.memory_id)
            candidate = _candidate(digest, blob, query) if blob else None
            if candidate is not None:
                scores[digest.memory_id] = self._relevance.match(candidate)
        return dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))

    def _in_use(
        self, user_id: str, scores: dict[str, float], k: int, now: datetime
    ) -> dict[str, Memory]:
        """The rows the store still shows as active, unexpired and in use (not archived),
        read back best first: every one at or above the floor (so `hidden` is exact), then
        on until the unasked hits are found or nothing related is left."""
        lowest = min(self._floor, self._related)
        ranked = [mid for mid, score in scores.items() if score >= lowest]
        matched = sum(score >= self._floor for score in scores.values())
        rows: dict[str, Memory] = {}
        for start in range(0, len(ranked), _READ_BATCH):
            chunk = ranked[start : start + _READ_BATCH]
            for memory in self._stores.memories.get_memories(user_id, chunk):
                if not memory.is_expired(now) and fading.in_use(memory, now):
                    rows[memory.memory_id] = memory
            if start + _READ_BATCH >= matched and self._complete(rows, scores, k):
                break
        return rows

    def _complete(self, rows: dict[str, Memory], scores: dict[str, float], k: int) -> bool:
        picked = pick(
            [Ranked(m.memory_id, m.category, scores[m.memory_id]) for m in rows.values()],
            floor=self._floor,
            related_floor=self._related,
            k=k,
        )
        return len(picked.unasked) >= UNASKED

    # ---- stage two: the evidence ------------------------------------------------------

    def _evidence(self, user_id: str, memory: Memory) -> tuple[Evidence, ...]:
        """The messages the memory rests on, from this user's own transcript: its source
        first. A message that no longer exists, a room line someone else said, and a reply
        that used a memory deleted since are left out."""
        named = [m for m in dict.fromkeys((memory.source_message_id, *memory.evidence)) if m]
        found: list[Evidence] = []
        for message_id in named[:EVIDENCE_MAX]:
            said = self._chat_message(user_id, message_id) or self._room_line(
                user_id, memory, message_id
            )
            if said is not None:
                found.append(said)
        return tuple(found)

    def _chat_message(self, user_id: str, message_id: str) -> Evidence | None:
        parsed = parse_message_id(message_id)
        if parsed is None:
            return None
        conversation_id, seq = parsed
        messages = self._stores.conversations.list_messages(
            user_id, conversation_id, after_seq=seq - 1, upto_seq=seq
        )
        message = next((m for m in messages if m.seq == seq), None)
        if message is None:
            return None
        if message.role is Role.ASSISTANT and message.memories_used:
            used = list(message.memories_used)
            if set(used) - self._stores.memories.visible_ids(user_id, used):
                return None  # it quoted a memory the user has deleted since
        return Evidence(
            message_id, message.role, message.content[:EVIDENCE_CHARS], message.created_at
        )

    def _room_line(self, user_id: str, memory: Memory, message_id: str) -> Evidence | None:
        seq = room_seq(memory, message_id)
        if seq is None or memory.room_id is None:
            return None
        lines = self._stores.rooms.list_room_messages(
            memory.room_id, after_seq=seq - 1, upto_seq=seq
        )
        line = next((m for m in lines if m.seq == seq), None)
        # Only what the user themself said: others' words in a room are theirs to recall.
        if line is None or line.speaker != f"u:{user_id}" or line.text == FORGOTTEN_LINE:
            return None
        return Evidence(message_id, Role.USER, line.text[:EVIDENCE_CHARS], line.created_at)


def _candidate(digest: MemoryDigest, blob: bytes, query: Vectors) -> Candidate | None:
    return candidate_from_vectors(
        digest.memory_id,
        blob,
        query,
        importance=digest.importance,
        borrowed_uses=digest.borrowed_uses,
    )
