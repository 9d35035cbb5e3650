"""The people set: thirty users with a small memory each, typed through the API.

Read by bench/retrieval.py (its second quality pass), and runnable alone:
    .venv/bin/python bench/people.py

bench/data/people_*.jsonl (written blind to the retrieval code; see its README) is shaped
like traffic of many users rather than one: 15-16 memories per person, natural questions
that may share words with what they need, many that need two memories, and hard
negatives on each person's own topics. Each memory goes in through `MemoryService.create`
as `POST /v1/memories` takes it (text and category, no uses: the service indexes the
category's, or the model's where one is configured and its job has run), each question
through `Retriever.trace` (what `recall` sends, with the gate's verdict and every
candidate's match for the breakdown). Then each person's correction goes through
`MemoryService.correct` and its question is asked: is the corrected fact sent, and does
the superseded text stay out of what is sent and of the whole `/v1/context` prompt.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from corrections import Case, measure, print_corrections  # noqa: E402 - bench/ on sys.path
from recall_breakdown import Bars, Turn, breakdown, print_breakdown, where_missed  # noqa: E402

from chatmemory.adapters.clock import SystemClock  # noqa: E402
from chatmemory.config import Container, Settings, use_container  # noqa: E402
from chatmemory.services.memories import NewMemory  # noqa: E402

DATA = ROOT / "bench" / "data"
SPLITS = ("dev", "test")


def load(data: Path = DATA) -> dict[str, list[dict[str, Any]]]:
    def lines(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (data / name).read_text().splitlines() if line]

    return {
        "memories": lines("people_memories.jsonl"),
        "queries": lines("people_queries.jsonl"),
        "corrections": lines("people_corrections.jsonl"),
    }


def user_id(person: str) -> str:
    return f"people-{person}"


def seed(container: Container, memories: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every memory through the API's create path; labelled id → memory id."""
    ids = {}
    for row in memories:
        created = container.memories.create(
            user_id(row["user"]), NewMemory(text=row["text"], category=row["category"])
        )
        ids[row["id"]] = created.memory.memory_id
    return ids


def run_people(container: Container, data: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Seed, ask every question, then correct and ask again; the report by split."""
    ids = seed(container, data["memories"])
    bars = Bars.of(container.retriever.relevance.params)
    needs: dict[str, list[Turn]] = {split: [] for split in SPLITS}
    none: dict[str, list[Turn]] = {split: [] for split in SPLITS}
    matches: dict[str, dict[str, float]] = {}
    tags: dict[str, list[str]] = {}
    for query in data["queries"]:
        trace = container.retriever.trace(user_id(query["user"]), query["text"])
        needed = tuple(ids[label] for label in query["needs"])
        one = Turn(query["id"], needed, trace.gate_open, trace.sent)
        matches[query["id"]] = trace.matches
        tags[query["id"]] = list(query.get("tags", ()))
        (needs if query["kind"] == "needs_memory" else none)[query["split"]].append(one)
    report: dict[str, Any] = {
        "users": len({row["user"] for row in data["memories"]}),
        "memories": len(data["memories"]),
        "queries": len(data["queries"]),
        "breakdown": {},
        "by_tag": {},
    }
    for split in SPLITS:
        report["breakdown"][split] = breakdown(needs[split], none[split]) | {
            "missed": where_missed(needs[split], matches, bars)
        }
        report["by_tag"][split] = _by_tag(needs[split], none[split], tags)
    cases = [
        Case(
            c["id"],
            c["split"],
            user_id(c["user"]),
            ids[c["replaces"]],
            c["text"],
            c["query"],
        )
        for c in data["corrections"]
    ]
    report["after_correction"] = measure(container, cases) | {
        "where": "one per person, on the people set's own users"
    }
    return report


def _by_tag(
    needs: Sequence[Turn], none: Sequence[Turn], tags: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, float | int]]:
    """Recall@5 and any-hit of needs-memory questions per tag; injection per no-memory tag
    (named "no-memory, <tag>": some tags, like possessive, are on both kinds)."""
    out: dict[str, dict[str, float | int]] = {}
    for tag in sorted({tag for t in needs for tag in tags[t.query_id]}):
        group = [t for t in needs if tag in tags[t.query_id]]
        out[tag] = {
            "questions": len(group),
            "recall_at_5": sum(t.hits / len(t.needed) for t in group) / len(group),
            "any_hit": sum(t.hits > 0 for t in group) / len(group),
        }
    for tag in sorted({tag for t in none for tag in tags[t.query_id]}):
        group = [t for t in none if tag in tags[t.query_id]]
        out[f"no-memory, {tag}"] = {
            "questions": len(group),
            "injection_rate": sum(bool(t.sent) for t in group) / len(group),
        }
    return out


def print_people(report: Mapping[str, Any]) -> None:
    split_rows = report["breakdown"]
    print(
        f"\n## The people set ({report['users']} users, {report['memories']} memories typed "
        f"through the API, {report['queries']} questions)\n"
    )
    print("| split | Recall@5 | any hit | injection rate |\n|---|---|---|---|")
    for split, row in split_rows.items():
        print(
            f"| {split} | {row['recall_at_5']:.3f} | {row['any_hit']:.3f} "
            f"| {row['injection_rate']:.3f} |"
        )
    print_breakdown(split_rows)
    print("\nBy tag (needs-memory: Recall@5 / any hit; no-memory: injection):\n")
    print("| tag | " + " | ".join(SPLITS) + " |\n" + "|---" * (len(SPLITS) + 1) + "|")
    for tag in sorted({tag for row in report["by_tag"].values() for tag in row}):
        cells = []
        for split in SPLITS:
            cell = report["by_tag"][split].get(tag)
            if cell is None:
                cells.append("-")
            elif "injection_rate" in cell:
                cells.append(f"{cell['injection_rate']:.3f} (n={cell['questions']})")
            else:
                cells.append(
                    f"{cell['recall_at_5']:.3f} / {cell['any_hit']:.3f} (n={cell['questions']})"
                )
        print(f"| {tag} | " + " | ".join(cells) + " |")
    print_corrections(report["after_correction"])


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="chatmemory-people-") as folder:
        settings = Settings(state_dir=Path(folder), embedder="minilm", project_root=ROOT)
        container = Container(settings, SystemClock())
        use_container(container)
        try:
            report = run_people(container, load())
        finally:
            use_container(None)
    print_people(report)


if __name__ == "__main__":
    main()
