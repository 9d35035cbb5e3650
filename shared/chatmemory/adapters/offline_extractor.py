"""The offline stand-in's extraction and routing: deterministic rules for what people most
often say about themselves, so the write pipeline runs end to end with no model key. The
person's ongoing concerns come first (offline_threads: a thread, a beat of one already
followed, the fact that concludes one), with the report of each thread the persona raised.
In a room the same rules read each present human's lines, beside the room's own rules
(offline_room_extractor).

Besides standing facts ("Lives in Pune."), two shapes matter for what comes after them,
each read in its own module and tried from the rule table here:
- a fact with an end date ("I'm in Lisbon until Friday"): its time written out in the
  sentence, and `valid_until` the day after, so reads drop it once it is over
  (offline_end_dates);
- an ending ("I sold my car", "I'm no longer vegetarian"): a sentence that starts with
  what ended ("Sold their car.", "Is no longer vegetarian."), so the memory it ends can
  be closed under it; and what one owns, which a sale ends (offline_endings).

It reads every user line — pasted documents included — on purpose: keeping planted text
out is the write filter's job, in code, whatever a model proposes.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from chatmemory.adapters.offline_end_dates import BE, end_dated
from chatmemory.adapters.offline_endings import ANY_ENDING, OWNS, ended, owned
from chatmemory.adapters.offline_phrasing import DIETS, JOBS, relation_key
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
from chatmemory.domain.standing import key_of, standing_key
from chatmemory.domain.uses import CATEGORY_KEYS, category_by_words

_NAME = r"([A-Z][\w'-]+(?:\s[A-Z][\w'-]+)?)"
_PLACE = r"([A-Z][\w'-]+(?:[ -][A-Z][\w'-]+)*)"
_RELATIONS = (
    "wife|husband|partner|son|daughter|mother|mom|mum|father|dad|sister|brother|boyfriend|"
    "girlfriend|fiancée?|best friend"
)
_PETS = "dog|cat|puppy|kitten|parrot|rabbit|hamster|horse|tortoise"
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}


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
        (BE, "end_dated"),
        (re.compile(rf"(?i:\bI(?:'m| am) (?:a |an )?(?P<diet>{DIETS}))\b"), "diet"),
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
        (ANY_ENDING, "ending"),
        (OWNS, "owns"),
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
                rf"(?i:\bI(?:'m| am) (?:a |an )(?P<role>{JOBS}))(?:(?i: at| for) {place})?\b"
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


_RULES = _rules()
# The rules that read the whole sentence themselves, past their first look.
_READERS: Final[dict[str, Callable[[str, TranscriptLine, date], Candidate | None]]] = {
    "end_dated": end_dated,
    "ending": ended,
    "owns": owned,
}
# Statements that a fact stopped being true, with nothing said to replace it: the endings
# (offline_endings), each closing the fact with its key.
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
        fact = standing_key(candidate.key, candidate.text)  # a key, or what the words state
        same_key = [
            n
            for n in neighbours
            if (candidate.key and n.memory.key == candidate.key)
            or (fact is not None and key_of(n.memory) == fact)
        ]
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
        key = relation_key(relation)
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
