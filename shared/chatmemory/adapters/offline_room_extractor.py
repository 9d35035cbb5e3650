"""The offline stand-in's extraction from a persona's seat in a room (seed 000 §2.1):
deterministic rules for the common phrasings, so a room's write runs with no model key.

Every candidate says whom it is about:
- a present human's own line (`u:<id>`): an upcoming event or a request to be followed
  up ("ask me how it went", "remind me …") as an open loop; a home, a vehicle, a business
  or shares owned, bought or sold; else the one-to-one rules' statements ("Lives in
  Pune."), all in the same third-person sentences, without a name;
- the seated persona's own line (`self`): its promise ("I'll send you the letter"), with
  the human it was answering as the counterpart;
- a present human's announcement of a public event ("Odyssey opened on 2026-07-17"):
  `world`.
Other personas' lines, and the seated persona's other words, make nothing. A stated time
is written out as a date in the sentence and fills `valid_from`. The write filter
(`domain/room_extraction.py`) still decides, in code, what may be kept.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

from chatmemory.domain.extraction import (
    Candidate,
    ExtractionInput,
    RoomSeat,
    TranscriptLine,
)
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.restate import third_person
from chatmemory.domain.room_extraction import ROOM_MAX_CANDIDATES
from chatmemory.domain.uses import category_by_words

#: the one-to-one rules' statements in a piece of a human's line, that line as evidence
ReadStatements = Callable[[str, TranscriptLine, date], list[Candidate]]

#: several people's worth in one spell (the room filter reads as many)
ASKED_BACK_IMPORTANCE = 8  # asked outright to be followed up (seed 000's example row)
OPEN_LOOP_IMPORTANCE = 7
PROMISE_IMPORTANCE = 7
WORLD_IMPORTANCE = 4

# ---- stated times ----------------------------------------------------------------------

_WEEKDAYS = {name.lower(): number for number, name in enumerate(calendar.day_name)}
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTH = "|".join(name for name in calendar.month_name if name)
_WEEKDAY = "|".join(calendar.day_name)
# A time this stand-in can turn into a date: a weekday, a relative day, a date, a month.
_WHEN = re.compile(
    rf"\b(?:(?:(?:on|this) )?(?P<weekday>{_WEEKDAY})|(?P<relative>today|tonight|tomorrow|yesterday)"
    rf"|(?:on )?(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})"
    rf"|on (?P<day>\d{{1,2}})(?:st|nd|rd|th)? (?P<month>{_MONTH})(?: (?P<year>\d{{4}}))?"
    rf"|in (?P<month_only>{_MONTH})(?: (?P<month_year>\d{{4}}))?)\b",
    re.IGNORECASE,
)
# A relative time that would mislead months later and cannot be dated here.
_UNDATED = re.compile(r"\s*\b(?:(?:last|this|next) (?:week|weekend|month|year)|recently)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_PLACE = rf"(?!(?:{_MONTH}|{_WEEKDAY})\b)[A-Z][\w'&-]*(?:\s(?!(?:{_MONTH})\b)[A-Z][\w'&-]*)*"

# ---- a human's own line --------------------------------------------------------------

_EVENT_NOUNS = (
    "interview|exam|test|appointment|surgery|operation|audition|presentation|hearing|"
    "recital|concert|pitch|scan|viva|defence|defense|race|match"
)
_UPCOMING = re.compile(
    r"(?i:\bI(?:'ve got| have got| have|'ve| got))\s+"
    rf"(?P<event>(?i:a|an|my|the)\s+(?:[\w-]+\s+){{0,3}}?(?i:{_EVENT_NOUNS}))\b"
    rf"(?P<place>\s+(?i:at|with|for|in)\s+{_PLACE})?"
)
_INTERVIEWING = re.compile(
    r"(?i:\bI(?:'m| am) (?P<doing>interviewing|auditioning|presenting|pitching|testifying))"
    rf"(?P<place>\s+(?i:at|with|for)\s+{_PLACE})?"
)
_ASKED_BACK = re.compile(
    r"(?<!n't )(?<!not )(?<!never )\b(?P<ask>ask me|check in with me|check on me|follow up with me)"
    r"(?P<rest>(?:\s+(?:how|about|on|after|afterwards|tomorrow|later|next|this|when)\b[^.!?;,]*)?)",
    re.IGNORECASE,
)
_PASSIVE = {
    "ask me": "asked to be asked",
    "check in with me": "asked to be checked in with",
    "check on me": "asked to be checked on",
    "follow up with me": "asked to be followed up with",
}
# "Ask me how it went" names nothing on its own: it follows up what was just said.
_ANAPHORIC = re.compile(
    r"^\s*(?:$|how (?:it|that|this|things)\b|about (?:it|that|this)\b|on (?:it|that)\b"
    r"|after(?:wards)?\s*$|later\b|when\b|tomorrow\b|(?:on|this|next) \w+day\b)",
    re.IGNORECASE,
)
_REMIND = re.compile(
    r"(?<!n't )(?<!not )\bremind me (?P<what>(?:to|about|of|that)\b[^.!?;]+)", re.IGNORECASE
)
_HOMES = "flat|apartment|house|home|cottage|villa|studio"
_HOLDINGS = re.compile(
    r"(?i:\bI (?:also |now |still |just |recently )?"
    r"(?P<verb>own|have bought|'ve bought|bought|have sold|'ve sold|sold))\s+"
    r"(?P<thing>(?i:a|an|my|the|our|two|three|some)\s+(?:[\w-]+\s+){0,3}?"
    rf"(?i:(?P<home>{_HOMES})|car|motorbike|bike|boat|shop|farm|land|(?P<money>shares|stock|"
    rf"stake|business|company)))\b(?P<place>\s+in\s+{_PLACE})?"
)

# ---- a present human's announcement of a public event -------------------------------

# A name: a capitalised word first ("Odyssey", "Berkshire's annual report").
_NAME_WORD = r"[A-Z0-9][\w'\u2019.:&-]*"
_WORLD = re.compile(
    rf"(?<![\w'\u2019])(?P<what>(?:[Tt]he\s+)?{_NAME_WORD}(?:\s+[\w'\u2019.:&-]+){{0,4}}?)"
    r"\s+(?P<verb>opened|opens|premiered|premieres|debuted|debuts|came out|comes out|launched|"
    r"launches|has launched|was launched|was released|were released|is released|"
    r"has been released|went on sale|goes on sale)\b"
    r"(?P<rest>[^.!?;,]*?)(?=\s+(?:and|but|so)\b|[,.!?;]|$)"
)
_AHEAD_VERBS = frozenset({"opens", "premieres", "debuts", "comes out", "launches", "goes on sale"})
# Words that open a sentence but never name the thing announced.
_NOT_A_NAME = frozenset(
    (
        *("i", "we", "you", "he", "she", "they", "it", "my", "our", "your", "his", "her"),
        *("their", "this", "that", "these", "those", "so", "well", "oh", "and", "but", "also"),
        *("btw", "guess", "did", "have", "has", "just", "finally", "apparently", "actually"),
        *("hey", "yesterday", "today", "tonight", "tomorrow", "last", "next", "on", "in"),
    )
)
_PERSONAL = re.compile(r"\b(?:I|me|my|mine|we|us|our|you|your)\b", re.IGNORECASE)

# ---- the seated persona's own promise ---------------------------------------------------

_PROMISE = re.compile(
    r"\bI(?:'ll| will| shall|'m going to| am going to| promise to| promise I'll| promise I will)"
    r"\s+(?:also\s+|definitely\s+|make sure to\s+)?(?P<act>(?:send|ask|remind|check|get back|"
    r"follow up|find|look|share|forward|dig|pull|email|write|call|text|bring|let you know)\b"
    r"[^.!?;]*)",
    re.IGNORECASE,
)
# "send you the letter": the counterpart is already named, so the "you" goes.
_GIVE_YOU = re.compile(r"^(?P<verb>send|bring|forward|email|write|text)\s+you\s+(?=\S)", re.I)
_COUNTERPART_PRONOUNS = (
    (re.compile(r"\byourself\b", re.I), "{counterpart}"),
    (re.compile(r"\byours?\b", re.I), "{counterpart}'s"),
    (re.compile(r"\byou\b", re.I), "{counterpart}"),
)
_PERSONA_PRONOUNS = (
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmy\b", re.I), "their own"),
    (re.compile(r"\bme\b", re.I), "them"),
    (re.compile(r"\bI\b"), "they"),
)


@dataclass(frozen=True, slots=True)
class _Stated:
    """A time stated in a sentence: where its words are, as a standalone phrase, its day."""

    start: int
    end: int
    phrase: str
    day: date


def room_candidates(
    request: ExtractionInput, seat: RoomSeat, read_statements: ReadStatements
) -> list[Candidate]:
    """What the seated persona would carry away from the slice, each with its subject;
    nothing at all when no present human spoke."""
    present = frozenset(seat.present)
    if not any(_human(line) in present for line in request.transcript):
        return []
    own = f"p:{seat.persona}"
    candidates: list[Candidate] = []
    pending: dict[str, int] = {}  # speaker → their last open event, for "ask me how it went"
    last_human: str | None = None
    for line in request.transcript:
        if _human(line) in present:
            last_human = line.speaker
            _read_human(line, request.today, read_statements, candidates, pending)
        elif line.speaker == own:
            counterpart = _answering(seat, last_human)
            if counterpart is not None:
                candidates.extend(_promises(line, counterpart, request.today))
    return _distinct(candidates)[:ROOM_MAX_CANDIDATES]


def _human(line: TranscriptLine) -> str | None:
    return line.speaker.removeprefix("u:") if line.speaker.startswith("u:") else None


def _answering(seat: RoomSeat, last_human: str | None) -> str | None:
    """Whom the persona was answering: in a private chat the one person there, in a group
    the last person who spoke before it (or the only one present)."""
    if not seat.group and len(seat.present) == 1:
        return f"u:{seat.present[0]}"
    if last_human is not None:
        return last_human
    return f"u:{seat.present[0]}" if len(seat.present) == 1 else None


def _distinct(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The first of each (subject, counterpart, text): two people may say the same thing."""
    seen: set[tuple[str, str | None, str]] = set()
    kept = []
    for candidate in candidates:
        identity = (candidate.subject, candidate.counterpart, candidate.text)
        if identity not in seen:
            seen.add(identity)
            kept.append(candidate)
    return kept


