"""The offline stand-in's facts with an end date: a state said with the time it ends ("I'm
in Lisbon until Friday", "travelling to Goa next week", "for the summer"), that time
written out in the sentence and `valid_until` the day after it, so reads drop the memory
once it is over.

Its own module because it reads a sentence its own way: the time first
(offline_dates.period), then the state said before or after it, where a standing fact's
rule takes one look. The rule table (offline_extractor) tries it before the standing
facts: "I'm living in Lisbon until March" is not a home.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Final

from chatmemory.adapters.offline_dates import Period, instant, period, time_at
from chatmemory.adapters.offline_phrasing import CUT, HEDGED, restated
from chatmemory.domain.extraction import Candidate, TranscriptLine
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.uses import category_by_words

# Saying how one is, now or ahead: the state comes after it, its time with it.
BE: Final = re.compile(
    r"(?i:\b(?:I|we)(?P<be>'m|'re|\s+am|\s+are|'ll\s+be|\s+will\s+be"
    r"|(?:'m|\s+am|'re|\s+are)\s+going\s+to\s+be))\s+"
)
# The states that hold for a while and then end, by what they are about. A trip leads to a
# place, a person or a visit, never to a verb ("going to quit").
_TRIP: Final = re.compile(
    r"(?i:travell?ing|flying|going|heading|driving|sailing|off)(?:\s+(?i:back))?"
    r"\s+(?:(?i:to)\s+(?=[A-Z]|(?i:the|my|our|a|an|see|visit|stay)\b)|(?i:home)\b)"
    r"|(?i:going\s+\w+ing|travell?ing|flying|away|abroad|visiting|out\s+of\s+town"
    r"|on\s+(?:holiday|vacation|a\s+trip|tour))\b"
    r"|(?i:(?:staying\s+)?in)\s+[A-Z]"
)
_STAYS: Final[tuple[tuple[re.Pattern[str], str | None], ...]] = (
    (_TRIP, "travel"),
    (re.compile(r"(?i:working|interning|volunteering|teaching)\b"), "work"),
    (re.compile(r"(?i:studying)\b(?!\s+(?i:for)\b)"), "education"),  # an exam is its own rule
    (re.compile(r"(?i:living|based|moving|relocating)\b"), "location"),
    (re.compile(r"(?i:staying|at|off\s+work|on\s+leave|house-sitting|looking\s+after)\b"), None),
)
# Where health shows, the category says so: the write filter keeps it only when asked.
_HEALTH: Final = re.compile(
    r"(?i)\b(?:hospital|clinic|rehab|sick|ill|surgery|treatment|chemo|therapy|recovering|"
    r"doctor|doctor's|dentist|GP|physio)\b"
)
# A state cut off before its time ("in Lisbon from", "at Acme every") says something else.
# (SIM905 allowed: a reviewed word list reads best as prose.)
_DANGLING: Final = frozenset(
    """as of since from by before after starting until till to at in on for the a an my our
    and or but with about next this last coming every each around""".split()  # noqa: SIM905
)
_COMPLEMENT: Final = re.compile(r"^\s+(?i:for|with|to|in|at|from)\s+\S")
STATE_WORDS = 10
COMPLEMENT_WORDS = 6
END_DATED_IMPORTANCE = 6


def end_dated(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
    """ "Is in Lisbon until Friday 2026-12-11.": a state said with the time it ends, that
    time written out and `valid_until` the day after it. A state with two times, or cut
    off before its time, is left alone: the stand-in does not guess which one ends it."""
    when = period(sentence, today)
    if when is None:
        return None
    read = _state_before(sentence, when) or _state_after(sentence, when)
    if read is None:
        return None
    state, future, tail = read
    category = _stay_category(state)
    if category is None:
        return None
    said = restated(f"I am {state} {when.phrase}{tail}")
    text = f"Will be {said[3:]}" if future else said
    return Candidate(
        text=text[:200],
        category="health"
        if _HEALTH.search(state) or category_by_words(state) == "health"
        else category,
        kind=Kind.FACT,
        importance=END_DATED_IMPORTANCE,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        valid_until=instant(when.over_on),
    )


def _state_before(sentence: str, when: Period) -> tuple[str, bool, str] | None:
    """ "I'm in Lisbon | until Friday | for work": the state, whether it is ahead, and
    what completes it after the time."""
    subjects = list(BE.finditer(sentence, 0, when.start))
    subject = subjects[-1] if subjects else None  # the one the time is said of
    if subject is None or HEDGED.search(sentence[: subject.start()]):
        return None
    state = sentence[subject.end() : when.start].strip()
    if not _plain_state(state):
        return None
    rest = sentence[when.end :]
    cut = CUT.search(rest)
    complement = rest[: cut.start()] if cut else rest
    if time_at(complement) is not None:
        return None  # a second time: which one ends it is not said
    keep = _COMPLEMENT.match(complement) and len(complement.split()) <= COMPLEMENT_WORDS
    return state, _ahead(subject), complement.rstrip() if keep else ""


def _state_after(sentence: str, when: Period) -> tuple[str, bool, str] | None:
    """ "Next week | I'm flying to Goa": the time opens the sentence, the state follows."""
    if sentence[: when.start].strip():
        return None
    rest = sentence[when.end :].lstrip(" ,")
    subject = BE.match(rest)
    if subject is None:
        return None
    state = rest[subject.end() :]
    cut = CUT.search(state)
    state = (state[: cut.start()] if cut else state).strip()
    return (state, _ahead(subject), "") if _plain_state(state) else None


def _plain_state(state: str) -> bool:
    words = state.split()
    return (
        0 < len(words) <= STATE_WORDS
        and not re.search(r"[,;:]", state)
        and words[-1].lower() not in _DANGLING
        and time_at(state) is None
    )


def _ahead(subject: re.Match[str]) -> bool:
    return bool(re.search(r"(?i)\bbe$", subject["be"]))


def _stay_category(state: str) -> str | None:
    """The category of a state that holds for a while; None when it is not one."""
    for pattern, category in _STAYS:
        if pattern.match(state):
            return category or category_by_words(state) or "general"
    return None
