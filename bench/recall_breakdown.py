"""Where per-turn recall misses, and how much of what it sends was needed.

Read by bench/retrieval.py and bench/people.py. Every number here comes from the same
per-question parts as Recall@5 (the gate's score and each candidate's match, from
`Retriever.trace`), cut the way `Retriever.recall` cuts: nothing when the gate is closed or
when the best candidate is below the threshold, else the top 5 at or above the companion
bar beside the best. So the breakdown adds up to the Recall@5 it sits next to.

Each needs-memory question lands in exactly one outcome:
- gate closed: the personal-context gate said no, so nothing was recalled at all;
- nothing above the threshold: the gate was open, but no candidate scored high enough;
- only unrelated memories: something was sent, none of it needed;
- partial hit: some, not all, of the needed memories were sent (two-memory questions);
- full hit: every needed memory was sent.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatmemory.domain.ranking import TURN_LIMIT, Scored, companion_bar, turn_bar, turn_cut

GATE_CLOSED = "gate closed"
NOTHING_ABOVE = "nothing above the threshold"
ONLY_UNRELATED = "only unrelated memories"
PARTIAL = "partial hit"
FULL = "full hit"
OUTCOMES = (GATE_CLOSED, NOTHING_ABOVE, ONLY_UNRELATED, PARTIAL, FULL)

# Where a needed memory that was not sent stood among the candidates.
STOOD_GATE = "gate closed"
STOOD_NOT_CANDIDATE = "gate open, not among the candidates"
STOOD_BELOW = "gate open, a candidate below its bar"
STOOD_OUTRANKED = "gate open, above the threshold but outranked (6th or lower)"
STOOD = (STOOD_GATE, STOOD_NOT_CANDIDATE, STOOD_BELOW, STOOD_OUTRANKED)


@dataclass(frozen=True, slots=True)
class Bars:
    """The cut's settings: the gate's floor (None: no gate), the bar the best candidate
    must reach (at a gate score of `gate_pivot`; `gate_weight` lower per unit of gate score
    above it), and the one its companions must reach: `companion`, and `companion_ratio`
    of the best match."""

    threshold: float
    gate_floor: float | None
    companion: float | None = None
    gate_weight: float = 0.0
    gate_pivot: float = 0.0
    companion_ratio: float = 0.0

    @classmethod
    def of(cls, params: Any) -> Bars:
        """The bars of a `RelevanceParams`."""
        return cls(
            params.threshold,
            params.gate_floor,
            params.companion_threshold,
            params.gate_weight,
            params.gate_pivot,
            params.companion_ratio,
        )

    def best_bar(self, gate: float) -> float:
        """The bar a turn's best candidate must reach at this gate score."""
        return turn_bar(
            gate, threshold=self.threshold, weight=self.gate_weight, pivot=self.gate_pivot
        )

    def companion_bar(self, best: float) -> float:
        """The bar the others must reach beside a best match of `best`."""
        floor = self.threshold if self.companion is None else self.companion
        return companion_bar(best, floor=floor, ratio=self.companion_ratio)

    def cut(
        self, matches: Mapping[str, float], *, threshold: float | None = None
    ) -> tuple[str, ...]:
        """`cut` at these bars (the best's bar `threshold`, by default the plain one)."""
        return cut(
            matches,
            threshold=self.threshold if threshold is None else threshold,
            companion=self.companion,
            ratio=self.companion_ratio,
        )

    def moved(self, *, threshold: float | None = None, gate_floor: float | None = None) -> Bars:
        """These bars with the threshold moved (the companion bar keeps its distance) or
        the gate's floor moved."""
        if threshold is None:
            return dataclasses.replace(self, gate_floor=gate_floor)
        companion = None if self.companion is None else self.companion - self.threshold + threshold
        return dataclasses.replace(self, threshold=threshold, companion=companion)


