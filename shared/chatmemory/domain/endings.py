"""Endings: a statement that something stopped being true closes the memory it ends. Pure.

"Sold their flat in Xuhui." ends "Owns a flat in Xuhui."; "Quit their job at Acme." ends
"Works as a nurse at Acme."; "Broke up with Sam." ends "Is dating Sam."; "Cancelled their
trip to Japan." ends "Is travelling to Japan in March."; "Is no longer vegetarian." ends
"Is vegetarian.". Seed 000: the old row is closed — `valid_to`, `closed_by` the ending —
never deleted, so the arc stays readable ("owned a flat 2026-07 → 2026-11"). The rule is
code, not a model's choice, so every write path closes alike, the offline stand-in too.

What an ending ends is judged by its object: the words after the verb ("flat", "Xuhui")
must all be said by the memory (a name, when the object names one, is enough), the memory
must be a standing belief (a fact, a preference, a relationship or an open loop: a past
event stays true, a story in progress has its own ending), and the verb must fit what it
ends (one sells what one owns, quits what one does).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Final

from chatmemory.domain.memory import Kind, Memory, Status

# The verb at the start of an ending, as the extractor and a person write one.
_ENDING: Final = re.compile(
    r"^\s*(?:(?:has|have|just|recently|finally)\s+)*(?P<verb>sold|quit|left|broke up with|"
    r"split up with|separated from|cancell?ed|called off|stopped|gave up|moved out of|"
    r"divorced|retired from|closed|ended|lost|(?:is|are|am)\s+no longer|no longer|"
    r"(?:is|are|am)\s+not\s+(?:\w+\s+)?any\s*more)\b\s*(?P<object>.*)$",
    re.IGNORECASE,
)
# Words that say nothing about what ended: determiners, possessives, small words, times.
_FILLER: Final = frozenset(
    """
    a an the their his her my our your its this that these those some any of in at on to
    for with from by and or up off out about after before since last this next week month
    year yesterday today ago recently just finally now anymore any more all old former
    previous current entire whole own also too very
    """.split()  # noqa: SIM905 - a word list reads better as prose
)
# What one owns, does, is with or plans, by the verb that ends it.
_OWNING: Final = re.compile(r"^(?:owns?|has|have|bought|drives?|keeps?|rents?)\b", re.I)
_DOING: Final = re.compile(
    r"^(?:works?|is (?:a|an|the)|is employed|is studying|studies|plays|is a member|"
    r"volunteers|runs|teaches|goes to|attends|is part of|sings|trains|lives|is based|"
    r"is (?:working|training|learning))\b",
    re.I,
)
_WITH: Final = re.compile(
    r"\b(?:dating|married|engaged|partner|boyfriend|girlfriend|husband|wife|fianc[ée]e?|"
    r"seeing|lives with|in a relationship|together)\b",
    re.I,
)
_PLANS: Final = re.compile(
    r"\b(?:plan(?:s|ning)?|trip|travel(?:l?ing)?|flight|going|visit(?:ing)?|booked|"
    r"wedding|party|holiday|vacation|subscription|membership|appointment|will|is getting)\b",
    re.I,
)
# Each verb with what it may end (None: anything whose words it names).
_FITS: Final[dict[str, re.Pattern[str] | None]] = {
    "sold": _OWNING,
    "gave up": None,
    "quit": _DOING,
    "left": None,  # a job, a club, a city
    "retired from": _DOING,
    "lost": None,
    "broke up with": _WITH,
    "split up with": _WITH,
    "separated from": _WITH,
    "divorced": _WITH,
    "cancelled": _PLANS,
    "called off": _PLANS,
    "stopped": None,
    "moved out of": None,
    "closed": None,
    "ended": None,
    "no longer": None,
}
# Standing beliefs an ending can end; events stay true, threads have their own ending.
_ENDABLE: Final = frozenset({Kind.FACT, Kind.PREFERENCE, Kind.RELATIONSHIP, Kind.OPEN_LOOP})
_CALENDAR: Final = frozenset(
    name.lower() for name in (*calendar.month_name[1:], *calendar.day_name)
)
# A memory that already says a thing is not done agrees with an ending, never ends by it
# ("Gave up meat." does not end "Doesn't eat meat.").
_NEGATED: Final = re.compile(r"\b(?:not|never|no|doesn't|don't|isn't|won't|can't|cannot)\b", re.I)
_WORD: Final = re.compile(r"[\w'\u2019-]+")
# "job" ends whatever work a person does: "Quit their job." ends "Works as a nurse."
_WORK_NOUNS: Final = frozenset({"job", "work", "position", "role", "career", "employer"})


@dataclass(frozen=True, slots=True)
class Ending:
    """What a sentence says stopped: its verb ("sold", "no longer") and its object's
    words (lower case), with the names among them."""

    verb: str
    words: frozenset[str]
    names: frozenset[str]


def ending_of(text: str) -> Ending | None:
    """The ending a sentence states, or None when it states none (or names nothing)."""
    match = _ENDING.match(text)
    if match is None:
        return None
    verb = " ".join(match["verb"].lower().split())
    if verb.endswith("no longer") or verb.endswith("more"):
        verb = "no longer"
    elif verb.startswith("cancel"):
        verb = "cancelled"
    said = [w for w in _WORD.findall(match["object"]) if not _filler(w)]
    words = frozenset(_stem(w) for w in said)
    names = frozenset(_stem(w) for w in said if w[:1].isupper())
    if not words:
        return None
    return Ending(verb, words, names)


def ends(ending: Ending, ended_by: Memory, memory: Memory) -> bool:
    """Whether `ended_by` (a memory saying `ending`) ends `memory`: same person, a
    standing belief still held, not an ending itself, of the kind the verb ends, and
    naming what the ending names."""
    if (
        memory.memory_id == ended_by.memory_id
        or memory.status is not Status.ACTIVE
        or memory.kind not in _ENDABLE
        or memory.subject != ended_by.subject
        or memory.persona != ended_by.persona
        or ending_of(memory.text) is not None
        or _NEGATED.search(memory.text)
    ):
        return False
    text = memory.text
    said = {_stem(w) for w in _WORD.findall(text)}
    fits = _FITS.get(ending.verb)
    at_work = bool(ending.words & _WORK_NOUNS) and _is_work(memory)
    if fits is not None and not fits.search(text) and not at_work:
        return False
    if at_work:
        return (ending.words - _WORK_NOUNS) <= said  # "at Acme" must be said too
    if ending.names and ending.names <= said:
        return True
    return ending.words <= said


def _is_work(memory: Memory) -> bool:
    return memory.key == "job" or memory.category == "work" or bool(_DOING.match(memory.text))


def _filler(word: str) -> bool:
    """A word that says nothing about what ended: a small word, a number, a month or a
    weekday ("Sold their Tesla shares in July 2026" ends the shares, whenever)."""
    folded = word.lower()
    return folded in _FILLER or folded in _CALENDAR or not any(c.isalpha() for c in folded)


def _stem(word: str) -> str:
    """A word as both sentences compare it: lower case, without a plural or possessive
    "s" ("flats" and "flat", "Sam's" and "Sam")."""
    folded = word.lower().replace("\u2019", "'").removesuffix("'s")
    if len(folded) > 3 and folded.endswith("s") and not folded.endswith("ss"):
        folded = folded[:-1]
    return folded
