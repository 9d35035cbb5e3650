"""The profile: a ≤ 300-token digest of the most stable memories, built without a model.

Seed 002: stated facts, and inferred ones only once seen twice (a friend's vegetarian
meal does not make the user vegetarian); never a sensitive one (`sensitive.py`: used only
when directly relevant, so only per-turn recall brings it). Stable kinds first (facts, preferences,
relationships), by importance, then how recently they were said. `built_from` records
exactly which memories it holds, so a change to one of them triggers a rebuild and a
deletion can tell whether the profile must be withheld until it is rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import fading
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.profile import PROFILE_TOKEN_BUDGET
from chatmemory.domain.prompt import one_line
from chatmemory.domain.sensitive import is_sensitive
from chatmemory.domain.tokens import estimate_tokens

STABLE_KINDS = frozenset({Kind.FACT, Kind.PREFERENCE, Kind.RELATIONSHIP})
SEEN_TWICE = 2
MIN_IMPORTANCE = 4


@dataclass(frozen=True, slots=True)
class Digest:
    text: str
    built_from: tuple[str, ...]
    tokens: int
    review_at: datetime | None = None  # the first of its memories to go out of use


def times_seen(memory: Memory) -> int:
    seen = memory.meta.get("seen", 1)
    return seen if isinstance(seen, int) else 1


def qualifies(memory: Memory) -> bool:
    """May this memory shape the profile?"""
    return (
        memory.status is Status.ACTIVE
        and memory.kind in STABLE_KINDS
        and memory.importance >= MIN_IMPORTANCE
        and memory.valid_until is None  # a shelf life is the opposite of stable
        and (memory.stated_by is StatedBy.USER or times_seen(memory) >= SEEN_TWICE)
        # Health, religion, … are used only when directly relevant: recalled, never always on.
        and not is_sensitive(memory)
    )


def build_digest(memories: Sequence[Memory], budget: int = PROFILE_TOKEN_BUDGET) -> Digest:
    """The digest within the token budget; the most important facts first."""
    chosen = sorted(
        (m for m in memories if qualifies(m)),
        key=lambda m: (-m.importance, -m.created_at.timestamp(), m.memory_id),
    )
    lines: list[str] = []
    built_from: list[str] = []
    for memory in chosen:
        line = f"- {one_line(memory.text)}"  # one line per memory, whatever it holds
        if estimate_tokens("\n".join([*lines, line])) > budget:
            continue  # a shorter, less important fact may still fit
        lines.append(line)
        built_from.append(memory.memory_id)
    text = "\n".join(lines)
    held = {memory.memory_id: memory for memory in chosen}
    ends = [fading.out_of_use_at(held[memory_id]) for memory_id in built_from]
    return Digest(
        text=text,
        built_from=tuple(built_from),
        tokens=estimate_tokens(text),
        review_at=min((end for end in ends if end is not None), default=None),
    )
