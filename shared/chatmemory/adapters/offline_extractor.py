"""The offline stand-in's extraction and routing: deterministic rules for what people most
often say about themselves, so the write pipeline runs end to end with no model key. The
person's ongoing concerns come first (offline_threads: a thread, a beat of one already
followed, the fact that concludes one), with the report of each thread the persona raised.
In a room the same rules read each present human's lines, beside the room's own rules
(offline_room_extractor).

Besides standing facts ("Lives in Pune."), two shapes matter for what comes after them:
- a fact with an end date ("I'm in Lisbon until Friday"): its time written out in the
  sentence, and `valid_until` the day after, so reads drop it once it is over;
- an ending ("I sold my car", "I'm no longer vegetarian"): a sentence that starts with
  what ended ("Sold their car.", "Is no longer vegetarian."), so the memory it ends can
  be closed under it.

It reads every user line — pasted documents included — on purpose: keeping planted text
out is the write filter's job, in code, whatever a model proposes.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from chatmemory.adapters.offline_dates import (
    NAME,
    Period,
    Stated,
    instant,
    period,
    stated,
    time_at,
)
from chatmemory.adapters.offline_room_extractor import room_candidates
from chatmemory.adapters.offline_threads import (
    Item,
    StoryReader,
    clauses,
    materialise,
    thread_reports,
)
from chatmemory.domain.cadence import asks_to_remember_conversation
from chatmemory.domain.extraction import (
    Candidate,
    ExtractionInput,
    ExtractionResult,
    TranscriptLine,
)
from chatmemory.domain.ids import normalise_for_identity
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.restate import third_person
from chatmemory.domain.routing import Action, Neighbour, RouteDecision
from chatmemory.domain.uses import CATEGORY_KEYS, category_by_words

_NAME = r"([A-Z][\w'-]+(?:\s[A-Z][\w'-]+)?)"
_PLACE = r"([A-Z][\w'-]+(?:[ -][A-Z][\w'-]+)*)"
_RELATIONS = (
    "wife|husband|partner|son|daughter|mother|mom|mum|father|dad|sister|brother|boyfriend|"
    "girlfriend|fiancée?|best friend"
)
_PETS = "dog|cat|puppy|kitten|parrot|rabbit|hamster|horse|tortoise"
_DIETS = (
    "vegetarian|vegan|pescatarian|lactose intolerant|gluten[- ]free|teetotal|keto|celiac|coeliac"
)
_JOBS = (
    "(?:senior |junior |lead |staff |principal )?(?:software engineer|engineer|developer|"
    "teacher|doctor|nurse|designer|student|product manager|manager|analyst|data scientist|"
    "lawyer|accountant|researcher|writer|architect|consultant|pharmacist|chef)"
)
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_PARTNERS = "boyfriend|girlfriend|partner|husband|wife|fiancée?|fiancee"


def _rules() -> list[tuple[re.Pattern[str], str]]:
    """(pattern, kind of statement); the first rule that reads a statement in a sentence
    wins. The phrases are case-insensitive; names and places must be capitalised, so they
    end where they should."""
    place = f"(?P<place>{_PLACE[1:-1]})"
    name = f"(?P<name>{_NAME[1:-1]})"
    return [
        (
            re.compile(
                r"(?i:\b(?:please\s+)?(?:remember|don't forget|do not forget|keep in mind)(?:\s+that)?)[,:]?\s+(?P<fact>.+)$"
            ),
            "remember",
        ),
        # Before the standing facts: "I'm living in Lisbon until March" is not a home.
        (_BE, "end_dated"),
        (re.compile(rf"(?i:\bI(?:'m| am) (?:a |an )?(?P<diet>{_DIETS}))\b"), "diet"),
        (
            re.compile(
                r"(?i:\bI (?:don't|do not|never) eat (?P<food>meat|pork|beef|fish|eggs|dairy|chicken|seafood))\b"
            ),
            "avoids",
        ),
        (
            re.compile(r"(?i:\bI(?:'m| am) allergic to (?P<allergen>[\w\s-]+?))\s*(?:[,.!;]|$)"),
            "allergy",
        ),
        (
            re.compile(
                rf"(?i:\bI(?:'ve| have)?\s*(?:just |recently )?(?:moved|relocated) to) {place}"
            ),
            "moved",
        ),
        (_ANY_ENDING, "ending"),
        (_OWNS, "owns"),
        (
            re.compile(
                rf"(?i:\bI (?:also |now |currently |still )?(?:live|am living|'m living|am based|'m based) in) {place}"
            ),
            "lives",
        ),
        (
            re.compile(
                rf"(?i:\bI (?:also |now |currently |still )?(?:work|am working|'m working) as (?:a |an )?)(?P<role>[a-z][\w\s]*?)(?:(?i: at| for) {place})?\s*(?:[,.!;]|$)"
            ),
            "works",
        ),
        (
            re.compile(
                rf"(?i:\bI(?:'m| am) (?:a |an )(?P<role>{_JOBS}))(?:(?i: at| for) {place})?\b"
            ),
            "works",
        ),
        (
            re.compile(
                rf"(?i:\bI (?:also |now |currently |still )?(?:work|am working|'m working) (?:at|for)) {place}"
            ),
            "works",
        ),
        (
            re.compile(
                rf"(?i:\bmy (?P<relation>{_RELATIONS})(?:'s name is| is called| is named|,| named))\s+{name}"
            ),
            "family",
        ),
        (
            re.compile(r"(?i:\bI have (?P<count>\w+) (?P<kids>kids|children|sons|daughters))\b"),
            "kids",
        ),
        (
            re.compile(
                rf"(?i:\bmy (?P<pet>{_PETS})(?:'s name is| is called| is named|,| named))\s+{name}"
            ),
            "pet",
        ),
        (re.compile(rf"(?i:\bI have an? (?P<pet>{_PETS}) (?:called|named))\s+{name}"), "pet"),
        (
            re.compile(
                r"(?i:\bI(?:'m| am) (?:preparing|studying|revising) for (?:the |my )?)(?P<exam>[\w\s-]+?)(?i: exams?)?(?: in (?P<month>[A-Z][a-z]+)(?: (?P<year>\d{4}))?)?\s*(?:[,.!;]|$)"
            ),
            "exam",
        ),
    ]


# ---- a fact with an end date ------------------------------------------------------------

# Saying how one is, now or ahead: the state comes after it, its time with it.
_BE: Final = re.compile(
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
_DANGLING: Final = frozenset(
    """as of since from by before after starting until till to at in on for the a an my our
    and or but with about next this last coming every each around""".split()  # noqa: SIM905 - a reviewed word list reads best as prose
)
# Where what was said about a state or an act stops: punctuation, a conjunction.
_CUT: Final = re.compile(
    r"[,;:!?.]|\s+(?i:and|but|so|because|since|after|when|while|though|although|then|until|"
    r"till|before|if|for\s+(?:good|now|a\s+while|ever|years|months|weeks|days)|forever|"
    r"altogether|completely|entirely|any\s?more|any\s+longer)\b"
)
_COMPLEMENT: Final = re.compile(r"^\s+(?i:for|with|to|in|at|from)\s+\S")
_HEDGED: Final = re.compile(
    r"(?i)\b(?:if|whether|unless|should|would|could|might|maybe|perhaps|probably|hopefully|"
    r"not\s+sure|unsure|wonder|wondering|hope|wish)\b"
)
STATE_WORDS = 10
COMPLEMENT_WORDS = 6
END_DATED_IMPORTANCE = 6


def _end_dated(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
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
    said = _restated(f"I am {state} {when.phrase}{tail}")
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
    subjects = list(_BE.finditer(sentence, 0, when.start))
    subject = subjects[-1] if subjects else None  # the one the time is said of
    if subject is None or _HEDGED.search(sentence[: subject.start()]):
        return None
    state = sentence[subject.end() : when.start].strip()
    if not _plain_state(state):
        return None
    rest = sentence[when.end :]
    cut = _CUT.search(rest)
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
    subject = _BE.match(rest)
    if subject is None:
        return None
    state = rest[subject.end() :]
    cut = _CUT.search(state)
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


# ---- an ending --------------------------------------------------------------------------

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
    rf"(?:\s+(?i:at|with|for)\s+{NAME}|\s+(?i:as)\s+(?i:an?)\s+(?i:{_JOBS})\b)?",
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
_OWNS: Final = re.compile(
    r"(?i:\bI\s+(?:also\s+|now\s+|still\s+)?own)\s+"
    rf"(?P<thing>(?i:a|an|two|three|some)\s+(?:[\w'\u2019-]+\s+){{0,3}}?{_OWNED})"
)
OWNED_IMPORTANCE = 6


def _owned(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
    """ "Owns a flat in Xuhui.": a possession, the standing fact a sale ends."""
    match = _OWNS.search(sentence)
    if match is None or _HEDGED.search(sentence[: match.start()]):
        return None
    category, _ = _possession_slot(match)
    return Candidate(
        text=_restated(f"Owns {match['thing']}")[:200],
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
    if re.fullmatch(rf"(?i:being)\s+(?:(?i:an?)\s+)?(?i:{_DIETS})", words):
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
    return _Object(words, "relationships", _relation_key(relation), match.end())


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
    _reader(rf"(?:(?i:an?)\s+)?(?P<diet>(?i:{_DIETS})){_WHOLE}", _fixed("diet", "diet")),
    _reader(
        rf"(?i:(?:working|employed)\s+(?:at|for|by)|at)\s+{NAME}"
        rf"|(?i:an?)\s+(?i:{_JOBS})(?:\s+(?i:at|for)\s+{NAME})?|(?i:working|employed){_WHOLE}",
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
_ANY_ENDING: Final = re.compile(
    r"(?i)\b(?:sold|quit|left|lost|brok(?:e|en)\s+up|split|separated|cancell?ed|called\s+off|"
    r"stopped|(?:gave|given)\s+up|moved\s+out|divorced|retired|closed|no\s+longer|any\s?more|"
    r"any\s+longer)\b"
)

_Ending = tuple[str, Kind, _Object, Stated | None]


def _ended(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
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
    if match is None or _HEDGED.search(sentence[: match.start()]):
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
        if _HEDGED.search(said_in[: match.start()]):
            return None
        verb = " ".join(match["verb"].lower().split())
        if match["relation"]:
            relation = match["relation"].lower()
            name = f" {match['rel_name']}" if match["rel_name"] else ""
            said = _Object(f"my {relation}{name}", "relationships", _relation_key(relation), 0)
        else:
            said = _Object(match["name"], "relationships", None, 0)
        when = _said_when("", said_in[match.end() : start + len(sentence)], today)
        return _event(_PARTED_HEADS.get(verb, "Split up with"), said, when)
    return None


def _event(head: str, said: _Object, when: Stated | None) -> _Ending:
    phrase = f" {when.phrase}" if when else ""
    return _restated(f"{head} {said.words}{phrase}"), Kind.EVENT, said, when


def _no_longer_state(sentence: str, today: date) -> _Ending | None:
    """ "I'm no longer vegetarian" → "Is no longer vegetarian."."""
    match = _NO_LONGER_BE.search(sentence)
    if match is None or _HEDGED.search(sentence[: match.start()]):
        return None
    rest = sentence[match.end() :]
    said = next((found for read in _NO_LONGER_STATES if (found := read(rest)) is not None), None)
    if said is None:
        return None
    words = said.words.lower() if said.key == "diet" else said.words
    when = _said_when(sentence[: match.start()], rest[said.end :], today)
    return _restated(f"Is no longer {words}"), Kind.FACT, said, when


def _no_longer_habit(sentence: str, today: date) -> _Ending | None:
    """ "I no longer work at Acme" → "No longer works at Acme."."""
    match = _NO_LONGER_DO.search(sentence)
    if match is None or _HEDGED.search(sentence[: match.start()]):
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
    does = _restated(f"I {verb} {what}")
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
    for found in (_CUT.search(text), _UNDATED.search(text)):
        if found is not None:
            ends.append(found.start())
    when = time_at(text)
    if when is not None:
        ends.append(when)
    return min(ends)


def _said_when(before: str, after: str, today: date) -> Stated | None:
    """The day an act happened, said after it (up to where the sentence moves on), or
    before it ("Yesterday I sold my car")."""
    cut = _CUT.search(after)
    return stated(after[: cut.start()] if cut else after, today, ahead=False) or stated(
        before, today, ahead=False
    )


_ACRONYM: Final = re.compile(r"\b[A-Z]{2,}\b")


def _restated(statement: str) -> str:
    """`third_person`, with the names written in capitals kept as said: "the US" is a
    country, never "us"."""
    kept = _ACRONYM.findall(statement)
    text = third_person(_ACRONYM.sub("\x00", statement))
    for name in kept:
        text = text.replace("\x00", name, 1)
    return text


def _relation_key(relation: str) -> str:
    """ "family_fiancee": a key is plain ASCII, whatever the relation's accents."""
    plain = unicodedata.normalize("NFKD", relation).encode("ascii", "ignore").decode()
    return "family_" + re.sub(r"\W+", "_", plain.lower())


