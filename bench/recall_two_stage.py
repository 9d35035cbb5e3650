"""Two-stage recall benchmark (`POST /v1/recall`): the 15 relevant, and what the 3 add.

Run:  .venv/bin/python bench/recall_two_stage.py            (~1 minute)
      .venv/bin/python bench/recall_two_stage.py --sweep    (also the dev split over the
                                                             "related" margin)

On the labelled set in bench/data/ (loaded and seeded with bench/retrieval.py's helpers:
one user, 500 memories through the real indexer, the local MiniLM model), every query of
the split goes through `RecallService.recall` with k=15 as the endpoint runs it. Reported,
on the questions that need a memory:
- recall of the 15: the fraction of needed memories among the 15 relevant hits (mean over
  questions), and any-hit: the questions with at least one needed memory among them;
- the benefit of the 3 unasked: the questions whose needed memory is found only among the 3,
  and how many needed memories the 3 add;
- for comparison, what ranks 16-18 would have added instead (the 3 are deliberately not
  those);
and, on every question, the mean count of items returned. The relevance floor is the
embedder's calibrated threshold (chosen on the dev split for per-turn recall); the test
split is reported as is. Numbers go to stdout (markdown) and bench/.work/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval import ROOT, WORK, Labelled, prepare, seed

from chatmemory.adapters.clock import SystemClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.services.recall import RELATED_MARGIN, RecallRequest, RecallService

USER = "bench-user-0"
K = 15


@dataclass
class Tally:
    """One split's counts over its questions."""

    recall_15: list[float]
    any_hit_15: list[bool]
    only_in_3: int = 0
    added_by_3: int = 0
    only_in_16_18: int = 0
    added_by_16_18: int = 0
    needed: int = 0
    missed_uncovered: int = 0
    returned: list[int] | None = None
    relevant: list[int] | None = None
    unasked: list[int] | None = None

    def row(self) -> dict[str, Any]:
        assert self.returned is not None and self.relevant is not None
        assert self.unasked is not None
        return {
            "questions_needing_memory": len(self.recall_15),
            "needed_memories": self.needed,
            "missed_in_uncovered_categories": self.missed_uncovered,
            "recall_of_15": round(_mean(self.recall_15), 3),
            "any_hit_in_15": round(_mean(self.any_hit_15), 3),
            "questions_found_only_in_3": self.only_in_3,
            "needed_added_by_3": self.added_by_3,
            "questions_found_only_in_ranks_16_18": self.only_in_16_18,
            "needed_added_by_ranks_16_18": self.added_by_16_18,
            "mean_items_returned": round(_mean(self.returned), 2),
            "mean_relevant": round(_mean(self.relevant), 2),
            "mean_unasked": round(_mean(self.unasked), 2),
        }


def _mean(values: list[float] | list[bool] | list[int]) -> float:
    return statistics.fmean(values) if values else 0.0


