"""Single-valued facts: a person has one home city, one job, one diet, one relationship
status at a time, so a newer statement of one replaces the older. Pure.

A memory says which fact it is by its `key` ("home_city", "job", "diet") when the
extractor or the save tool gave one; a memory typed or imported without a key is read for
the same facts by its words ("Lives in Pune." is a home city, "Works as a nurse." a job).
Every write path compares a new memory with the person's active ones through this module,
so "Lives in Lisbon now." saved in a chat closes "Lives in Pune." however that one was
stored (seed 002: conflict detection compares candidates with rows of the same key).
"""

from __future__ import annotations

import re
from typing import Final

from chatmemory.domain.ids import normalise_for_identity
from chatmemory.domain.memory import Kind, Memory, Status

#: the keys a person holds one of at a time
SINGLE_VALUED: Final = frozenset({"home_city", "job", "diet", "relationship_status"})

# How a sentence states each one, when no key says so.
_SAID: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "home_city",
        re.compile(
            r"^(?i:(?:now\s+)?(?:lives|is living|is based|resides|has moved|moved|relocated)"
            r"(?:\s+(?:now|currently))?\s+(?:in|to))\s+[A-Z]"
        ),
    ),
    (
        "job",
        re.compile(
            r"^(?:now\s+)?(?:works|is working|is employed)(?:\s+(?:now|currently|full-time|"
            r"part-time))?\s+(?:as|at|for)\s+\S",
            re.IGNORECASE,
        ),
    ),
    (
        "diet",
        re.compile(
            r"^is\s+(?:a\s+|now\s+)?(?:strict\s+)?(?:vegetarian|vegan|pescatarian|"
            r"flexitarian|carnivore|omnivore|keto|paleo)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "relationship_status",
        re.compile(
            r"^is\s+(?:now\s+)?(?:married|single|divorced|widowed|engaged|separated|"
            r"in a relationship)\b",
            re.IGNORECASE,
        ),
    ),
)
# The kinds that hold a standing fact (an event stays true; a story has its own arc).
_STANDING_KINDS: Final = frozenset({Kind.FACT, Kind.PREFERENCE, Kind.RELATIONSHIP})


def standing_key(key: str | None, text: str) -> str | None:
    """Which single-valued fact a sentence states: its key when that is one, else what its
    words say; None when it states none."""
    if key in SINGLE_VALUED:
        return key
    if key:
        return None  # a key of another kind ("allergy_peanuts") is its own fact
    for name, pattern in _SAID:
        if pattern.search(text.strip()):
            return name
    return None


def key_of(memory: Memory) -> str | None:
    """The single-valued fact a memory states, if it is a standing belief that states one."""
    if memory.kind not in _STANDING_KINDS:
        return None
    return standing_key(memory.key, memory.text)


def replaces(new: Memory, old: Memory) -> bool:
    """Whether `new` states the same single-valued fact as `old`, differently, for the same
    person and persona, while `old` is still believed: then `old` is history."""
    fact = key_of(new)
    return (
        fact is not None
        and new.memory_id != old.memory_id
        and old.status is Status.ACTIVE
        and old.persona == new.persona
        and old.subject == new.subject
        and key_of(old) == fact
        and normalise_for_identity(old.text) != normalise_for_identity(new.text)
    )


def contradictions(memories: list[Memory]) -> list[tuple[Memory, Memory]]:
    """Pairs of active memories that state one single-valued fact two ways (what no
    person's profile may hold)."""
    by_fact: dict[tuple[str, str, str], list[Memory]] = {}
    for memory in memories:
        fact = key_of(memory)
        if fact is not None and memory.status is Status.ACTIVE:
            by_fact.setdefault((memory.persona, memory.subject, fact), []).append(memory)
    return [
        (first, other)
        for held in by_fact.values()
        for index, first in enumerate(held)
        for other in held[index + 1 :]
        if normalise_for_identity(first.text) != normalise_for_identity(other.text)
    ]
