"""How relevant each candidate memory is to this message, on one calibrated scale.

Thresholds are per embedder: cosines from different models live on different scales
(MiniLM scores "Is vegetarian." against "suggest something for dinner?" at 0.23).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chatmemory.domain.memory import Memory
from chatmemory.ports import Vectors

#: default recall thresholds per embedder family, measured by bench/retrieval.py
DEFAULT_THRESHOLDS: Mapping[str, float] = {
    "minilm-l6-v2": 0.40,
    "titan-v2": 0.40,
    "hashing": 0.35,
}


def default_threshold(embedder_name: str) -> float:
    for family, threshold in DEFAULT_THRESHOLDS.items():
        if embedder_name.startswith(family):
            return threshold
    return 0.40


class RelevanceModel:
    """Scores candidates for one message; a memory enters the prompt at `threshold` or above."""

    def __init__(self, embedder_name: str, threshold: float | None = None) -> None:
        self.embedder_name = embedder_name
        self.threshold = default_threshold(embedder_name) if threshold is None else threshold

    def score(
        self, message: str, query: Vectors, candidates: Sequence[tuple[Memory, float]]
    ) -> dict[str, float]:
        """memory id → relevance, comparable with `threshold`."""
        return {memory.memory_id: similarity for memory, similarity in candidates}