@dataclass(frozen=True, slots=True)
class Turn:
    """One question: what it needed, whether the gate let it through, and what was sent."""

    query_id: str
    needed: tuple[str, ...]
    gate_open: bool
    sent: tuple[str, ...]

    @property
    def hits(self) -> int:
        return sum(memory_id in self.sent for memory_id in self.needed)

    @property
    def outcome(self) -> str:
        if not self.gate_open:
            return GATE_CLOSED
        if not self.sent:
            return NOTHING_ABOVE
        if self.hits == 0:
            return ONLY_UNRELATED
        return FULL if self.hits == len(self.needed) else PARTIAL


def cut(
    matches: Mapping[str, float],
    *,
    threshold: float,
    companion: float | None = None,
    ratio: float = 0.0,
    limit: int = TURN_LIMIT,
) -> tuple[str, ...]:
    """The turn's cut: nothing unless the best candidate reaches the threshold (the turn's
    bar); then it and the next best, up to `limit`, at or above the companion bar (the
    threshold when there is none) and at or above `ratio` of the best one's match."""
    qualified = turn_cut(
        [Scored(memory_id, score) for memory_id, score in matches.items()],
        best_bar=threshold,
        companion_floor=threshold if companion is None else companion,
        ratio=ratio,
    )
    return tuple(scored.memory_id for scored in qualified[:limit])


def turn(
    query_id: str, needed: Sequence[str], gate: float, matches: Mapping[str, float], bars: Bars
) -> Turn:
    gate_open = bars.gate_floor is None or gate >= bars.gate_floor
    sent = bars.cut(matches, threshold=bars.best_bar(gate)) if gate_open else ()
    return Turn(query_id, tuple(needed), gate_open, sent)


def breakdown(needs: Sequence[Turn], none: Sequence[Turn]) -> dict[str, Any]:
    """The outcome shares, recall by number of needed memories, precision and volume."""
    counts = Counter(t.outcome for t in needs)
    report: dict[str, Any] = {
        "needs_memory_questions": len(needs),
        "no_memory_questions": len(none),
        "outcomes": {name: _share(counts[name], len(needs)) for name in OUTCOMES},
        "outcome_counts": {name: counts[name] for name in OUTCOMES},
        "recall_at_5": _mean(t.hits / len(t.needed) for t in needs),
        "any_hit": _mean(float(t.hits > 0) for t in needs),
        "injection_rate": _mean(float(bool(t.sent)) for t in none),
        "by_needed": {},
    }
    for size in sorted({len(t.needed) for t in needs}):
        group = [t for t in needs if len(t.needed) == size]
        report["by_needed"][str(size)] = {
            "questions": len(group),
            "recall_at_5": _mean(t.hits / size for t in group),
            "any_hit": _mean(float(t.hits > 0) for t in group),
            "full_hit": _mean(float(t.hits == size) for t in group),
        }
    sending = [t for t in needs if t.sent]
    sent = sum(len(t.sent) for t in needs)
    report["precision"] = {
        # Of the memories sent on a needs-memory question, the share it needed: per question
        # (over the questions that got something), and pooled over every memory sent.
        "mean_per_question": _mean(t.hits / len(t.sent) for t in sending),
        "questions_with_memories": len(sending),
        "pooled": _share(sum(t.hits for t in needs), sent),
        "memories_sent": sent,
    }
    report["sent_per_question"] = {
        "needs_memory": _mean(float(len(t.sent)) for t in needs),
        "no_memory": _mean(float(len(t.sent)) for t in none),
    }
    return report


