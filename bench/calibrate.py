"""Calibrate recall for an embedder: the weights of the match, the gate's floor and the bars.

Run:  .venv/bin/python bench/calibrate.py                      (MiniLM, ~30 s)
      .venv/bin/python bench/calibrate.py --embedder titan --region us-west-2 --dimensions 512
                  (where an AWS account with Bedrock exists; once per size the stack may use,
                   256, 512 or 1024 — the stack's VectorDimensions parameter)

The method, on the dev splits only (the test splits are printed once, at the end, and
never looked at to choose):
1. seed both labelled sets through the real write path with the chosen embedder: the one
   user with extractor-written uses (bench/data/retrieval_*) and the thirty users whose
   memories were typed through the API (bench/data/people_*), and read every dev
   question's parts once (`Retriever.parts`: the gate's score and each candidate as
   relevance sees it);
2. own uses: the weight of a memory's own uses against its words, how the uses' cosines
   make one fit (best, best two, all) and the importance prior — Recall@5 on the single
   user's dev split, at the current bars;
3. borrowed uses: their weight — Recall@5 on the people set's dev split;
4. the turn's decision: a logistic model over what the gate reads off the message (its
   resemblance to the personal examples, whether it names the asker's own life, says "my"
   of anything else, speaks of itself) and the best candidate's match, fitted on every dev
   question of both sets (needs a memory or not). Its weights become the gate's bonuses
   and how far a higher gate score lowers the best match's bar (`gate_weight`); its
   probability bar is the loosest of BAR_CHOICES whose dev injection on each set stays
   within the cap even one standard error up (injection is what the cap protects, and a
   dev split holds only ~90 no-memory questions), each question judged by a model fitted
   on the other four fifths of the dev questions (judged by the model it helped fit, the
   loosest bar's injection reads low). The threshold stays where it was (the
   bar at `gate_pivot`, and /v1/recall's floor); the gate's floor is where no match could
   open the turn, so it only skips searches that could not send anything;
5. the companions' bars, over a grid of floors (COMPANIONS) and shares of the best match
   (RATIOS), by the one-standard-error rule: of the pairs whose mean dev Recall@5 over the
   two sets is within one standard error of the best, the one whose sent memories were
   most often needed (mean over the two sets). On the dev splits, how near a companion
   comes to the best match tells needed from unneeded ones better than its match alone
   (AUC 0.770 against 0.672 on the one user, 0.800 against 0.760 on the people set).
Ties in the weights keep the current value. It prints the `RelevanceParams` to put into
`services/relevance.py` and what they give on each split.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

import people  # noqa: E402 - bench/ is on sys.path
from recall_breakdown import Bars  # noqa: E402
from retrieval import Labelled, prepare, seed  # noqa: E402

from chatmemory.adapters.clock import SystemClock  # noqa: E402
from chatmemory.config import Container, Settings, use_container  # noqa: E402
from chatmemory.domain.personal_context import GateReading  # noqa: E402
from chatmemory.services.relevance import Candidate, RelevanceModel, RelevanceParams  # noqa: E402

INJECTION_CAP = 0.05
OWN_USES = (0.5, 0.6, 0.7, 0.8, 0.9)
TOP_TWO = (0.0, 0.25, 0.5)
ALL_USES = (0.0, 0.15, 0.3)
IMPORTANCE = (0.1, 0.2, 0.3)
BORROWED = (0.1, 0.3, 0.5, 0.7, 0.9)
#: folds of the dev questions over which a probability bar's injection is judged
FOLDS = 5
BAR_CHOICES = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
COMPANIONS = (0.22, 0.24, 0.26, 0.28, 0.30, 0.32)
RATIOS = (0.0, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)
#: no match exceeds this: words and uses are cosines (≤ 1), importance adds ≤ 0.2·10/10
MATCH_CEILING = 1.0 + 0.2


@dataclass(frozen=True, slots=True)
class Question:
    """One labelled question's parts, read once."""

    set: str
    split: str
    needs: tuple[str, ...]  # empty: needs no memory
    reading: GateReading
    candidates: tuple[Candidate, ...]


def collect(container: Container) -> list[Question]:
    """Seed both sets and read every question's parts."""
    questions: list[Question] = []
    lena = Labelled.load(with_hints=True)
    ids = seed(container, prepare(container, lena), users=1)
    for query in lena.queries:
        needs = tuple(ids[label] for label in query["needs"])
        questions.append(_question(container, "one user", "bench-user-0", query, needs))
    data = people.load()
    people_ids = people.seed(container, data["memories"])
    for query in data["queries"]:
        needs = tuple(people_ids[label] for label in query["needs"])
        user = people.user_id(query["user"])
        questions.append(_question(container, "people", user, query, needs))
    return questions


def _question(
    container: Container, name: str, user: str, query: dict[str, Any], needs: tuple[str, ...]
) -> Question:
    # the gate's reading of the message as recall reads it (with the person's references)
    reading, candidates = container.retriever.parts(user, query["text"])
    return Question(name, query["split"], needs, reading, tuple(candidates))


