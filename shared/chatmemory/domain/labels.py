"""Two-stage recall (seed 003): the index a query is ranked on, and why a hit was stored.

Index first: each memory stands in the index as its label, a 10-20 token compression of
what it says, and is ranked by the vectors of that sentence and of its uses; scoring never
reads anything longer. Read second: only the hits are read again, and only the first few
are expanded with why they were stored (`reasoning_for`) and what was actually said (the
evidence, read by the service).

A recall returns the relevant hits and, beside them, a few "unasked but related" ones:
the best memory of each category the relevant hits do not cover — deliberately not the
next ranks, which mostly repeat the categories already chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chatmemory.domain.ids import parse_message_id
from chatmemory.domain.memory import Kind, Memory, StatedBy

#: how many relevant hits a recall returns by default, and at most
RELEVANT = 15
RELEVANT_MAX = 50
#: how many "unasked but related" hits go beside them, one per category not chosen
UNASKED = 3
#: a label is at most this many words and characters (~20 tokens)
LABEL_WORDS = 20
LABEL_CHARS = 120
_ELLIPSIS = "…"
_SENTENCE_END = ".!?\u3002\uff01\uff1f"


def label_for(text: str) -> str:
    """The memory's index label: its sentence on one line, without its final period, cut at
    a word boundary to at most 20 words and ~120 characters (an ellipsis marks a cut).

    Memory texts are already one short standalone sentence, so most labels are the text.
    """
    words = text.split()
    cut = len(words) > LABEL_WORDS
    words = words[:LABEL_WORDS]
    while words and len(" ".join(words)) > LABEL_CHARS - (1 if cut else 0):
        if len(words) == 1:  # one unbroken run of characters: cut inside it
            words = [words[0][: LABEL_CHARS - 1]]
            cut = True
            break
        words.pop()
        cut = True
    label = " ".join(words)
    if cut:
        return (label.rstrip(_SENTENCE_END + ",;: ") or label) + _ELLIPSIS
    if label.endswith(".") and not label.endswith("..") and len(label) > 1:
        label = label[:-1]
    return label


# ---- the index: which memories a query gets ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Ranked:
    """One in-use memory's relevance to a query."""

    memory_id: str
    category: str
    score: float


@dataclass(frozen=True, slots=True)
class Picked:
    """What a recall returns: the relevant hits best first, then the unasked ones (best
    category first), and how many relevant matches were left out."""

    relevant: tuple[Ranked, ...]
    unasked: tuple[Ranked, ...]
    hidden: int


def pick(
    ranked: Sequence[Ranked],
    *,
    floor: float,
    related_floor: float | None = None,
    k: int = RELEVANT,
    unasked: int = UNASKED,
) -> Picked:
    """The best `k` memories scoring at least `floor`, then up to `unasked` more: the best
    memory of each category none of those `k` is in, one per category, best category
    first, each scoring at least `related_floor` (no floor when None).

    `hidden` counts the memories at or above `floor` that are not returned. Ties are broken
    by id; a memory listed twice counts once, with its best score.
    """
    best: dict[str, Ranked] = {}
    for item in sorted(ranked, key=lambda r: (-r.score, r.memory_id)):
        best.setdefault(item.memory_id, item)
    ordered = list(best.values())
    relevant = [item for item in ordered if item.score >= floor][:k]
    chosen = {item.memory_id for item in relevant}
    covered = {item.category for item in relevant}
    extras: list[Ranked] = []
    for item in ordered:
        if len(extras) >= unasked:
            break
        if item.memory_id in chosen or item.category in covered:
            continue
        if related_floor is not None and item.score < related_floor:
            break  # best first: nothing after this one is related enough either
        extras.append(item)
        covered.add(item.category)
    returned = len(relevant) + sum(item.score >= floor for item in extras)
    matched = sum(item.score >= floor for item in ordered)
    return Picked(tuple(relevant), tuple(extras), matched - returned)


# ---- the context: why a memory was stored ------------------------------------------------

_KIND_WORDS: dict[Kind, str] = {
    Kind.FACT: "a fact",
    Kind.PREFERENCE: "a preference",
    Kind.EVENT: "an event",
    Kind.PROMISE: "a promise",
    Kind.OPEN_LOOP: "something left open",
    Kind.RELATIONSHIP: "a relationship",
    Kind.THREAD: "a thread the persona follows",
}


def said_where(memory: Memory) -> str | None:
    """Where the sentence it rests on was said, "chat" or "room"; None when nothing in the
    row names a message (written through the API)."""
    for message_id in (memory.source_message_id, *memory.evidence):
        if not message_id:
            continue
        if parse_message_id(message_id) is not None:
            return "chat"
        if room_seq(memory, message_id) is not None:
            return "room"
    return None


def room_seq(memory: Memory, message_id: str) -> int | None:
    """The seq of a line of the memory's room that `message_id` names (`<room>_<seq>`)."""
    if memory.room_id is None or not message_id.startswith(memory.room_id + "_"):
        return None
    tail = message_id[len(memory.room_id) + 1 :]
    return int(tail) if tail.isdigit() and len(tail) <= 10 and int(tail) > 0 else None


def reasoning_for(memory: Memory) -> str:
    """Why the memory was stored, in one line, from the row alone: who said it (or that it
    was inferred), where and when, whether it replaced an earlier version, and what it was
    kept as. Nothing here is invented: each part is a field of the row."""
    where = said_where(memory)
    on = memory.created_at.date().isoformat()
    if memory.stated_by is StatedBy.USER:
        origin = {
            "chat": f"You said it in a chat on {on}",
            "room": f"You said it in a room on {on}",
            None: f"You added it yourself on {on}",
        }[where]
    else:
        origin = {
            "chat": f"Inferred on {on} from what you said in a chat",
            "room": f"Inferred on {on} from what was said in a room",
            None: f"Inferred on {on}",
        }[where]
    if memory.supersedes is not None:
        origin += "; it replaced an earlier version"
    kept = f"Kept as {_KIND_WORDS[memory.kind]} under {memory.category.replace('_', ' ')}"
    return f"{origin}. {kept}."