def where_missed(
    needs: Sequence[Turn],
    matches: Mapping[str, Mapping[str, float]],
    bars: Bars,
) -> dict[str, Any]:
    """Each needed memory that was not sent, by where it stood; and, for those behind a
    closed gate, how many the cut would have sent had the gate been open."""
    stood: Counter[str] = Counter()
    behind_gate = would_have = 0
    for t in needs:
        scores = matches[t.query_id]
        for memory_id in t.needed:
            if memory_id in t.sent:
                continue
            if not t.gate_open:
                stood[STOOD_GATE] += 1
                behind_gate += 1
                would_have += memory_id in bars.cut(scores)
            elif memory_id not in scores:
                stood[STOOD_NOT_CANDIDATE] += 1
            elif not t.sent or scores[memory_id] < bars.companion_bar(max(scores.values())):
                stood[STOOD_BELOW] += 1
            else:
                stood[STOOD_OUTRANKED] += 1
    missed = sum(stood.values())
    return {
        "missed_memories": missed,
        "needed_memories": sum(len(t.needed) for t in needs),
        "stood": {name: stood[name] for name in STOOD},
        "behind_gate_sent_if_open": would_have,
        "behind_gate": behind_gate,
    }


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.fmean(values) if values else float("nan")


def _share(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")


def print_breakdown(per_split: Mapping[str, Mapping[str, Any]]) -> None:
    """The breakdown tables, one column per split, in the benchmark's markdown style."""
    splits = list(per_split)
    head = "| " + " | ".join(splits) + " |"
    rule = "|---" * (len(splits) + 1) + "|"
    print("\nWhere the needs-memory questions land (share of questions; each lands in one row):\n")
    print(f"| outcome {head}\n{rule}")
    for name in OUTCOMES:
        cells = [
            f"{row['outcomes'][name]:.3f} ({row['outcome_counts'][name]})"
            for row in per_split.values()
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(
        "| **any hit** | "
        + " | ".join(f"{row['any_hit']:.3f}" for row in per_split.values())
        + " |"
    )
    print(
        "| **Recall@5** | "
        + " | ".join(f"{row['recall_at_5']:.3f}" for row in per_split.values())
        + " |"
    )

    print("\nBy how many memories the question needs:\n")
    print(f"| questions {head}\n{rule}")
    sizes = sorted({size for row in per_split.values() for size in row["by_needed"]})
    metrics = {"recall_at_5": "Recall@5", "any_hit": "any hit", "full_hit": "full hit"}
    for size in sizes:
        label = "one memory" if size == "1" else f"{size} memories"
        for metric, metric_name in metrics.items():
            cells = []
            for row in per_split.values():
                group = row["by_needed"].get(size)
                cells.append(f"{group[metric]:.3f} (n={group['questions']})" if group else "-")
            print(f"| {label}: {metric_name} | " + " | ".join(cells) + " |")

    print("\nPrecision and volume (what a prompt-flooding change would move):\n")
    print(f"| measure {head}\n{rule}")
    rows: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = (
        (
            "needed / sent, mean per needs-memory question that got any",
            lambda r: (
                f"{r['precision']['mean_per_question']:.3f} "
                f"(n={r['precision']['questions_with_memories']})"
            ),
        ),
        (
            "needed / sent, pooled over every memory sent",
            lambda r: f"{r['precision']['pooled']:.3f} ({r['precision']['memories_sent']} sent)",
        ),
        (
            "memories sent per needs-memory question",
            lambda r: f"{r['sent_per_question']['needs_memory']:.2f}",
        ),
        (
            "memories sent per no-memory question",
            lambda r: f"{r['sent_per_question']['no_memory']:.2f}",
        ),
    )
    for name, cell in rows:
        print(f"| {name} | " + " | ".join(cell(row) for row in per_split.values()) + " |")

    print("\nWhere each needed memory that was not sent stood:\n")
    print(f"| missed memory {head}\n{rule}")
    for name in STOOD:
        cells = [
            f"{row['missed']['stood'][name]} / {row['missed']['missed_memories']}"
            for row in per_split.values()
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    cells = [
        f"{row['missed']['behind_gate_sent_if_open']} / {row['missed']['behind_gate']}"
        for row in per_split.values()
    ]
    print("| behind the closed gate, sent had the gate been open | " + " | ".join(cells) + " |")
