"""How relevant each candidate memory is to this message, on one calibrated scale.

Two stages, both calibrated per embedder on the dev split of bench/data (the test split
is only reported):
1. the gate: does this message need personal context at all? (domain/personal_context)
   If not, nothing is recalled and the index is not even searched.
2. the match: for each candidate, what it says and what it is useful for —
   (1 - β)·cos(message, words) + β·fit(uses) + w·importance/10, where fit blends the best
   use's cosine with the mean of the best two and of them all (a memory several of whose
   uses fit the message is a safer bet than one with a single lucky phrase), and β is
   larger for uses written for this memory than for uses borrowed from its category,
   which say less about it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chatmemory.domain.personal_context import (
    IMPERSONAL_REQUESTS,
    OWN_LIFE_BONUS,
    PERSONAL_REQUESTS,
    GateReading,
    read_message,
)
from chatmemory.domain.ranking import Scored, turn_bar, turn_cut
from chatmemory.domain.uses_origin import FROM_CATEGORY
from chatmemory.ports.embedder import Embedder, Vectors

# Scores of a message that fails the gate drop by this much: below any threshold.
GATE_PENALTY = 10.0
#: the meta marker of uses borrowed from the category (domain/uses_origin.py)
USES_FROM_CATEGORY = FROM_CATEGORY


@dataclass(frozen=True, slots=True)
class Candidate:
    """What relevance needs to know about one memory, for one message."""

    memory_id: str
    said: float  # cosine to what the memory says
    useful: float | None  # best cosine to what it is useful for (None: no uses indexed)
    importance: int
    borrowed_uses: bool  # its uses came from its category, not from the memory itself
    uses: tuple[float, ...] = ()  # the cosine to each use known, best first


@dataclass(frozen=True, slots=True)
class RelevanceParams:
    """One embedder's calibration. `gate_floor=None` switches the gate off.

    A turn gets memories only if its gate score reaches `gate_floor` (below it the index is
    not searched) and its best candidate reaches the turn's bar: `threshold` at a gate score
    of `gate_pivot`, lower by `gate_weight` for each unit the gate score stands above it and
    higher below — a plainly personal message needs a weaker match than a borderline one.
    The others join it from `companion_threshold` on (None: `threshold`) if they also reach
    `companion_ratio` of the best one's match: how near a memory comes to the best tells
    whether the question needs it better than its match alone does (a 0.45 beside a 0.50
    is a second fact; beside a 0.75 it is a weaker guess). Whether a turn gets any memory
    decides injection; the companions decide whether a question that needs two facts gets
    both.
    """

    threshold: float
    gate_floor: float | None
    companion_threshold: float | None = None
    companion_ratio: float = 0.0
    self_reference_bonus: float = 0.02
    #: what naming one's own life ("my commute") adds to the gate's score, on top of the
    #: self-reference; and what any other "my"/"our" adds ("my bibliography file")
    own_life_bonus: float = OWN_LIFE_BONUS
    own_things_bonus: float = 0.0
    gate_weight: float = 0.0
    gate_pivot: float = 0.0
    own_uses_weight: float = 0.5
    category_uses_weight: float = 0.1
    importance_weight: float = 0.2
    #: how the uses' cosines make one fit: the best one, the mean of the best two, the mean
    #: of them all (the rest of the weight goes to the best one)
    top_two_weight: float = 0.0
    all_uses_weight: float = 0.0
    calibrated: bool = True

    def best_bar(self, gate: float) -> float:
        """The bar a turn's best candidate must reach, at this gate score."""
        return turn_bar(
            gate, threshold=self.threshold, weight=self.gate_weight, pivot=self.gate_pivot
        )