@dataclass(frozen=True, slots=True)
class Quality:
    recall: float  # Recall@5 on the questions that need a memory
    injection: float  # the share of no-memory questions that got one
    needed_share: float  # of the memories sent to the questions that need some, the needed


def quality(model: RelevanceModel, questions: Iterable[Question], bars: Bars) -> Quality:
    """How these questions fare under the model's match and the bars."""
    recalls, injected, needed, sent_count = [], [], 0, 0
    for question in questions:
        sent: tuple[str, ...] = ()
        gate = model.gate_score(question.reading)
        if bars.gate_floor is None or gate >= bars.gate_floor:
            matches = {c.memory_id: model.match(c) for c in question.candidates}
            sent = bars.cut(matches, threshold=bars.best_bar(gate))
        if question.needs:
            recalls.append(sum(m in sent for m in question.needs) / len(question.needs))
            needed += sum(m in question.needs for m in sent)
            sent_count += len(sent)
        else:
            injected.append(bool(sent))
    return Quality(
        statistics.fmean(recalls), statistics.fmean(injected), needed / max(sent_count, 1)
    )


def best(
    current: RelevanceParams,
    options: Iterable[RelevanceParams],
    score: Callable[[RelevanceParams], float | None],
) -> RelevanceParams:
    """The option scoring highest (None: not allowed); ties keep `current`."""
    chosen, top = current, score(current)
    for option in options:
        value = score(option)
        if value is not None and (top is None or value > top + 1e-9):
            chosen, top = option, value
    return chosen


def most_precise_within_one_error(
    options: Sequence[RelevanceParams],
    score: Callable[[RelevanceParams], float | None],
    precision: Callable[[RelevanceParams], float],
    *,
    questions: int,
) -> RelevanceParams:
    """Of the options whose score is within one standard error of the best one's (the
    score read as a proportion over `questions`), the most precise; ties the strictest."""
    scored = [(option, value) for option in options if (value := score(option)) is not None]
    if not scored:
        raise SystemExit("no setting keeps injection within the cap")
    top = max(value for _, value in scored)
    error = (top * (1 - top) / questions) ** 0.5
    near = [option for option, value in scored if value >= top - error]
    return max(
        near,
        key=lambda p: (
            round(precision(p), 9),
            p.companion_ratio,
            p.companion_threshold or p.threshold,
        ),
    )


def calibrate(embedder: Any, questions: Sequence[Question], start: RelevanceParams) -> Any:
    def subset(name: str, split: str) -> list[Question]:
        return [q for q in questions if q.set == name and q.split == split]

    lena_dev, people_dev = subset("one user", "dev"), subset("people", "dev")

    def on(params: RelevanceParams, group: Sequence[Question]) -> Quality:
        return quality(RelevanceModel(embedder, params), group, Bars.of(params))

    def capped(group: Sequence[Question]) -> Callable[[RelevanceParams], float | None]:
        def score(params: RelevanceParams) -> float | None:
            measured = on(params, group)
            return measured.recall if measured.injection <= INJECTION_CAP else None

        return score

    own = best(
        start,
        (
            dataclasses.replace(
                start,
                own_uses_weight=beta,
                top_two_weight=two,
                all_uses_weight=every,
                importance_weight=weight,
            )
            for beta, two, every, weight in itertools.product(
                OWN_USES, TOP_TWO, ALL_USES, IMPORTANCE
            )
        ),
        capped(lena_dev),
    )
    borrowed = best(
        own,
        (dataclasses.replace(own, category_uses_weight=beta) for beta in BORROWED),
        capped(people_dev),
    )

    dev = [*lena_dev, *people_dev]
    model = RelevanceModel(embedder, borrowed)
    best_match = [max((model.match(c) for c in q.candidates), default=0.0) for q in dev]
    fitted = fit_turn([q.reading for q in dev], best_match, [bool(q.needs) for q in dev])

    def injection_held(bar: float) -> bool:
        """Whether each set's dev injection, every question judged by a model fitted
        without its fold, stays within the cap one standard error up."""
        opened: dict[str, list[bool]] = {"one user": [], "people": []}
        for fold in range(FOLDS):
            train = [i for i in range(len(dev)) if i % FOLDS != fold]
            fit = fit_turn(
                [dev[i].reading for i in train],
                [best_match[i] for i in train],
                [bool(dev[i].needs) for i in train],
            )
            judge = RelevanceModel(embedder, turn_params(borrowed, fit, bar))
            for i in range(fold, len(dev), FOLDS):
                if not dev[i].needs:
                    gate = judge.gate_score(dev[i].reading)
                    opened[dev[i].set].append(
                        judge.gate_open(gate) and best_match[i] >= judge.best_bar(gate)
                    )
        for answers in opened.values():
            injection = statistics.fmean(answers)
            if injection + (injection * (1 - injection) / len(answers)) ** 0.5 > INJECTION_CAP:
                return False
        return True

    held = [bar for bar in BAR_CHOICES if injection_held(bar)]
    if not held:
        raise SystemExit("no probability bar keeps dev injection within the cap")
    turned = turn_params(borrowed, fitted, held[0])  # the loosest

    def both(params: RelevanceParams) -> float | None:
        return statistics.fmean(capped(group)(params) or 0.0 for group in (lena_dev, people_dev))

    def precision(params: RelevanceParams) -> float:
        return statistics.fmean(on(params, group).needed_share for group in (lena_dev, people_dev))

    options = [
        dataclasses.replace(turned, companion_threshold=bar, companion_ratio=ratio)
        for bar, ratio in itertools.product(COMPANIONS, RATIOS)
    ]
    needing = sum(1 for q in dev if q.needs)
    bars = most_precise_within_one_error(options, both, precision, questions=needing)
    return bars, {
        (name, split): on(bars, subset(name, split))
        for name in ("one user", "people")
        for split in ("dev", "test")
    }


