"""Replaying probes and finding what leaked: the part every privacy gate shares.

`replay_probes` sends each probe through `/v1/context` and `/v1/chat` (plain JSON), in a
new conversation and in any existing ones, and `find_markers` looks through the WHOLE
answer — every block (system, profile, note, summary, recent turns, memories), the
reply, `memories_used`, `saved`, any field added later — for any of the markers it was
given. A marker is a fact's invented token, or an id (memory, conversation, notice) that
must not reach this caller.

The deletion gate reuses it unchanged: plant the corpus, delete, run the purge, and
replay with the deleted facts' tokens as markers, before and after the purge.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.gates.service import Account

#: `conversations=(NEW,)`: each probe starts a conversation of its own
NEW = None
ENDPOINTS = ("/v1/context", "/v1/chat")


@dataclass(frozen=True, slots=True)
class Hit:
    """One marker found in one answer."""

    probe: str
    endpoint: str
    conversation: str  # "new" or the conversation's id
    marker: str
    where: str  # where in the answer, e.g. "blocks.memories[0].text"

    def __str__(self) -> str:
        return (
            f"{self.marker!r} at {self.where} of {self.endpoint} "
            f"({self.conversation} conversation) for {self.probe!r}"
        )


@dataclass
class ProbeRun:
    """What a replay did and found."""

    probes: int = 0
    requests: int = 0
    hits: list[Hit] = field(default_factory=list)

    def of(self, markers: Iterable[str]) -> list[Hit]:
        """The hits of these markers only."""
        wanted = {marker.casefold() for marker in markers}
        return [hit for hit in self.hits if hit.marker.casefold() in wanted]

    def markers_found(self, markers: Iterable[str] | None = None) -> set[str]:
        hits = self.hits if markers is None else self.of(markers)
        return {hit.marker for hit in hits}

    def by_place(self) -> Counter[str]:
        """How many hits each kind of place held ("blocks.memories", "reply", …)."""
        return Counter(_place(hit.where) for hit in self.hits)

    def add(self, other: ProbeRun) -> ProbeRun:
        return ProbeRun(
            probes=self.probes + other.probes,
            requests=self.requests + other.requests,
            hits=self.hits + other.hits,
        )

    def describe(self, markers: Iterable[str] | None = None, limit: int = 10) -> str:
        """The first hits (of these markers only, if given), one per line."""
        hits = self.hits if markers is None else self.of(markers)
        shown = "\n  ".join(str(hit) for hit in hits[:limit])
        more = f"\n  … and {len(hits) - limit} more" if len(hits) > limit else ""
        return f"{len(hits)} hit(s):\n  {shown}{more}"


def _place(where: str) -> str:
    """The kind of place a hit is in: blocks.memories[3].text → blocks.memories."""
    parts = re.sub(r"\[\d+\]", "", where).split(".")
    return ".".join(parts[:2]) if parts[0] == "blocks" else parts[0]


def find_markers(answer: Any, markers: Iterable[str]) -> list[tuple[str, str]]:
    """Every (marker, place) where a marker occurs in any key or string of `answer`,
    ignoring case."""
    wanted = [(marker, marker.casefold()) for marker in markers]
    found: list[tuple[str, str]] = []

    def visit(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                inner = f"{where}.{key}" if where else str(key)
                look(str(key), inner)
                visit(item, inner)
        elif isinstance(value, list):
            for number, item in enumerate(value):
                visit(item, f"{where}[{number}]")
        elif value is not None:
            look(str(value), where or "(answer)")

    def look(text: str, where: str) -> None:
        folded = text.casefold()
        found.extend((marker, where) for marker, key in wanted if key in folded)

    visit(answer, "")
    return found


def replay_probes(
    account: Account,
    probes: Sequence[str],
    markers: Iterable[str],
    *,
    conversations: Sequence[str | None] = (NEW,),
    endpoints: Sequence[str] = ENDPOINTS,
    temporary: bool = False,
) -> ProbeRun:
    """Send every probe to every endpoint in every conversation as `account`, and report
    where any marker appeared.

    `NEW` in `conversations` means a fresh conversation for each probe. Every answer
    must be 200 — an error hides nothing and proves nothing. After each chat turn the
    queued background work runs (folds) and the clock moves on, as between real turns.
    """
    marker_list = [marker for marker in markers if marker]
    run = ProbeRun()
    for probe in probes:
        for conversation in conversations:
            for endpoint in endpoints:
                body: dict[str, Any] = {"message": probe}
                if conversation is not None:
                    body["conversation_id"] = conversation
                if temporary:
                    body["temporary"] = True
                answer = account.call("POST", endpoint, body)
                assert answer.status == 200, (endpoint, body, answer)
                run.requests += 1
                run.hits += [
                    Hit(probe, endpoint, conversation or "new", marker, where)
                    for marker, where in find_markers(answer.body, marker_list)
                ]
                if endpoint == "/v1/chat":
                    account.world.between_turns()
        run.probes += 1
    return run