#: MiniLM: chosen by bench/calibrate.py on the dev splits of both sets in bench/data: the
#: weights of own uses on the single user with extractor-written uses, the weight of
#: borrowed uses on the thirty users whose memories were typed through the API, the turn's
#: decision (the gate's bonuses, how far its score moves the best match's bar, where it
#: is centred) from a logistic model fitted on both sets' dev questions, its probability
#: bar (0.55) the loosest whose dev injection, cross-validated over five folds, stays
#: within 0.05 one standard error up; the companions' floor and share of the best match,
#: of the pairs within one standard error of the best recall, the most precise.
#: Titan has not been measured here (no AWS account): it starts from MiniLM's values and
#: is marked so; bench/calibrate.py --embedder titan calibrates it where an account exists.
_MINILM = RelevanceParams(
    threshold=0.32,
    gate_floor=0.02,
    companion_threshold=0.3,
    companion_ratio=0.7,
    self_reference_bonus=0.1197,
    own_life_bonus=0.1943,
    own_things_bonus=0.0767,
    gate_weight=7.2445,
    gate_pivot=0.1415,
    own_uses_weight=0.9,
    category_uses_weight=0.7,
    importance_weight=0.2,
    top_two_weight=0.5,
    all_uses_weight=0.0,
)
CALIBRATION: dict[str, RelevanceParams] = {
    "minilm-l6-v2": _MINILM,
    "titan-v2": dataclasses.replace(_MINILM, calibrated=False),
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
    """The embedder's calibration; an explicit `threshold` moves both bars together."""
    chosen = next(
        (params for family, params in CALIBRATION.items() if embedder_name.startswith(family)),
        RelevanceParams(threshold=0.30, gate_floor=0.04, calibrated=False),
    )
    if threshold is None:
        return chosen
    companion = chosen.companion_threshold
    return dataclasses.replace(
        chosen,
        threshold=threshold,
        companion_threshold=None if companion is None else companion - chosen.threshold + threshold,
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

    @property
    def companion_threshold(self) -> float:
        bar = self.params.companion_threshold
        return self.params.threshold if bar is None else bar

    def best_bar(self, gate: float) -> float:
        """The bar this turn's best candidate must reach (`RelevanceParams.best_bar`)."""
        return self.params.best_bar(gate)

    def cut(self, scored: Mapping[str, float], gate: float) -> list[Scored]:
        """What qualifies for this turn, best first (`domain.ranking.turn_cut`)."""
        return turn_cut(
            [Scored(memory_id, score) for memory_id, score in scored.items()],
            best_bar=self.best_bar(gate),
            companion_floor=self.companion_threshold,
            ratio=self.params.companion_ratio,
        )

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

    def reading(self, message: str, query: Vectors) -> GateReading:
        """What the gate reads off this message, before the calibration weighs it."""
        personal, impersonal = self._gate_examples()
        return read_message((personal @ query).tolist(), (impersonal @ query).tolist(), message)

    def personal_context(self, message: str, query: Vectors) -> float:
        """The gate's score for this message (higher: more personal)."""
        return self.gate_score(self.reading(message, query))

    def gate_score(self, reading: GateReading) -> float:
        params = self.params
        return reading.score(
            self_reference_bonus=params.self_reference_bonus,
            own_life_bonus=params.own_life_bonus,
            own_things_bonus=params.own_things_bonus,
        )

    def needs_memory(self, message: str, query: Vectors) -> bool:
        return self.gate_open(self.personal_context(message, query))

    def gate_open(self, gate: float) -> bool:
        floor = self.params.gate_floor
        return floor is None or gate >= floor

    def score(
        self, message: str, query: Vectors, candidates: Sequence[Candidate]
    ) -> dict[str, float]:
        """memory id → relevance, comparable with the bars (gate included)."""
        penalty = 0.0 if self.needs_memory(message, query) else GATE_PENALTY
        return {c.memory_id: self.match(c) - penalty for c in candidates}

    def match(self, candidate: Candidate) -> float:
        params = self.params
        prior = params.importance_weight * candidate.importance / 10
        fit = self.uses_fit(candidate)
        if fit is None:
            return candidate.said + prior
        beta = params.category_uses_weight if candidate.borrowed_uses else params.own_uses_weight
        return (1 - beta) * candidate.said + beta * fit + prior

    def uses_fit(self, candidate: Candidate) -> float | None:
        """How well the memory's uses fit the message, on the cosine scale."""
        ranked = candidate.uses
        if not ranked:
            return candidate.useful
        params = self.params
        top_two = sum(ranked[:2]) / len(ranked[:2])
        everything = sum(ranked) / len(ranked)
        best_weight = 1.0 - params.top_two_weight - params.all_uses_weight
        return (
            best_weight * ranked[0]
            + params.top_two_weight * top_two
            + params.all_uses_weight * everything
        )