@dataclass(frozen=True, slots=True)
class TurnFit:
    """The fitted log-odds that a turn needs a memory: intercept + weights · features."""

    intercept: float
    resemblance: float
    own_life: float
    own_things: float
    self_reference: float
    best_match: float


def turn_features(reading: GateReading, best: float) -> list[float]:
    own_things = reading.own_things and not reading.own_life
    return [
        reading.resemblance,
        float(reading.own_life),
        float(own_things),
        float(reading.self_reference),
        best,
    ]


def fit_turn(
    readings: Sequence[GateReading], best: Sequence[float], needed: Sequence[bool]
) -> TurnFit:
    """Logistic regression (Newton's method, a little L2 on standardised features)."""
    x = np.array([turn_features(r, b) for r, b in zip(readings, best, strict=True)])
    y = np.array(needed, dtype=float)
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = np.c_[np.ones(len(x)), (x - mean) / spread]
    ridge = np.diag([0.0, *[1e-2] * x.shape[1]])
    w = np.zeros(z.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + ridge @ w
        hessian = z.T @ (z * (p * (1 - p))[:, None]) + ridge
        w -= np.linalg.solve(hessian, gradient)
    raw = w[1:] / spread
    return TurnFit(float(w[0] - (mean * raw).sum()), *(float(v) for v in raw))


def turn_params(params: RelevanceParams, fit: TurnFit, probability: float) -> RelevanceParams:
    """The params whose bars open a turn exactly where the fit's probability reaches
    `probability`: best + gate_weight · gate ≥ the fit's bar, with the gate's bonuses the
    fit's weights in units of resemblance; the threshold kept as the bar at `gate_pivot`."""
    weight = fit.resemblance / fit.best_match
    bar = (math.log(probability / (1 - probability)) - fit.intercept) / fit.best_match
    pivot = (bar - params.threshold) / weight
    return dataclasses.replace(
        params,
        self_reference_bonus=round(fit.self_reference / fit.resemblance, 4),
        own_life_bonus=round(fit.own_life / fit.resemblance, 4),
        own_things_bonus=round(fit.own_things / fit.resemblance, 4),
        gate_weight=round(weight, 4),
        gate_pivot=round(pivot, 4),
        gate_floor=round(pivot - (MATCH_CEILING - params.threshold) / weight, 4),
    )


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "titan"))
    parser.add_argument("--region", default=None, help="AWS region (Titan)")
    parser.add_argument(
        "--dimensions",
        type=int,
        default=512,
        choices=(256, 512, 1024),
        help="Titan's output size (the stack's VectorDimensions)",
    )
    args = parser.parse_args(argv)
    if args.embedder == "titan" and not args.region:
        parser.error("--embedder titan needs --region (one where Bedrock offers Titan V2)")
    return args


def settings_for(args: argparse.Namespace, folder: Path) -> Settings:
    """A fresh local store in `folder`, embedding with the chosen model (Titan at its size
    over Bedrock in the region, with the account's default credentials)."""
    return Settings(
        state_dir=folder,
        embedder=args.embedder,
        region=args.region,
        titan_dimensions=args.dimensions,
        project_root=ROOT,
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = arguments(argv)
    with tempfile.TemporaryDirectory(prefix="chatmemory-calibrate-") as folder:
        container = Container(settings_for(args, Path(folder)), SystemClock())
        use_container(container)
        try:
            questions = collect(container)
            start = container.retriever.relevance.params
            chosen, results = calibrate(container.embedder, questions, start)
        finally:
            use_container(None)
    print(f"\n## Calibration for {container.embedder.name}\n")
    print(f"current: {start}\nchosen:  {chosen}\n")
    print("| set | split | Recall@5 | injection | needed / sent |\n|---|---|---|---|---|")
    for (name, split), measured in results.items():
        print(
            f"| {name} | {split} | {measured.recall:.3f} | {measured.injection:.3f} "
            f"| {measured.needed_share:.3f} |"
        )


if __name__ == "__main__":
    main()
