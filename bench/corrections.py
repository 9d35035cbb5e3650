"""After-correction recall: a corrected fact must be found, and the superseded text never sent.

Read by bench/retrieval.py, as its own pass on its own user, after every other quality
number is taken: the user gets the same 500 memories the others have, then each correction
in bench/data/retrieval_corrections.jsonl goes through the service's real correction path
(`MemoryService.correct`: the old row becomes history, the corrected one is written with
fresh vectors and published). The benchmark users are never corrected, so the historic
Recall@5 and injection stay comparable.

For each correction's question it reports:
- before: whether the old version was sent, on the same user before any correction (the
  question's difficulty, for comparison);
- after: whether the corrected version is among what `Retriever.recall` sends (top 5), and
  where the question landed (gate closed, nothing above the threshold, only unrelated);
- leaks: whether the superseded row or its text reached what was sent: the recalled rows,
  and the whole `/v1/context` assembly (`ContextService.build`). Both must be zero.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_breakdown import GATE_CLOSED, NOTHING_ABOVE, ONLY_UNRELATED, Bars, Turn, turn

from chatmemory.config import Container
from chatmemory.domain.memory import Memory
from chatmemory.services.context import ContextRequest
from chatmemory.services.relevance import USES_FROM_CATEGORY

USER = "bench-corrections"
FILE = "retrieval_corrections.jsonl"
AFTER_OUTCOMES = (GATE_CLOSED, NOTHING_ABOVE, ONLY_UNRELATED, "hit")


def load(data: Path) -> list[dict[str, Any]]:
    path = data / FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class Case:
    """One correction to make and the question that needs it, on a seeded user."""

    id: str
    split: str
    user_id: str
    old_memory_id: str
    text: str
    query: str


def run_corrections(
    container: Container, prepared: Mapping[str, Memory], corrections: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """Seed the corrections user with the labelled memories, then measure the corrections."""
    for label, template in prepared.items():
        container.stores.memories.add_memory(
            template.with_changes(user_id=USER, memory_id=_memory_id(label))
        )
    cases = [
        Case(c["id"], c["split"], USER, _memory_id(c["replaces"]), c["text"], c["query"])
        for c in corrections
    ]
    return measure(container, cases) | {"where": f"on their own user `{USER}`"}


def measure(container: Container, cases: Sequence[Case]) -> dict[str, Any]:
    """Measure before, correct through `MemoryService.correct`, measure after; per split."""
    bars = Bars.of(container.retriever.relevance.params)
    before = {case.id: _turn(container, case, case.old_memory_id, bars) for case in cases}
    old_texts = {
        case.id: container.memories.get(case.user_id, case.old_memory_id).text for case in cases
    }
    corrected = {
        case.id: container.memories.correct(case.user_id, case.old_memory_id, text=case.text)
        for case in cases
    }
    rows = []
    for case in cases:
        new, old_text = corrected[case.id], old_texts[case.id]
        simulated = _turn(container, case, new.memory_id, bars)
        recalled = container.retriever.recall(case.user_id, case.query)
        sent = tuple(item.memory.memory_id for item in recalled)
        built = container.context.build(ContextRequest(user_id=case.user_id, message=case.query))
        after = Turn(case.id, (new.memory_id,), simulated.gate_open, sent)
        rows.append(
            {
                "id": case.id,
                "split": case.split,
                "before_old_sent": before[case.id].hits == 1,
                "after_corrected_sent": after.hits == 1,
                "after_outcome": "hit" if after.hits else after.outcome,
                "old_row_sent": case.old_memory_id in sent,
                "old_text_sent": any(item.memory.text == old_text for item in recalled),
                "old_text_in_context": old_text in built.rendered.text(),
                "uses_borrowed": new.meta.get("uses_from") == USES_FROM_CATEGORY,
                "sent": len(sent),
                "recall_matches_explain": sent == simulated.sent,
            }
        )
    return {
        "corrections": len(cases),
        "per_split": {
            split: _summary([r for r in rows if r["split"] == split]) for split in ("dev", "test")
        }
        | {"all": _summary(rows)},
        "rows": rows,
    }


def _memory_id(label: str) -> str:
    return f"mem_c_{label}"


def _turn(container: Container, case: Case, needed: str, bars: Bars) -> Turn:
    gate, matches = container.retriever.explain(case.user_id, case.query)
    return turn(case.id, (needed,), gate, matches, bars)


def _summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(rows)

    def share(key: str) -> float:
        return statistics.fmean(float(r[key]) for r in rows) if rows else float("nan")

    outcomes = Counter(r["after_outcome"] for r in rows)
    return {
        "questions": n,
        "before_old_sent": share("before_old_sent"),
        "after_corrected_sent": share("after_corrected_sent"),
        "after_outcomes": {name: outcomes[name] for name in AFTER_OUTCOMES},
        "old_row_sent": share("old_row_sent"),
        "old_text_sent": share("old_text_sent"),
        "old_text_in_context": share("old_text_in_context"),
        "uses_borrowed": sum(r["uses_borrowed"] for r in rows),
        "sent_per_question": share("sent"),
        "recall_matches_explain": sum(r["recall_matches_explain"] for r in rows),
    }


def print_corrections(report: Mapping[str, Any]) -> None:
    per_split = report["per_split"]
    head = "| " + " | ".join(per_split) + " |"
    rule = "|---" * (len(per_split) + 1) + "|"
    print(
        f"\nAfter-correction questions ({report['corrections']} corrections through "
        f"MemoryService.correct, {report['where']}):\n"
    )
    print(f"| measure {head}\n{rule}")
    lines: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = (
        ("questions", lambda r: str(r["questions"])),
        ("before: old version sent (top 5)", lambda r: f"{r['before_old_sent']:.3f}"),
        ("**after: corrected version sent (top 5)**", lambda r: f"{r['after_corrected_sent']:.3f}"),
        *(
            (f"after, missed: {name}", lambda r, name=name: str(r["after_outcomes"][name]))
            for name in AFTER_OUTCOMES
            if name != "hit"
        ),
        ("**superseded row sent**", lambda r: f"{r['old_row_sent']:.3f}"),
        ("superseded text among the recalled rows", lambda r: f"{r['old_text_sent']:.3f}"),
        ("superseded text in the /v1/context prompt", lambda r: f"{r['old_text_in_context']:.3f}"),
        ("memories sent per question", lambda r: f"{r['sent_per_question']:.2f}"),
        (
            "corrected rows with uses borrowed from the category",
            lambda r: f"{r['uses_borrowed']} / {r['questions']}",
        ),
        (
            "recall() sent what explain() predicts",
            lambda r: f"{r['recall_matches_explain']} / {r['questions']}",
        ),
    )
    for name, cell in lines:
        print(f"| {name} | " + " | ".join(cell(row) for row in per_split.values()) + " |")