# ---- a human's line -------------------------------------------------------------------


def _read_human(
    line: TranscriptLine,
    today: date,
    read_statements: ReadStatements,
    candidates: list[Candidate],
    pending: dict[str, int],
) -> None:
    """The room's rules first, sentence by sentence; the one-to-one rules where none fits."""
    for sentence in _SENTENCE.split(line.content.strip()):
        if _follow_up(sentence, line, today, candidates, pending):
            continue
        found = _world_fact(sentence, line, today) or _holding(sentence, line, today)
        if found is not None:
            candidates.append(found)
            continue
        candidates.extend(
            replace(statement, subject=line.speaker)
            for statement in read_statements(sentence, line, today)
        )


def _follow_up(
    sentence: str,
    line: TranscriptLine,
    today: date,
    candidates: list[Candidate],
    pending: dict[str, int],
) -> bool:
    """An upcoming event, a request to be asked back or reminded: open loops about the
    speaker. "Ask me how it went" joins the speaker's last event; alone it says nothing.
    True when the sentence was one of these."""
    made = False
    reminded = _REMIND.search(sentence)
    if reminded:
        text, day = _dated(f"asked to be reminded {reminded['what']}", today, ahead=True)
        candidates.append(_open_loop(third_person(text), line, day, OPEN_LOOP_IMPORTANCE))
        made = True
    event = _event(sentence, today)
    if event is not None:
        pending[line.speaker] = len(candidates)
        candidates.append(_open_loop(event[0], line, event[1], OPEN_LOOP_IMPORTANCE))
        made = True
    asked = _ASKED_BACK.search(sentence)
    if asked is None or (asked["ask"].lower() == "ask me" and not asked["rest"].strip()):
        return made  # "just ask me" offers help; it asks for nothing
    passive = _PASSIVE[asked["ask"].lower()]
    request, day = _dated(passive + asked["rest"].rstrip(), today, ahead=True)
    if not _ANAPHORIC.match(asked["rest"]):
        candidates.append(_open_loop(third_person(request), line, day, ASKED_BACK_IMPORTANCE))
        return True
    index = pending.pop(line.speaker, None)
    if index is not None:
        earlier = candidates[index]
        text = third_person(f"{earlier.text.rstrip('.')} and {request}")
        candidates[index] = replace(
            earlier,
            text=text[:200],
            evidence=tuple(dict.fromkeys((*earlier.evidence, line.message_id))),
            importance=ASKED_BACK_IMPORTANCE,
        )
    return True  # without an event said before, nothing standalone to keep


