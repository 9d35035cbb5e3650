"""Which memories make it into a prompt, and in what order. Pure functions.

Two rankings, for two moments:
- per turn (seed 002): the few memories relevant to this message — top 5 above a
  threshold, and on most turns fewer qualify, which is right;
- per persona block (seed 000): recency · importance · relevance, min-max normalised,
  equal weights, then at most two per kind before the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

TURN_LIMIT = 5
RECENCY_DECAY_PER_DAY = 0.98
PER_KIND_FIRST_PASS = 2


@dataclass(frozen=True, slots=True)
class Scored:
    memory_id: str
    score: float


def select_for_turn(
    candidates: Sequence[Scored], *, threshold: float, limit: int = TURN_LIMIT
) -> list[Scored]:
    """The best `limit` candidates scoring at least `threshold`, best first (ties by id)."""
    qualified = [c for c in candidates if c.score >= threshold]
    qualified.sort(key=lambda c: (-c.score, c.memory_id))
    best: dict[str, Scored] = {}
    for candidate in qualified:
        best.setdefault(candidate.memory_id, candidate)
    return list(best.values())[:limit]


@dataclass(frozen=True, slots=True)
class BlockCandidate:
    """What the persona-block ranking needs to know about a memory."""

    memory_id: str
    kind: str
    importance: int
    created_at: datetime
    last_used_at: datetime | None


def recency(candidate: BlockCandidate, now: datetime) -> float:
    """0.98 per day since the memory was last loaded (or written, if never loaded)."""
    since = candidate.last_used_at or candidate.created_at
    days = max(0.0, (now - since).total_seconds() / 86400)
    return float(RECENCY_DECAY_PER_DAY**days)


def _min_max(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return [1.0 if high > 0 else 0.0 for _ in values]
    return [(value - low) / (high - low) for value in values]


def rank_block(
    candidates: Sequence[BlockCandidate],
    now: datetime,
    relevance: Mapping[str, float] | None = None,
) -> list[str]:
    """Memory ids in block order: generative-agents scoring plus a diversity pass.

    score = norm(recency) + norm(importance / 10) + norm(relevance); relevance is the
    cosine to the room's topic when there is one, else 0 for every memory.
    """
    if not candidates:
        return []
    relevance = relevance or {}
    recencies = _min_max([recency(c, now) for c in candidates])
    importances = _min_max([c.importance / 10 for c in candidates])
    relevances = _min_max([relevance.get(c.memory_id, 0.0) for c in candidates])
    scored = sorted(
        zip(
            candidates,
            (r + i + v for r, i, v in zip(recencies, importances, relevances, strict=True)),
            strict=True,
        ),
        key=lambda pair: (-pair[1], pair[0].memory_id),
    )
    first_pass: list[str] = []
    rest: list[str] = []
    per_kind: dict[str, int] = {}
    for candidate, _ in scored:
        taken = per_kind.get(candidate.kind, 0)
        if taken < PER_KIND_FIRST_PASS:
            per_kind[candidate.kind] = taken + 1
            first_pass.append(candidate.memory_id)
        else:
            rest.append(candidate.memory_id)
    return first_pass + rest
