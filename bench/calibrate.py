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
4. the gate's floor, the threshold and the companion bar together, by the one-standard-
   error rule: of the settings whose mean dev Recall@5 over the two sets is within one
   standard error of the best (each set's dev injection at most 0.05), the strictest —
   highest threshold, then companion bar, then floor. A dev split holds ~90 questions of
   each kind and only a handful of no-memory ones pass the gate, so its injection cannot
   tell two low thresholds apart; the strictest setting the dev recall cannot tell from
   the best is the one that does not overfit that.
Ties in the weights keep the current value. It prints the `RelevanceParams` to put into
`services/relevance.py` and what they give on each split.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

import people  # noqa: E402 - bench/ is on sys.path
from recall_breakdown import Bars, cut  # noqa: E402
from retrieval import Labelled, prepare, seed  # noqa: E402

from chatmemory.adapters.clock import SystemClock  # noqa: E402
from chatmemory.config import Container, Settings, use_container  # noqa: E402
from chatmemory.services.relevance import Candidate, RelevanceModel, RelevanceParams  # noqa: E402

INJECTION_CAP = 0.05
OWN_USES = (0.5, 0.6, 0.7, 0.8, 0.9)
TOP_TWO = (0.0, 0.25, 0.5)
ALL_USES = (0.0, 0.15, 0.3)
IMPORTANCE = (0.1, 0.2, 0.3)
BORROWED = (0.1, 0.3, 0.5, 0.7, 0.9)
FLOORS = (0.02, 0.03, 0.04, 0.05, 0.06)
THRESHOLDS = (0.26, 0.28, 0.30, 0.32, 0.35, 0.38)
GAPS = (0.0, 0.02, 0.04, 0.06, 0.08)


@dataclass(frozen=True, slots=True)
class Question:
    """One labelled question's parts, read once."""

    set: str
    split: str
    needs: tuple[str, ...]  # empty: needs no memory
    gate: float
    candidates: tuple[Candidate, ...]


def collect(container: Container) -> list[Question]:
    """Seed both sets and read every question's parts."""
    questions: list[Question] = []
    lena = Labelled.load(with_hints=True)
    ids = seed(container, prepare(container, lena), users=1)
    for query in lena.queries:
        gate, candidates = container.retriever.parts("bench-user-0", query["text"])
        needs = tuple(ids[label] for label in query["needs"])
        questions.append(Question("one user", query["split"], needs, gate, tuple(candidates)))
    data = people.load()
    people_ids = people.seed(container, data["memories"])
    for query in data["queries"]:
        gate, candidates = container.retriever.parts(people.user_id(query["user"]), query["text"])
        needs = tuple(people_ids[label] for label in query["needs"])
        questions.append(Question("people", query["split"], needs, gate, tuple(candidates)))
    return questions


def quality(
    model: RelevanceModel, questions: Iterable[Question], bars: Bars
) -> tuple[float, float]:
    """(Recall@5, injection rate) of these questions under the model's match and the bars."""
    recalls, injected = [], []
    for question in questions:
        sent: tuple[str, ...] = ()
        if bars.gate_floor is None or question.gate >= bars.gate_floor:
            matches = {c.memory_id: model.match(c) for c in question.candidates}
            sent = cut(matches, threshold=bars.threshold, companion=bars.companion)
        if question.needs:
            recalls.append(sum(m in sent for m in question.needs) / len(question.needs))
        else:
            injected.append(bool(sent))
    return statistics.fmean(recalls), statistics.fmean(injected)


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


def strictest_within_one_error(
    options: Sequence[RelevanceParams],
    score: Callable[[RelevanceParams], float | None],
    *,
    questions: int,
) -> RelevanceParams:
    """The strictest option whose score is within one standard error of the best one's
    (the score read as a proportion over `questions`)."""
    scored = [(option, value) for option in options if (value := score(option)) is not None]
    if not scored:
        raise SystemExit("no setting keeps injection within the cap")
    top = max(value for _, value in scored)
    error = (top * (1 - top) / questions) ** 0.5
    near = [option for option, value in scored if value >= top - error]
    return max(
        near,
        key=lambda p: (p.threshold, p.companion_threshold or p.threshold, p.gate_floor or 0.0),
    )


def calibrate(embedder: Any, questions: Sequence[Question], start: RelevanceParams) -> Any:
    def subset(name: str, split: str) -> list[Question]:
        return [q for q in questions if q.set == name and q.split == split]

    lena_dev, people_dev = subset("one user", "dev"), subset("people", "dev")

    def on(params: RelevanceParams, group: Sequence[Question]) -> tuple[float, float]:
        return quality(RelevanceModel(embedder, params), group, Bars.of(params))

    def capped(group: Sequence[Question]) -> Callable[[RelevanceParams], float | None]:
        def score(params: RelevanceParams) -> float | None:
            recall, injection = on(params, group)
            return recall if injection <= INJECTION_CAP else None

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

    def both(params: RelevanceParams) -> float | None:
        scores = [capped(group)(params) for group in (lena_dev, people_dev)]
        return None if None in scores else statistics.fmean(s for s in scores if s is not None)

    options = [
        dataclasses.replace(
            borrowed, gate_floor=floor, threshold=threshold, companion_threshold=threshold - gap
        )
        for floor, threshold, gap in itertools.product(FLOORS, THRESHOLDS, GAPS)
    ]
    needing = sum(1 for q in (*lena_dev, *people_dev) if q.needs)
    bars = strictest_within_one_error(options, both, questions=needing)
    return bars, {
        (name, split): on(bars, subset(name, split))
        for name in ("one user", "people")
        for split in ("dev", "test")
    }


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
    print("| set | split | Recall@5 | injection |\n|---|---|---|---|")
    for (name, split), (recall, injection) in results.items():
        print(f"| {name} | {split} | {recall:.3f} | {injection:.3f} |")


if __name__ == "__main__":
    main()