def measure(
    service: RecallService, data: Labelled, ids: dict[str, str], split: str, kinds: set[str]
) -> Tally:
    category = {ids[row["id"]]: row["category"] for row in data.memories}
    tally = Tally([], [], returned=[], relevant=[], unasked=[])
    for query in data.queries:
        if query["split"] != split or query["kind"] not in kinds:
            continue
        found = service.recall(RecallRequest(user_id=USER, query=query["text"], k=K))
        relevant = [h.memory.memory_id for h in found.hits if not h.unasked]
        unasked = [h.memory.memory_id for h in found.hits if h.unasked]
        assert tally.returned is not None and tally.relevant is not None
        assert tally.unasked is not None
        tally.returned.append(len(found.hits))
        tally.relevant.append(len(relevant))
        tally.unasked.append(len(unasked))
        if query["kind"] != "needs_memory":
            continue
        # What plain top-k would have put beside the 15: ranks 16-18 of the relevant order.
        wider = service.recall(RecallRequest(user_id=USER, query=query["text"], k=K + 3))
        next_three = [h.memory.memory_id for h in wider.hits if not h.unasked][K : K + 3]
        needed = {ids[label] for label in query["needs"]}
        tally.needed += len(needed)
        in_15 = needed & set(relevant)
        tally.recall_15.append(len(in_15) / len(needed))
        tally.any_hit_15.append(bool(in_15))
        covered = {category[memory_id] for memory_id in relevant}
        tally.missed_uncovered += sum(category[m] not in covered for m in needed - in_15)
        by_3 = (needed - in_15) & set(unasked)
        tally.added_by_3 += len(by_3)
        tally.only_in_3 += bool(by_3 and not in_15)
        by_next = (needed - in_15) & set(next_three)
        tally.added_by_16_18 += len(by_next)
        tally.only_in_16_18 += bool(by_next and not in_15)
    return tally


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = Labelled.load(with_hints=True)
    report: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "memories": len(data.memories),
        "k": K,
        "related_margin": RELATED_MARGIN,
    }
    with tempfile.TemporaryDirectory(prefix="chatmemory-recall-bench-") as folder:
        settings = Settings(state_dir=Path(folder), embedder="minilm", project_root=ROOT)
        container = Container(settings, SystemClock())
        use_container(container)
        ids = seed(container, prepare(container, data), users=1)
        service = container.recall
        report["embedder"] = container.embedder.name
        report["floor"] = service.floor
        report["splits"] = {}
        for split in ("dev", "test"):
            needs = measure(service, data, ids, split, {"needs_memory"}).row()
            none = measure(service, data, ids, split, {"no_memory"}).row()
            report["splits"][split] = {
                "needs_memory": needs,
                "no_memory_mean_items_returned": none["mean_items_returned"],
                "no_memory_mean_relevant": none["mean_relevant"],
            }
        if args.sweep:
            report["sweep_dev"] = {}
            for margin in (0.0, 0.05, 0.10, 0.15, 0.20, 1.0):
                swept = RecallService(
                    container.stores,
                    container.embedder,
                    container.clock,
                    container.relevance,
                    related_floor=service.floor - margin,
                )
                report["sweep_dev"][margin] = measure(
                    swept, data, ids, "dev", {"needs_memory"}
                ).row()
        use_container(None)
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"\n## Two-stage recall ({report['when']})\n")
    print(
        f"{report['memories']} memories, embedder {report['embedder']}, k={report['k']} + 3 "
        f"unasked, relevance floor {report['floor']}, related floor = floor - "
        f"{report['related_margin']}\n"
    )
    print(
        "| split | questions | recall of the 15 | any hit in the 15 | found only in the 3 | "
        "needed added by the 3 | missed, in a category the 15 do not cover | "
        "(ranks 16-18 instead: only / added) | mean items "
        "(relevant + unasked) | mean items, no-memory questions |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for split, row in report["splits"].items():
        n = row["needs_memory"]
        print(
            f"| {split} | {n['questions_needing_memory']} | {n['recall_of_15']:.3f} | "
            f"{n['any_hit_in_15']:.3f} | {n['questions_found_only_in_3']} | "
            f"{n['needed_added_by_3']} / {n['needed_memories']} | "
            f"{n['missed_in_uncovered_categories']} | "
            f"{n['questions_found_only_in_ranks_16_18']} / {n['needed_added_by_ranks_16_18']} | "
            f"{n['mean_items_returned']} ({n['mean_relevant']} + {n['mean_unasked']}) | "
            f"{row['no_memory_mean_items_returned']} |"
        )
    if "sweep_dev" in report:
        print("\nDev split, over the related margin (floor - margin):\n")
        print("| margin | found only in the 3 | needed added by the 3 | mean unasked |")
        print("|---|---|---|---|")
        for margin, row in report["sweep_dev"].items():
            print(
                f"| {margin:.2f} | {row['questions_found_only_in_3']} | "
                f"{row['needed_added_by_3']} | {row['mean_unasked']} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sweep", action="store_true", help="the dev split over the margin")
    report = run(parser.parse_args())
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / f"recall-two-stage-{report['when'].replace(':', '')}.json"
    out.write_text(json.dumps(report, indent=2))
    print_report(report)
    print(f"\n(raw numbers: {out.relative_to(ROOT)})")


if __name__ == "__main__":
    sys.exit(main())
