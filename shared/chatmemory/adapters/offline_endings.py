"""The offline stand-in's endings, and what one owns: a statement that something ended
("I sold my car", "Sam and I broke up", "I'm no longer vegetarian", "I don't smoke any
more") said back starting with what ended ("Sold their car.", "Broke up with Sam.", "Is
no longer vegetarian."), the object kept with its category and key, so the memory it
ends can be closed under it; and a possession ("I own a flat in Xuhui"), the standing
fact a sale later ends.

Its own module because an ending is read as an act and what it acts on — a verb, then
one of the objects that verb can end, each read by its own reader — not as one pattern
per fact like the standing facts (offline_extractor).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Final

from chatmemory.adapters.offline_dates import NAME, Stated, instant, stated, time_at
from chatmemory.adapters.offline_phrasing import (
    CUT,
    DIETS,
    HEDGED,
    JOBS,
    relation_key,
    restated,
)
from chatmemory.domain.extraction import Candidate, TranscriptLine
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.uses import category_by_words

_PARTNERS = "boyfriend|girlfriend|partner|husband|wife|fiancée?|fiancee"

# What an ending ends, said by what it is. A possession, a plan or a business is one with
# "my", "our" or "the" before it ("sold my car", never "sold cars for a living").
_THING: Final = r"(?i:my|our|the)\s+(?:[\w'\u2019-]+\s+){0,3}?"
_WHOLE: Final = r"(?![\w'\u2019])"  # "car", never "car's tyres"
_HOMES: Final = "flat|apartment|house|home|cottage|villa|studio|condo|place|halls|dorm"
# Capitalised words that open a sentence but never name a person, a place or an employer.
_NOT_A_NAME: Final = (
    r"(?!(?:I|The|A|An|My|Our|So|Well|And|But|Also|Then|Yesterday|Today|Tonight|Last|Finally|"
    r"Oh|Btw|Anyway)\b)"
)
# Groups one belongs to: one leaves the band for good, but leaves the gym every day.
_GROUPS: Final = "band|team|company|firm|startup|agency|army|navy|police|programme|program|PhD"
_EMPLOYERS: Final = frozenset({"company", "firm", "startup", "agency", "army", "navy", "police"})
_STUDIES: Final = frozenset(
    {"programme", "program", "phd", "course", "school", "university", "college", "uni"}
)
_GERUND: Final = re.compile(
    r"(?i:(?!(?:(?:no|some|any|every)thing|morning|evening|wedding|building|ceiling|during|"
    r"thing|king|ring|spring|string|sibling)\b)[a-z]{2,}ing)\b"
)
# A relative time this stand-in does not write out: where what was said of an act stops.
_UNDATED: Final = re.compile(
    r"(?:^|\s+)(?i:(?:last|this|next)\s+\w+|yesterday|today|tonight|recently|lately|earlier|"
    r"again|now|(?:\w+\s+)?(?:days?|weeks?|months?|years?)\s+ago)\b"
)
HABIT_WORDS = 8
ENDING_IMPORTANCE = 6


@dataclass(frozen=True, slots=True)
class _Object:
    """What an ending ends, as said ("my job at Acme"), its category and key, and where
    its words stop in the text it was read from."""

    words: str
    category: str
    key: str | None
    end: int


_Reader = Callable[[str], _Object | None]
_Slot = Callable[[re.Match[str]], tuple[str, str | None]]


def _reader(pattern: str, slot: _Slot) -> _Reader:
    """Reads an object at the start of a text: its words, and the category and key `slot`
    gives them."""
    compiled = re.compile(pattern)

    def read(text: str) -> _Object | None:
        match = compiled.match(text)
        return _Object(match.group(0), *slot(match), match.end()) if match else None

    return read


def _fixed(category: str, key: str | None = None) -> _Slot:
    return lambda _match: (category, key)


def _by_words(match: re.Match[str]) -> tuple[str, str | None]:
    return category_by_words(match.group(0)) or "general", None


def _possession_slot(match: re.Match[str]) -> tuple[str, str | None]:
    return "home" if match["home"] else "finance" if match["money"] else "general", None


def _plan_slot(match: re.Match[str]) -> tuple[str, str | None]:
    if match["trip"]:
        return "travel", None
    if match["wedding"]:
        return "relationships", None
    return ("home", None) if match["lease"] else _by_words(match)


def _group_slot(match: re.Match[str]) -> tuple[str, str | None]:
    noun = (match["group"] or match["bare"]).lower()
    if noun in _EMPLOYERS:
        return "work", "job"
    if noun in _STUDIES:
        return "education", None
    return category_by_words(match.group(0)) or "hobbies", None


_job = _reader(
    r"(?i:my|our)\s+(?:(?i:old|current|full-time|part-time|day|last)\s+)?"
    rf"(?i:job|role|position|post|career){_WHOLE}"
    rf"(?:\s+(?i:at|with|for)\s+{NAME}|\s+(?i:as)\s+(?i:an?)\s+(?i:{JOBS})\b)?",
    _fixed("work", "job"),
)
_work = _reader(rf"(?i:work){_WHOLE}", _fixed("work", "job"))
_employer = _reader(rf"{_NOT_A_NAME}{NAME}", _fixed("work", "job"))
_person = _reader(rf"{_NOT_A_NAME}{NAME}", _fixed("relationships"))
_city = _reader(rf"{_NOT_A_NAME}{NAME}", _fixed("location", "home_city"))
# What one owns and may sell: a home, a holding, a vehicle, a valuable.
_OWNED: Final = (
    rf"(?i:(?P<home>{_HOMES})|(?P<money>shares|stocks?|stake|business|company)|cars?|"
    r"motorbike|motorcycle|bike|scooter|van|truck|boat|shop|farm|land|piano|guitar|camera|"
    rf"laptop|horse){_WHOLE}(?:\s+(?i:in)\s+{NAME})?"
)
_possession = _reader(rf"{_THING}{_OWNED}", _possession_slot)
_plan = _reader(
    rf"{_THING}(?i:(?P<trip>trip|holiday|vacation|honeymoon|flight|visit|tour|booking|"
    r"reservation)|(?P<wedding>wedding|engagement)|(?P<lease>lease|move)|party|subscription|"
    rf"membership|plans|contract|surgery|operation|appointment|gig|concert)s?{_WHOLE}"
    rf"(?:\s+(?i:to|in|with|at)\s+{NAME})?",
    _plan_slot,
)
_left_group = _reader(rf"{_THING}(?P<group>(?i:{_GROUPS})){_WHOLE}(?P<bare>)", _group_slot)
_quit_group = _reader(
    rf"(?:{_THING}(?P<group>(?i:{_GROUPS}|club|gym|choir|orchestra|course|school|university|"
    rf"college|uni))|(?P<bare>(?i:school|university|college|uni))){_WHOLE}",
    _group_slot,
)
_home = _reader(rf"{_THING}(?i:{_HOMES}){_WHOLE}(?:\s+(?i:in)\s+{NAME})?", _fixed("home"))
_business = _reader(
    rf"{_THING}(?i:shop|store|business|company|restaurant|café|cafe|bakery|bar|pub|practice|"
    rf"studio|startup|firm|salon|gallery|(?P<account>(?:bank\s+)?account)){_WHOLE}"
    rf"(?:\s+(?i:in)\s+{NAME})?",
    lambda match: ("finance" if match["account"] else "work", None),
)
_substance = _reader(
    r"(?i:coffee|caffeine|sugar|alcohol|booze|meat|dairy|gluten|chocolate|carbs|cigarettes|"
    rf"vaping|social\s+media){_WHOLE}",
    _by_words,
)


# "I own a flat in Xuhui": what a sale later ends (the room's rule says it the same way).
OWNS: Final = re.compile(
    r"(?i:\bI\s+(?:also\s+|now\s+|still\s+)?own)\s+"
    rf"(?P<thing>(?i:a|an|two|three|some)\s+(?:[\w'\u2019-]+\s+){{0,3}}?{_OWNED})"
)
OWNED_IMPORTANCE = 6


def owned(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
    """ "Owns a flat in Xuhui.": a possession, the standing fact a sale ends."""
    match = OWNS.search(sentence)
    if match is None or HEDGED.search(sentence[: match.start()]):
        return None
    category, _ = _possession_slot(match)
    return Candidate(
        text=restated(f"Owns {match['thing']}")[:200],
        category=category,
        kind=Kind.FACT,
        importance=OWNED_IMPORTANCE,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
    )


def _habit(text: str) -> _Object | None:
    """ "running", "taking my medication", "working at Acme": a doing, up to where what
    was said about it stops (a time, a conjunction)."""
    if _GERUND.match(text) is None:
        return None
    end = _said_until(text)
    words = text[:end].strip()
    if len(words.split()) > HABIT_WORDS:
        return None
    if re.match(rf"(?i:working)\s+(?:(?i:at|for)\s+{NAME}|(?i:as)\s)", words):
        return _Object(words, "work", "job", end)
    if re.fullmatch(rf"(?i:being)\s+(?:(?i:an?)\s+)?(?i:{DIETS})", words):
        return _Object(words, "diet", "diet", end)
    return _Object(words, category_by_words(words) or "general", None, end)


def _partner(text: str) -> _Object | None:
    """ "my boyfriend Sam": a partner, with their name when it is said."""
    match = re.match(
        rf"(?i:my)\s+(?P<relation>(?i:{_PARTNERS})){_WHOLE}(?:,?\s+(?P<name>{_NOT_A_NAME}{NAME}))?",
        text,
    )
    if match is None:
        return None
    relation = match["relation"].lower()
    words = f"my {relation}" + (f" {match['name']}" if match["name"] else "")
    return _Object(words, "relationships", relation_key(relation), match.end())


def _with_someone(text: str) -> _Object | None:
    """ "with my boyfriend Sam", "with Sam": still together, until now."""
    match = re.match(r"(?i:with)\s+", text)
    if match is None:
        return None
    said = _partner(text[match.end() :]) or _person(text[match.end() :])
    if said is None:
        return None
    return _Object(f"with {said.words}", said.category, said.key, match.end() + said.end)


# The act, as the memory starts with it, and what it may end, tried in order.
_ENDS: Final[dict[str, tuple[str, tuple[_Reader, ...]]]] = {
    "sold": ("Sold", (_possession,)),
    "quit": ("Quit", (_job, _quit_group, _habit, _substance)),
    "left": ("Left", (_job, _partner, _left_group)),
    "lost": ("Lost", (_job,)),
    "broke up with": ("Broke up with", (_partner, _person)),
    "broken up with": ("Broke up with", (_partner, _person)),
    "split up with": ("Split up with", (_partner, _person)),
    "cancelled": ("Cancelled", (_plan,)),
    "canceled": ("Cancelled", (_plan,)),
    "called off": ("Called off", (_plan,)),
    "stopped": ("Stopped", (_habit,)),
    "gave up": ("Gave up", (_habit, _substance, _job, _home)),
    "given up": ("Gave up", (_habit, _substance, _job, _home)),
    "gave up on": ("Gave up on", (_habit,)),
    "given up on": ("Gave up on", (_habit,)),
    "moved out of": ("Moved out of", (_home, _city)),
    "divorced": ("Divorced", (_partner, _person)),
    "retired": ("Retired from", (_job, _work, _quit_group, _employer, _habit)),
    "retired from": ("Retired from", (_job, _work, _quit_group, _employer, _habit)),
    "closed": ("Closed", (_business,)),
    "closed down": ("Closed", (_business,)),
}
_ACT: Final = re.compile(
    r"(?i:\b(?:I|we)(?:'ve|\s+have)?\s+(?:(?:just|recently|finally|already|officially|actually|"
    r"also|now|sadly)\s+)*(?P<verb>sold|quit|left|lost|brok(?:e|en)\s+up\s+with|split\s+up\s+with|"
    r"cancell?ed|called\s+off|stopped|(?:gave|given)\s+up(?:\s+on)?|moved\s+out\s+of|divorced|"
    r"retired(?:\s+from)?|closed(?:\s+down)?))\b\s*"
)
# "Sam and I broke up", "my wife and I split up": the other one named first.
_PARTED: Final = re.compile(
    rf"(?:(?i:my)\s+(?P<relation>(?i:{_PARTNERS})){_WHOLE}(?:,?\s+(?P<rel_name>{NAME}),?)?"
    rf"|(?P<name>{_NOT_A_NAME}{NAME}))\s+(?i:and\s+I)\s+(?:(?i:have|'ve)\s+)?"
    r"(?:(?i:just|finally|recently|officially)\s+)?"
    r"(?P<verb>(?i:broke\s+up|split(?:\s+up)?|separated|divorced|got\s+divorced))\b"
)
_PARTED_HEADS: Final = {
    "broke up": "Broke up with",
    "divorced": "Divorced",
    "got divorced": "Divorced",
}
# "I'm no longer vegetarian", "I'm not at Acme any more": a state that ended.
_NO_LONGER_BE: Final = re.compile(
    r"(?i:\bI(?:'m|\s+am)\s+no\s+longer\s+)"
    r"|(?i:\bI(?:'m|\s+am)\s+not\s+)(?=[^,;:!?.]*?\s(?i:any\s?more|any\s+longer)\b)"
)
_NO_LONGER_STATES: Final[tuple[_Reader, ...]] = (
    _reader(rf"(?:(?i:an?)\s+)?(?P<diet>(?i:{DIETS})){_WHOLE}", _fixed("diet", "diet")),
    _reader(
        rf"(?i:(?:working|employed)\s+(?:at|for|by)|at)\s+{NAME}"
        rf"|(?i:an?)\s+(?i:{JOBS})(?:\s+(?i:at|for)\s+{NAME})?|(?i:working|employed){_WHOLE}",
        _fixed("work", "job"),
    ),
    _reader(rf"(?i:(?:living|based)\s+in)\s+{NAME}", _fixed("location", "home_city")),
    _reader(rf"(?i:in)\s+{NAME}", _fixed("location")),
    _with_someone,
    _reader(
        rf"(?i:married|engaged|together|dating\s+anyone|seeing\s+anyone){_WHOLE}",
        _fixed("relationships"),
    ),
    _reader(rf"(?:(?i:an?)\s+)?(?i:smoker|drinker){_WHOLE}", _by_words),
)
# "I no longer work at Acme", "I don't smoke any more": a habit that ended.
_NO_LONGER_DO: Final = re.compile(
    r"(?i:\bI\s+no\s+longer\s+"
    r"|\bI\s+(?:don't|do\s+not)\s+(?=[^,;:!?.]*?\s(?:any\s?more|any\s+longer)\b))"
    r"(?P<verb>(?i:work|live|own|play|drink|smoke|teach|study|attend|volunteer|train|drive))\b"
)
# The words every ending above says: a cheap look before the full reading.
ANY_ENDING: Final = re.compile(
    r"(?i)\b(?:sold|quit|left|lost|brok(?:e|en)\s+up|split|separated|cancell?ed|called\s+off|"
    r"stopped|(?:gave|given)\s+up|moved\s+out|divorced|retired|closed|no\s+longer|any\s?more|"
    r"any\s+longer)\b"
)

_Ending = tuple[str, Kind, _Object, Stated | None]


def ended(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
    """ "Sold their car.", "Broke up with their boyfriend Sam.", "Is no longer vegetarian.":
    what the person said ended, starting with how it ended, the object kept. A one-off act
    is an event, its day written out when stated; a state that ended is a fact."""
    found = (
        _act(sentence, today)
        or _parted(sentence, line.content, today)
        or _no_longer_state(sentence, today)
        or _no_longer_habit(sentence, today)
    )
    if found is None:
        return None
    text, kind, said, when = found
    return Candidate(
        text=text[:200],
        category=said.category,
        kind=kind,
        importance=ENDING_IMPORTANCE,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        key=said.key,
        valid_from=instant(when.day if when else None),
    )


def _act(sentence: str, today: date) -> _Ending | None:
    """ "I quit my job at Acme last week" → "Quit their job at Acme."."""
    match = _ACT.search(sentence)
    if match is None or HEDGED.search(sentence[: match.start()]):
        return None
    head, readers = _ENDS[" ".join(match["verb"].lower().split())]
    rest = sentence[match.end() :]
    said = next((found for read in readers if (found := read(rest)) is not None), None)
    if said is None and head == "Retired from" and not rest[: _said_until(rest)].strip():
        said = _Object("work", "work", "job", 0)  # "I retired last year"
    if said is None:
        return None
    when = _said_when(sentence[: match.start()], rest[said.end :], today)
    return _event(head, said, when)


def _parted(sentence: str, said_in: str, today: date) -> _Ending | None:
    """ "Sam and I broke up" → "Broke up with Sam.". The other one is named before "and I",
    which the clauses split off, so it is looked for in the whole line the clause is from."""
    start = said_in.find(sentence)
    if start < 0:
        said_in, start = sentence, 0
    for match in _PARTED.finditer(said_in):
        if not start <= match.start("verb") < start + len(sentence):
            continue
        if HEDGED.search(said_in[: match.start()]):
            return None
        verb = " ".join(match["verb"].lower().split())
        if match["relation"]:
            relation = match["relation"].lower()
            name = f" {match['rel_name']}" if match["rel_name"] else ""
            said = _Object(f"my {relation}{name}", "relationships", relation_key(relation), 0)
        else:
            said = _Object(match["name"], "relationships", None, 0)
        when = _said_when("", said_in[match.end() : start + len(sentence)], today)
        return _event(_PARTED_HEADS.get(verb, "Split up with"), said, when)
    return None


def _event(head: str, said: _Object, when: Stated | None) -> _Ending:
    phrase = f" {when.phrase}" if when else ""
    return restated(f"{head} {said.words}{phrase}"), Kind.EVENT, said, when


def _no_longer_state(sentence: str, today: date) -> _Ending | None:
    """ "I'm no longer vegetarian" → "Is no longer vegetarian."."""
    match = _NO_LONGER_BE.search(sentence)
    if match is None or HEDGED.search(sentence[: match.start()]):
        return None
    rest = sentence[match.end() :]
    said = next((found for read in _NO_LONGER_STATES if (found := read(rest)) is not None), None)
    if said is None:
        return None
    words = said.words.lower() if said.key == "diet" else said.words
    when = _said_when(sentence[: match.start()], rest[said.end :], today)
    return restated(f"Is no longer {words}"), Kind.FACT, said, when


def _no_longer_habit(sentence: str, today: date) -> _Ending | None:
    """ "I no longer work at Acme" → "No longer works at Acme."."""
    match = _NO_LONGER_DO.search(sentence)
    if match is None or HEDGED.search(sentence[: match.start()]):
        return None
    verb, rest = match["verb"].lower(), sentence[match.end() :]
    key: str | None
    end = _said_until(rest)
    what = rest[:end].strip()
    if verb == "work":
        category, key = "work", "job"
    elif verb == "live":
        home = re.fullmatch(rf"(?i:in)\s+{NAME}", what)
        category, key = "location", "home_city" if home else None
    else:
        category, key = category_by_words(f"{verb} {what}") or "general", None
    does = restated(f"I {verb} {what}")
    when = _said_when(sentence[: match.start()], rest[end:], today)
    return (
        f"No longer {does[:1].lower()}{does[1:]}",
        Kind.FACT,
        _Object(what, category, key, end),
        when,
    )


def _said_until(text: str) -> int:
    """Where what was said about an act stops: a time, punctuation, a conjunction."""
    ends = [len(text)]
    for found in (CUT.search(text), _UNDATED.search(text)):
        if found is not None:
            ends.append(found.start())
    when = time_at(text)
    if when is not None:
        ends.append(when)
    return min(ends)


def _said_when(before: str, after: str, today: date) -> Stated | None:
    """The day an act happened, said after it (up to where the sentence moves on), or
    before it ("Yesterday I sold my car")."""
    cut = CUT.search(after)
    return stated(after[: cut.start()] if cut else after, today, ahead=False) or stated(
        before, today, ahead=False
    )
