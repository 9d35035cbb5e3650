"""The persona block (seed 000 §3): what a persona holds in mind in a room. Pure.

Letta's always-in block with a character limit, filled by the generative agents' ranking:
the audience rule (`audience.py`) decides which rows may be seen; this module ranks them,
takes the few that fit and renders them as one system block. It is built at room open and
rebuilt on a join or a leave, never per turn, so every turn of a room sends the same bytes
and the cached prefix survives. The same input therefore always renders the same text:
every order below is total (score, then newest, then id; humans by user id).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from chatmemory.domain import fading, rules
from chatmemory.domain.audience import Visible
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.prompt import one_line
from chatmemory.domain.sensitive import is_sensitive
from chatmemory.domain.threads import shown_threads
from chatmemory.domain.time import require_utc, to_month

# The seed's starting points, borrowed from the sources; the exam tunes them (seed 000 §8).
# Recency decays per day since a memory was last loaded (Generative Agents decay per game
# hour at 0.995; this is a chat app, not a sandbox).
RECENCY_DECAY_PER_DAY: Final = 0.98
# Memories per present human (and for the world); Graphiti's search limit, Kindroid's 3/5/9.
PER_HUMAN: Final = 10
# Characters per persona block: smaller than Letta's 2,000-5,000 because N personas times M
# humans share one cached prefix.
CHARS_LIMIT: Final = 1200
# Kindroid's diversity rule: at most this many of one kind before the rest.
PER_KIND_FIRST_PASS: Final = 2
# The threads' share of the block (seed 004: the 1,200-char budget stands): two or so
# lines with their ages and notes, so following a story never crowds the facts out.
THREAD_CHARS: Final = 400

# They are the reason initiative exists: a follow-up the persona owes, or was asked for.
RIDERS: Final = frozenset({Kind.OPEN_LOOP, Kind.PROMISE})
WORLD: Final = "world"  # the heading of the section every present human shares

_SECONDS_PER_DAY: Final = 86_400
_USER_PREFIX: Final = "u:"
_OPEN: Final = "<persona_memory>"
_CLOSE: Final = "</persona_memory>"
# The tail rule: what the persona does with a memory, never a list it should recite.
_TAIL: Final = (
    "Know these as a friend would: let them shape what you say and ask, follow up an "
    "open loop or a promise when the moment fits, keep a confidence line for that "
    "person alone, and never recite them."
)
# Said only when the block follows someone's story (seed 004 §4, laws 1 and 5).
_THREADS_TAIL: Final = (
    "The threads are parts of their story you follow: raise at most one, only at a moment "
    "that invites it, by its details exactly as written, and only as its note allows."
)
_THREADS_HEADING: Final = "threads you're following:"
#: how the block's last frame line starts on a reunion (seed 004 ③)
CUE_PREFIX: Final = "When you first speak here: "
#: what a turn adds after the room's last line while that cue is still to be acted on
OPENING_TURN: Final = "(Your first words since they came back: open as the reunion cue says.)"
_TAGS: Final = {Kind.OPEN_LOOP: "open loop", Kind.PROMISE: "promise"}
_ARC_ENDED: Final = frozenset({Status.CLOSED, Status.SUPERSEDED})


@dataclass(frozen=True, slots=True)
class ThreadSeat:
    """A thread taken into the block, with its line as rendered on the day it was built
    (its age and what the moment allows)."""

    item: Visible
    line: str


@dataclass(frozen=True, slots=True)
class Section:
    """One present human's part of the block (or the world's): their note, their lines,
    and under them the threads of their story the persona follows."""

    heading: str  # "u:<user id>" or "world"
    note: str = ""
    lines: tuple[Visible, ...] = ()
    threads: tuple[ThreadSeat, ...] = ()


@dataclass(frozen=True, slots=True)
class PersonaBlock:
    """The rendered block, what it loaded and how full it is (Letta's meter)."""

    persona: str
    text: str
    memory_ids: tuple[str, ...]  # what was loaded: the caller touches their last_recalled
    chars_current: int
    chars_limit: int

    @property
    def meter(self) -> str:
        """`312 / 1200`: what the human's page shows beside the persona."""
        return f"{self.chars_current} / {self.chars_limit}"


# ---- rank ----------------------------------------------------------------------------


def recency(memory: Memory, now: datetime) -> float:
    """0.98 per day since the memory was last loaded (or written, if never loaded)."""
    since = memory.last_used_at or memory.created_at
    days = max(0.0, (now - since).total_seconds() / _SECONDS_PER_DAY)
    return float(RECENCY_DECAY_PER_DAY**days)


def score(
    visible: Sequence[Visible], *, now: datetime, relevance: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Each memory id's score: recency + importance/10 + relevance, each min-max normalised
    over these candidates, equal weights (so each term is 0..1 and the sum 0..3).

    `relevance` is the cosine to the room's opener or topic by memory id; absent means 0.
    """
    now = require_utc("now", now)
    cosines = relevance or {}
    memories = [v.memory for v in visible]
    columns = (
        _min_max([recency(m, now) for m in memories]),
        _min_max([m.importance / 10 for m in memories]),
        _min_max([cosines.get(m.memory_id, 0.0) for m in memories]),
    )
    # Retention (seed 003) weighs on the sum: a belief fading out of use yields its seat
    # to an equally strong one that is not.
    return {
        m.memory_id: (recent + important + relevant) * fading.ranking_weight(m, now)
        for m, recent, important, relevant in zip(memories, *columns, strict=True)
    }


def rank(
    visible: Sequence[Visible], *, now: datetime, relevance: Mapping[str, float] | None = None
) -> list[Visible]:
    """The candidates best first; ties go to the newer memory, then the smaller id, so the
    order never depends on the order they arrived in."""
    scores = score(visible, now=now, relevance=relevance)
    return sorted(
        visible,
        key=lambda v: (
            -scores[v.memory.memory_id],
            -v.memory.created_at.timestamp(),
            v.memory.memory_id,
        ),
    )


def diversify(ranked: Sequence[Visible]) -> list[Visible]:
    """At most PER_KIND_FIRST_PASS of each kind in rank order, then the rest in rank order."""
    first: list[Visible] = []
    rest: list[Visible] = []
    taken: dict[Kind, int] = {}
    for item in ranked:
        kind = item.memory.kind
        if taken.get(kind, 0) < PER_KIND_FIRST_PASS:
            taken[kind] = taken.get(kind, 0) + 1
            first.append(item)
        else:
            rest.append(item)
    return first + rest


def _min_max(values: Sequence[float]) -> list[float]:
    """0..1 over the candidates; a column that does not vary tells them apart by nothing."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return [0.0 for _ in values]
    return [(value - low) / (high - low) for value in values]


# ---- take ----------------------------------------------------------------------------


def heading_of(memory: Memory) -> str | None:
    """The section a row belongs to: its subject's `u:` id, a self row's counterpart, or
    the world's; None for a self row with no one to be with."""
    if memory.subject == WORLD:
        return WORLD
    whom = memory.counterpart if memory.subject == "self" else memory.subject
    return whom if whom and whom.startswith(_USER_PREFIX) else None


def take(
    present: frozenset[str],
    ranked: Sequence[Visible],
    *,
    notes: Mapping[str, str],
    chars_limit: int = CHARS_LIMIT,
    now: datetime | None = None,
    asked_here_today: bool = False,
) -> tuple[Section, ...]:
    """The sections to render: per present human (and the world) their note, their open
    loops and promises, then the top PER_HUMAN after the diversity pass, within
    `chars_limit` characters of rendered lines (`render_body`).

    A note always rides, even past the limit. Open loops and promises are taken before
    the facts, as many as fit, best first, and take seats first (past PER_HUMAN if there
    are more). The rest fill what is left, one from each section in turn, so a human
    with many memories cannot crowd out another; a line too long for what is left is
    skipped and a shorter one after it may still fit. A row whose
    human is not present is not taken (the audience rule already drops it; this is the
    second lock).

    Threads (seed 004) are not ranked with the facts: first of all, each human's threads
    that the day lets the block show (`threads.shown_threads`, as of `now`; what invites
    first) take seats within THREAD_CHARS of the limit — their share, so a store full of
    promises cannot crowd the story out, nor the story the rest: riders and facts keep at
    least what is left.
    """
    headings = [_USER_PREFIX + user for user in sorted(present)] + [WORLD]
    by_heading: dict[str, list[Visible]] = {heading: [] for heading in headings}
    threads_of: dict[str, list[Visible]] = {heading: [] for heading in headings}
    for item in ranked:
        heading = heading_of(item.memory)
        if heading in by_heading:
            target = threads_of if item.memory.kind is Kind.THREAD else by_heading
            target[heading].append(item)
    chosen: dict[str, list[Visible]] = {heading: [] for heading in headings}
    seated: dict[str, list[ThreadSeat]] = {heading: [] for heading in headings}
    section_notes = {
        _USER_PREFIX + user: note for user, note in notes.items() if user in present and note
    }

    def sections() -> tuple[Section, ...]:
        return tuple(
            Section(
                heading,
                section_notes.get(heading, ""),
                tuple(chosen[heading]),
                tuple(seated[heading]),
            )
            for heading in headings
        )

    def fits(heading: str, item: Visible) -> bool:
        chosen[heading].append(item)
        if len(render_body(sections())) <= chars_limit:
            return True
        chosen[heading].pop()
        return False

    if now is not None:
        _seat_threads(
            threads_of,
            seated,
            sections,
            now=now,
            asked_here_today=asked_here_today,
            chars_limit=chars_limit,
        )
    riders = [item for item in ranked if item.memory.kind in RIDERS]
    for item in riders:
        heading = heading_of(item.memory)
        if heading in chosen:
            fits(heading, item)
    queues = {heading: _the_rest(items) for heading, items in by_heading.items()}
    for round_ in range(PER_HUMAN):
        for heading in headings:
            if round_ < len(queues[heading]):
                fits(heading, queues[heading][round_])
    return sections()


def _seat_threads(
    threads_of: Mapping[str, list[Visible]],
    seated: dict[str, list[ThreadSeat]],
    sections: Callable[[], tuple[Section, ...]],
    *,
    now: datetime,
    asked_here_today: bool,
    chars_limit: int,
) -> None:
    """Each human's shown threads, what invites first, within THREAD_CHARS of thread lines
    and the block's limit; a line that does not fit is skipped (never clipped: a cut
    anchor is worse than no thread)."""
    used = 0
    for heading, items in threads_of.items():
        confidence = {item.memory.memory_id: item for item in items}
        views = shown_threads(
            [item.memory for item in items], now.date(), asked_here_today=asked_here_today
        )
        for view in views:
            line = view.line
            if used + len(line) + 1 > THREAD_CHARS:
                continue
            seated[heading].append(ThreadSeat(confidence[view.memory.memory_id], line))
            if len(render_body(sections())) > chars_limit:
                seated[heading].pop()
                continue
            used += len(line) + 1


def _the_rest(items: Sequence[Visible]) -> list[Visible]:
    """A section's seats left after its riders, filled in diversity order."""
    others = [item for item in items if item.memory.kind not in RIDERS]
    seats = max(0, PER_HUMAN - (len(items) - len(others)))
    return diversify(others)[:seats]


# ---- render --------------------------------------------------------------------------


def render(persona: str, sections: Sequence[Section], cue: str | None = None) -> str:
    """The block's text: its frame (header, tail rule) around the sections' lines; "" when
    no section holds anything, so an empty block costs nothing. With threads, the tail
    says how to raise one; with a `cue` (the return greeting, seed 004 ③), the frame ends
    with how to open."""
    body = render_body(sections)
    if not body:
        return ""
    header = f"What {persona} remembers (know it; don't announce it)"
    frame = [_OPEN, header, body, _TAIL]
    if any(section.threads for section in sections):
        frame.append(_THREADS_TAIL)
    if cue:
        frame.append(f"{CUE_PREFIX}{one_line(cue)}")
    return "\n".join([*frame, _CLOSE])


def render_body(sections: Sequence[Section]) -> str:
    """The sections' lines: what the character limit and the meter count (Letta's
    `chars_current` counts a block's value, not the frame around it).

    Every stored word passes `one_line`, as in the other prompt blocks: a memory or a
    note cannot close the block, open another, or add a line (a fake heading) of its own.
    """
    lines: list[str] = []
    for section in sections:
        if not section.note and not section.lines and not section.threads:
            continue
        lines.append(section.heading)
        if section.note:
            lines.append(note_line(section.note))
        lines.extend(render_line(item) for item in section.lines)
        if section.threads:
            lines.append(_THREADS_HEADING)
            lines.extend(seat.line for seat in section.threads)
    return "\n".join(lines)


def note_line(note: str) -> str:
    """How a user's note reads in the block (and how a stale block is recognised)."""
    return f"- Their note, in their words: {one_line(note)}"


def render_line(item: Visible) -> str:
    """`- <text> (<date> · <tags>)`: the date it became true, or its arc once it ended;
    for a belief with a short shelf life, the day it falls due."""
    memory = item.memory
    tags = [when(memory)]
    if memory.kind in _TAGS:
        tags.append(_TAGS[memory.kind])
    if item.confidence:
        tags.append("confidence")
    if memory.status is Status.ACTIVE and fading.short_lived(memory):
        # The shelf life as a date, not "2 days left": the block is sent byte for byte
        # until it is rebuilt, and a date stays true (seed 003's due_in).
        tags.append(f"due {fading.due_at(memory).strftime('%Y-%m-%d')}")
    return f"- {one_line(memory.text)} ({' · '.join(tags)})"


def when(memory: Memory) -> str:
    """`2026-07-14` (valid_from, else when it was written); a closed arc at month
    precision, `2026-07 → 2026-11`, so "owned a flat" reads with both ends."""
    if memory.status in _ARC_ENDED and memory.valid_from and memory.valid_to:
        return f"{to_month(memory.valid_from)} → {to_month(memory.valid_to)}"
    return (memory.valid_from or memory.created_at).strftime("%Y-%m-%d")


# ---- build ---------------------------------------------------------------------------


def build_persona_block(
    persona: str,
    present: frozenset[str],
    visible: Sequence[Visible],
    *,
    notes: Mapping[str, str],
    now: datetime,
    relevance: Mapping[str, float] | None = None,
    chars_limit: int = CHARS_LIMIT,
    asked_here_today: bool = False,
    cue: str | None = None,
) -> PersonaBlock:
    """The persona's block for the humans in the room now: ranked, diversified, taken
    within `chars_limit` characters of lines, rendered, with its meter.

    Threads among `visible` are shown as the day `now` allows them (`asked_here_today`: a
    thread was raised in this room today already); `cue` is the return greeting's line
    for a reunion.

    `visible` is the audience rule's output; `present` the user ids in the room; `notes`
    each present user's memory note (user id → note), for the users whose switches let
    this persona remember them; `relevance` the cosine to the room's opener or topic by
    memory id, when there is one.
    """
    rules.persona(persona)
    rules.int_range("chars_limit", chars_limit, 1)
    # Always in the block, so never a sensitive memory (used only when directly relevant).
    in_use = [
        v
        for v in _unique(visible)
        if fading.archived(v.memory, now) is None and not is_sensitive(v.memory)
    ]
    ranked = rank(in_use, now=now, relevance=relevance)
    sections = take(
        present,
        ranked,
        notes=notes,
        chars_limit=chars_limit,
        now=now,
        asked_here_today=asked_here_today,
    )
    return PersonaBlock(
        persona=persona,
        text=render(persona, sections, cue),
        memory_ids=tuple(
            memory_id
            for s in sections
            for memory_id in (
                *(item.memory.memory_id for item in s.lines),
                *(seat.item.memory.memory_id for seat in s.threads),
            )
        ),
        chars_current=len(render_body(sections)),
        chars_limit=chars_limit,
    )


def _unique(visible: Sequence[Visible]) -> list[Visible]:
    """One entry per memory id: a row passed twice keeps its `confidence` copy (the cautious
    reading), else its latest version, so duplicates cannot make the text follow input order."""
    seen: dict[str, Visible] = {}
    for item in visible:
        earlier = seen.get(item.memory.memory_id)
        if earlier is None or _precedence(item) > _precedence(earlier):
            seen[item.memory.memory_id] = item
    return list(seen.values())


def _precedence(item: Visible) -> tuple[bool, datetime]:
    return item.confidence, item.memory.updated_at