def _event(sentence: str, today: date) -> tuple[str, date | None] | None:
    """ "Has a job interview at Tencent on Thursday 2026-12-03.", and its day if stated."""
    upcoming = _UPCOMING.search(sentence)
    doing = _INTERVIEWING.search(sentence)
    if upcoming is not None:
        what, place = f"has {upcoming['event']}", upcoming["place"]
    elif doing is not None:
        what, place = f"is {doing['doing'].lower()}", doing["place"]
    else:
        return None
    stated = _stated(sentence, today, ahead=True)
    when = f" {stated.phrase}" if stated else ""
    return third_person(f"{what}{(place or '').rstrip()}{when}"), stated.day if stated else None


def _holding(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
    """ "Owns a flat in Xuhui.", "Sold their Tesla shares in July 2026." (seed 000's rows)."""
    match = _HOLDINGS.search(sentence)
    if match is None:
        return None
    verb = match["verb"].lower().removeprefix("have ").removeprefix("'ve ")
    stated = None if verb == "own" else _stated(sentence[match.end() :], today, ahead=False)
    when = f" {stated.phrase}" if stated else ""
    said = "owns" if verb == "own" else verb
    text = third_person(f"{said} {match['thing']}{(match['place'] or '').rstrip()}{when}")
    return Candidate(
        text=text[:200],
        category="home" if match["home"] else "finance" if match["money"] else "general",
        kind=Kind.FACT if verb == "own" else Kind.EVENT,
        importance=5 if verb == "sold" else 6,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        valid_from=_instant(stated.day if stated else None),
        subject=line.speaker,
    )


def _open_loop(text: str, line: TranscriptLine, day: date | None, importance: int) -> Candidate:
    return Candidate(
        text=text[:200],
        category=category_by_words(text) or "schedule",
        kind=Kind.OPEN_LOOP,
        importance=importance,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        valid_from=_instant(day),
        subject=line.speaker,
    )


# ---- a world fact ---------------------------------------------------------------------


def _world_fact(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
    """ "Nolan's Odyssey opened on 2026-07-17.": a public event, not the speaker's news."""
    match = _WORLD.search(sentence)
    if match is None or _PERSONAL.search(match["what"] + match["rest"]):
        return None
    words = match["what"].split()
    while words and words[0].casefold() in _NOT_A_NAME:
        words.pop(0)  # "Yesterday Apple launched …" announces Apple's launch
    head = words[1:2] if words[:1] == ["The"] else words[:1]  # "The new album" names nothing
    if not head or not (head[0][:1].isupper() or head[0][:1].isdigit()):
        return None
    ahead = match["verb"] in _AHEAD_VERBS
    rest, day = _dated(_UNDATED.sub("", match["rest"]).rstrip(), today, ahead=ahead)
    if day is None:  # "Yesterday Apple launched …": the time came before the name
        stated = _stated(sentence[: match.start("verb")], today, ahead=ahead)
        rest, day = (f"{rest} {stated.phrase}", stated.day) if stated else (rest, None)
    text = f"{' '.join(words)} {match['verb']}{rest}."
    return Candidate(
        text=text[:200],
        category=category_by_words(text) or "general",
        kind=Kind.EVENT,
        importance=WORLD_IMPORTANCE,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        valid_from=_instant(day),
        subject="world",
    )


# ---- the persona's promise ------------------------------------------------------------


def _promises(line: TranscriptLine, counterpart: str, today: date) -> list[Candidate]:
    """ "Promised u:dan to send the 1988 shareholder letter.", one per promise said."""
    made = []
    for match in _PROMISE.finditer(line.content):
        act, day = _dated(_GIVE_YOU.sub(r"\g<verb> ", match["act"].strip()), today, ahead=True)
        text = " ".join(f"Promised {counterpart} to {_from_the_persona(act, counterpart)}".split())
        made.append(
            Candidate(
                text=text.rstrip(",:- ")[:199] + ".",
                category=category_by_words(text) or "general",
                kind=Kind.PROMISE,
                importance=PROMISE_IMPORTANCE,
                stated_by=StatedBy.USER,
                evidence=(line.message_id,),
                valid_from=_instant(day),
                subject="self",
                counterpart=counterpart,
            )
        )
    return made


def _from_the_persona(act: str, counterpart: str) -> str:
    """The persona's words about what it will do, "you" named by id and "my" its own."""
    for pattern, template in (*_COUNTERPART_PRONOUNS, *_PERSONA_PRONOUNS):
        words = template.format(counterpart=counterpart)
        act = pattern.sub(lambda _match: words, act)  # noqa: B023 - used at once, in the loop
    return act


# ---- stated times ---------------------------------------------------------------------


def _dated(text: str, today: date, *, ahead: bool) -> tuple[str, date | None]:
    """`text` with its first stated time written out as a date ("on Thursday" → "on
    Thursday 2026-12-03"), and that date; unchanged and None when none is stated."""
    stated = _stated(text, today, ahead=ahead)
    if stated is None:
        return text, None
    return text[: stated.start] + stated.phrase + text[stated.end :], stated.day


def _stated(text: str, today: date, *, ahead: bool) -> _Stated | None:
    """The first time `text` states that names a real day; a bare weekday or month is the
    next one when the sentence looks `ahead`, else the last one."""
    for match in _WHEN.finditer(text):
        day = _day(match, today, ahead=ahead)
        if day is not None:
            return _Stated(match.start(), match.end(), _phrase(match, day), day)
    return None


def _day(match: re.Match[str], today: date, *, ahead: bool) -> date | None:
    groups = match.groupdict()
    day: date | None = None
    try:
        if groups["weekday"]:
            weekday = _WEEKDAYS[groups["weekday"].lower()]
            on = (weekday - today.weekday()) % 7 or 7  # the next one, never today
            back = (today.weekday() - weekday) % 7 or 7  # the last one, never today
            day = today + timedelta(days=on) if ahead else today - timedelta(days=back)
        elif groups["relative"]:
            shift = {"yesterday": -1, "tomorrow": 1}.get(groups["relative"].lower(), 0)
            day = today + timedelta(days=shift)
        elif groups["iso"]:
            day = date.fromisoformat(groups["iso"])
        elif groups["month"]:
            year = int(groups["year"]) if groups["year"] else today.year
            day = date(year, _MONTHS[groups["month"].lower()], int(groups["day"]))
        else:
            day = _month(groups["month_only"], groups["month_year"], today, ahead=ahead)
    except ValueError:  # "on 31 February"
        return None
    return day


def _month(name: str, year: str | None, today: date, *, ahead: bool) -> date:
    """The first day of a named month: of the year given, else the next such month when
    the sentence looks ahead, else the last one."""
    month = _MONTHS[name.lower()]
    if year:
        return date(int(year), month, 1)
    if ahead:
        return date(today.year if month >= today.month else today.year + 1, month, 1)
    return date(today.year if month <= today.month else today.year - 1, month, 1)


def _phrase(match: re.Match[str], day: date) -> str:
    if match["month_only"]:
        return f"in {calendar.month_name[day.month]} {day.year}"
    if match["weekday"] or match["relative"]:
        return f"on {calendar.day_name[day.weekday()]} {day.isoformat()}"
    return f"on {day.isoformat()}"


def _instant(day: date | None) -> datetime | None:
    return datetime.combine(day, time(), tzinfo=UTC) if day else None
