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
from pathlib import Path
from typing import Any

from recall_breakdown import GATE_CLOSED, NOTHING_ABOVE, ONLY_UNRELATED, Turn, turn

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


def run_corrections(
    container: Container, prepared: Mapping[str, Memory], corrections: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """Seed the corrections user, measure before, correct, measure after; per split."""
    for label, template in prepared.items():
        container.stores.memories.add_memory(
            template.with_changes(user_id=USER, memory_id=_memory_id(label))
        )
    params = container.retriever.relevance.params
    threshold, floor = params.threshold, params.gate_floor

    before = {
        c["id"]: _turn(container, c, _memory_id(c["replaces"]), threshold, floor)
        for c in corrections
    }
    corrected: dict[str, Memory] = {}
    for c in corrections:
        corrected[c["id"]] = container.memories.correct(
            USER, _memory_id(c["replaces"]), text=c["text"]
        )

    rows = []
    for c in corrections:
        new = corrected[c["id"]]
        old_id, old_text = _memory_id(c["replaces"]), prepared[c["replaces"]].text
        simulated = _turn(container, c, new.memory_id, threshold, floor)
        recalled = container.retriever.recall(USER, c["query"])
        sent = tuple(item.memory.memory_id for item in recalled)
        built = container.context.build(ContextRequest(user_id=USER, message=c["query"]))
        after = Turn(c["id"], (new.memory_id,), simulated.gate_open, sent)
        rows.append(
            {
                "id": c["id"],
                "split": c["split"],
                "before_old_sent": before[c["id"]].hits == 1,
                "after_corrected_sent": after.hits == 1,
                "after_outcome": "hit" if after.hits else after.outcome,
                "old_row_sent": old_id in sent,
                "old_text_sent": any(item.memory.text == old_text for item in recalled),
                "old_text_in_context": old_text in built.rendered.text(),
                "uses_borrowed": new.meta.get("uses_from") == USES_FROM_CATEGORY,
                "sent": len(sent),
                "recall_matches_explain": sent == simulated.sent,
            }
        )
    return {
        "user": USER,
        "corrections": len(corrections),
        "per_split": {
            split: _summary([r for r in rows if r["split"] == split]) for split in ("dev", "test")
        }
        | {"all": _summary(rows)},
        "rows": rows,
    }


def _memory_id(label: str) -> str:
    return f"mem_c_{label}"


def _turn(
    container: Container,
    correction: Mapping[str, Any],
    needed: str,
    threshold: float,
    floor: float | None,
) -> Turn:
    gate, matches = container.retriever.explain(USER, correction["query"])
    return turn(correction["id"], (needed,), gate, matches, threshold=threshold, gate_floor=floor)


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
        f"MemoryService.correct, on their own user `{report['user']}`):\n"
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
