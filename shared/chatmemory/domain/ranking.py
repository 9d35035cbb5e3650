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


def turn_bar(gate: float, *, threshold: float, weight: float, pivot: float) -> float:
    """The bar a turn's best candidate must reach at this gate score: `threshold` at
    `pivot`, lower by `weight` for each unit of gate score above it (higher below)."""
    return threshold - weight * (gate - pivot)


def companion_bar(best: float, *, floor: float, ratio: float) -> float:
    """The bar the other candidates must reach beside a best match of `best`."""
    return max(floor, ratio * best)


def turn_cut(
    candidates: Sequence[Scored], *, best_bar: float, companion_floor: float, ratio: float
) -> list[Scored]:
    """Best first: nothing unless the best candidate reaches `best_bar`; then every other
    one at or above its `companion_bar`. Unlimited: rows may vanish before the prompt is
    built, and the next ones take their places."""
    ranked = select_for_turn(
        candidates, threshold=min(best_bar, companion_floor), limit=len(candidates)
    )
    if not ranked or ranked[0].score < best_bar:
        return []
    bar = companion_bar(ranked[0].score, floor=companion_floor, ratio=ratio)
    return [ranked[0], *(c for c in ranked[1:] if c.score >= bar)]
