"""How relevant each candidate memory is to this message, on one calibrated scale.

Two stages, both calibrated per embedder on the dev split of bench/data (the test split
is only reported):
1. the gate: does this message need personal context at all? (domain/personal_context)
   If not, nothing is recalled and the index is not even searched.
2. the match: for each candidate, what it says and what it is useful for —
   (1 - β)·cos(message, words) + β·cos(message, best use) + w·importance/10,
   with β larger for uses written for this memory than for uses borrowed from its
   category, which say less about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chatmemory.domain.personal_context import (
    IMPERSONAL_REQUESTS,
    PERSONAL_REQUESTS,
    personal_context_score,
)
from chatmemory.ports.embedder import Embedder, Vectors

# Scores of a message that fails the gate drop by this much: below any threshold.
GATE_PENALTY = 10.0
USES_FROM_CATEGORY = "category"


@dataclass(frozen=True, slots=True)
class Candidate:
    """What relevance needs to know about one memory, for one message."""

    memory_id: str
    said: float  # cosine to what the memory says
    useful: float | None  # best cosine to what it is useful for (None: no uses indexed)
    importance: int
    borrowed_uses: bool  # its uses came from its category, not from the memory itself


@dataclass(frozen=True, slots=True)
class RelevanceParams:
    """One embedder's calibration. `gate_floor=None` switches the gate off."""

    threshold: float
    gate_floor: float | None
    self_reference_bonus: float = 0.02
    own_uses_weight: float = 0.5
    category_uses_weight: float = 0.1
    importance_weight: float = 0.2
    calibrated: bool = True


#: Measured with bench/retrieval.py on the dev split (MiniLM). Titan has not been
#: measured here (no AWS account): it starts from MiniLM's values and is marked so.
CALIBRATION: dict[str, RelevanceParams] = {
    "minilm-l6-v2": RelevanceParams(threshold=0.30, gate_floor=0.04),
    "titan-v2": RelevanceParams(threshold=0.30, gate_floor=0.04, calibrated=False),
    # Hashing vectors know spelling, not meaning: no gate, plain similarity (tests only).
    "hashing": RelevanceParams(
        threshold=0.35,
        gate_floor=None,
        own_uses_weight=0.0,
        category_uses_weight=0.0,
        importance_weight=0.0,
    ),
}


def params_for(embedder_name: str, threshold: float | None = None) -> RelevanceParams:
    chosen = next(
        (params for family, params in CALIBRATION.items() if embedder_name.startswith(family)),
        RelevanceParams(threshold=0.30, gate_floor=0.04, calibrated=False),
    )
    if threshold is None:
        return chosen
    return RelevanceParams(
        threshold=threshold,
        gate_floor=chosen.gate_floor,
        self_reference_bonus=chosen.self_reference_bonus,
        own_uses_weight=chosen.own_uses_weight,
        category_uses_weight=chosen.category_uses_weight,
        importance_weight=chosen.importance_weight,
        calibrated=chosen.calibrated,
    )


class RelevanceModel:
    """Scores candidates for one message; a memory enters the prompt at `threshold` or above."""

    def __init__(self, embedder: Embedder, params: RelevanceParams) -> None:
        self._embedder = embedder
        self.params = params
        self._examples: tuple[Vectors, Vectors] | None = None

    @property
    def threshold(self) -> float:
        return self.params.threshold

    def warm_up(self) -> None:
        """Embed the gate's examples now (a server does this before it reports ready)."""
        self._gate_examples()

    def _gate_examples(self) -> tuple[Vectors, Vectors]:
        if self._examples is None:
            self._examples = (
                self._embedder.embed(list(PERSONAL_REQUESTS)),
                self._embedder.embed(list(IMPERSONAL_REQUESTS)),
            )
        return self._examples

    def personal_context(self, message: str, query: Vectors) -> float:
        """The gate's score for this message (higher: more personal)."""
        personal, impersonal = self._gate_examples()
        return personal_context_score(
            (personal @ query).tolist(),
            (impersonal @ query).tolist(),
            message,
            self_reference_bonus=self.params.self_reference_bonus,
        )

    def needs_memory(self, message: str, query: Vectors) -> bool:
        floor = self.params.gate_floor
        return floor is None or self.personal_context(message, query) >= floor

    def score(
        self, message: str, query: Vectors, candidates: Sequence[Candidate]
    ) -> dict[str, float]:
        """memory id → relevance, comparable with `threshold` (gate included)."""
        penalty = 0.0 if self.needs_memory(message, query) else GATE_PENALTY
        return {c.memory_id: self.match(c) - penalty for c in candidates}

    def match(self, candidate: Candidate) -> float:
        params = self.params
        prior = params.importance_weight * candidate.importance / 10
        if candidate.useful is None:
            return candidate.said + prior
        beta = params.category_uses_weight if candidate.borrowed_uses else params.own_uses_weight
        return (1 - beta) * candidate.said + beta * candidate.useful + prior