_RULES = _rules()
# The rules that read the whole sentence themselves, past their first look.
_READERS: Final[dict[str, Callable[[str, TranscriptLine, date], Candidate | None]]] = {
    "end_dated": _end_dated,
    "ending": _ended,
    "owns": _owned,
}
# Statements that a fact stopped being true, with nothing said to replace it: the endings
# above, each closing the fact with its key.
_ENDS_A_FACT = re.compile(
    r"^(?:Sold|Quit|Left|Lost|Broke up with|Split up with|Cancelled|Called off|Is no longer|"
    r"No longer|Stopped|Gave up|Moved out of|Divorced|Retired from|Closed)\b",
    re.I,
)


class OfflineExtractor:
    """Deterministic extraction and routing for the offline model."""

    def extract(self, request: ExtractionInput) -> ExtractionResult:
        """The common statements of the user's lines, and the report of each known thread
        the persona raised; in a room, from the persona's seat (offline_room_extractor),
        each candidate with its subject."""
        if request.seat is not None:
            candidates = room_candidates(request, request.seat, self._statements)
        else:
            candidates = self._one_to_one(request)
        return ExtractionResult(tuple(candidates), thread_reports(request))

    def _one_to_one(self, request: ExtractionInput) -> list[Candidate]:
        """Clause by clause: the user's concerns first, then the statements."""
        story = StoryReader(request.threads, request.today, room=False)
        items: list[Item] = []
        for line in request.transcript:
            if line.role != "user":
                continue
            for clause in clauses(line.content):
                reading = story.read(clause, line)
                items.extend(reading.items)
                if not reading.consumed:
                    items.extend(self._statements(clause, line, request.today))
        candidates: list[Candidate] = []
        for candidate in materialise(items):
            if all(c.text != candidate.text for c in candidates):
                candidates.append(candidate)
        return candidates[: request.max_candidates]  # a deep read may keep more

    def route(self, candidate: Candidate, neighbours: Sequence[Neighbour]) -> RouteDecision:
        said = normalise_for_identity(candidate.text)
        for neighbour in neighbours:
            if normalise_for_identity(neighbour.memory.text) == said:
                return RouteDecision(Action.NONE)
        same_key = [n for n in neighbours if candidate.key and n.memory.key == candidate.key]
        if not same_key:
            return RouteDecision(Action.ADD)
        newest = max(same_key, key=lambda n: n.memory.created_at)
        if _ENDS_A_FACT.match(candidate.text):
            return RouteDecision(Action.CLOSE, newest.number)
        return RouteDecision(Action.UPDATE, newest.number)

    def _statements(self, text: str, line: TranscriptLine, today: date) -> list[Candidate]:
        """The statement each sentence of `text` makes, in order, `line` as evidence."""
        found = []
        for sentence in clauses(text):
            candidate = self._candidate(sentence, line, today)
            if candidate:
                found.append(candidate)
        return found

    def _candidate(self, sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
        if asks_to_remember_conversation(sentence):
            return None  # "remember this conversation" asks for a deep read, says no fact
        for pattern, kind in _RULES:
            match = pattern.search(sentence)
            if match is None:
                continue
            read = _READERS.get(kind)
            candidate = (
                read(sentence, line, today) if read else _build(kind, match, sentence, line, today)
            )
            if candidate:
                return candidate
        return None


def _build(
    kind: str, match: re.Match[str], sentence: str, line: TranscriptLine, today: date
) -> Candidate | None:
    groups = match.groupdict()
    start = datetime.combine(today, time(), tzinfo=UTC)
    text, category, key, importance = "", "general", None, 6
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    if kind == "remember":
        text = third_person(groups["fact"])
        category = category_by_words(text) or "general"
        key, importance = CATEGORY_KEYS.get(category), 7
    elif kind == "diet":
        text, category, key, importance = f"Is {groups['diet'].lower()}.", "diet", "diet", 7
    elif kind == "avoids":
        food = groups["food"].lower()
        text, category, key, importance = f"Doesn't eat {food}.", "diet", f"avoids_{food}", 6
    elif kind == "allergy":
        allergen = groups["allergen"].strip().lower()
        text, category, importance = f"Is allergic to {allergen}.", "diet", 8
        key = "allergy_" + re.sub(r"\W+", "_", allergen)[:40]
    elif kind in ("moved", "lives"):
        place = groups["place"]
        text, category, key, importance = f"Lives in {place}.", "location", "home_city", 7
        valid_from = start if kind == "moved" else None
    elif kind == "works":
        role, place = (groups.get("role") or "").strip(), groups.get("place")
        phrase = f"Works as {_article(role)} {role}" if role else "Works"
        text = f"{phrase} at {place}." if place else f"{phrase}."
        category, key, importance = "work", "job", 6
    elif kind == "family":
        relation, name = groups["relation"].lower(), groups["name"]
        text, category, importance = f"Their {relation} is called {name}.", "family", 7
        key = _relation_key(relation)
    elif kind == "kids":
        text, category, key, importance = (
            f"Has {groups['count']} {groups['kids']}.",
            "family",
            "kids",
            7,
        )
    elif kind == "pet":
        pet, name = groups["pet"].lower(), groups["name"]
        text, category, importance = f"Has {_article(pet)} {pet} named {name}.", "pets", 6
        key = f"pet_{name.lower()}"
    elif kind == "exam":
        exam = groups["exam"].strip()
        month = groups.get("month")
        when = _month_end(month, groups.get("year"), today) if month else None
        text = f"Is preparing for {exam}" + (f", in {month} {when.year}." if when else ".")
        category, key, importance = "education", "exam", 7
        valid_until = (
            datetime.combine(when, time(), tzinfo=UTC) + timedelta(days=1) if when else None
        )
    if not text:
        return None
    return Candidate(
        text=text[:200],
        category=category,
        kind=Kind.FACT,
        importance=importance,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        key=key,
        valid_from=valid_from,
        valid_until=valid_until,
    )


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _month_end(month: str, year: str | None, today: date) -> date | None:
    number = _MONTHS.get(month.lower())
    if number is None:
        return None
    chosen = int(year) if year else (today.year if number >= today.month else today.year + 1)
    return date(chosen, number, calendar.monthrange(chosen, number)[1])
