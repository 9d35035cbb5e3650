"""Which memories make it into a turn's prompt, and in what order. Pure functions.

Per turn (seed 002): the few memories relevant to this message — top 5 above a
threshold, and on most turns fewer qualify, which is right. The persona block's ranking
(seed 000: recency · importance · relevance, then diversity) is `persona_block.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TURN_LIMIT = 5


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
