"""The gates' and the exams' counts, kept for the end of the run: a passing gate still says
what it did.

Under pytest-xdist each worker keeps its own counts and hands them to the controller when
it finishes (`exported` / `absorb`), which prints them (tests/conftest.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class GateCount:
    gate: str
    facts: int
    probes: int
    requests: int
    hits: int
    embedder: str
    detail: str = ""

    def line(self) -> str:
        detail = f" — {self.detail}" if self.detail else ""
        return (
            f"{self.gate}: {self.facts} facts, {self.probes} probes, {self.requests} requests, "
            f"{self.hits} hits [{self.embedder}]{detail}"
        )


COUNTS: list[GateCount] = []
#: HTTP requests made by the whole gates package (set when its server stops)
TOTALS: dict[str, float] = {}
#: the exams' printed counts (the thread exam), by exam
EXAMS: dict[str, list[str]] = {}


def record(count: GateCount) -> None:
    COUNTS.append(count)


def record_replay(
    gate: str, *, facts: int, probes: int, requests: int, hits: int, embedder: str, detail: str = ""
) -> None:
    """One replay of the probes, as a line of the summary."""
    record(GateCount(gate, facts, probes, requests, hits, embedder, detail))


def record_lines(exam: str, lines: list[str]) -> None:
    """An exam's counts, printed as they are at the end of the run."""
    EXAMS[exam] = list(lines)


def exported() -> dict[str, Any]:
    """This process's counts as plain data (what a worker hands to the controller)."""
    return {
        "counts": [dataclasses.asdict(count) for count in COUNTS],
        "totals": dict(TOTALS),
        "exams": dict(EXAMS),
    }


def absorb(data: dict[str, Any]) -> None:
    """Add a worker's counts to this process's."""
    COUNTS.extend(GateCount(**count) for count in data.get("counts", ()))
    for key, value in data.get("totals", {}).items():
        TOTALS[key] = TOTALS.get(key, 0) + value
    EXAMS.update(data.get("exams", {}))


def summary_lines() -> list[str]:
    lines = [count.line() for count in COUNTS]
    if TOTALS:
        lines.append(
            f"all gates: {int(TOTALS['requests'])} HTTP requests in {TOTALS['seconds']:.1f} s"
        )
    return lines
