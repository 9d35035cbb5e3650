"""The offline stand-in's extraction from a persona's seat in a room (seed 000 §2.1):
deterministic rules for the common phrasings, so a room's write runs with no model key.

Every candidate says whom it is about:
- a present human's own line (`u:<id>`): a request to be followed up ("ask me how it
  went", "remind me …") as an open loop, with the event it follows up; an ongoing concern
  of theirs — a job interview, a house hunt, an event ahead — as a thread, its news as a
  beat of the thread already followed, its conclusion as a fact (offline_threads); a home,
  a vehicle, a business or shares owned, bought or sold; else the one-to-one rules'
  statements ("Lives in Pune."), all in the same third-person sentences, without a name;
- the seated persona's own line (`self`): its promise ("I'll send you the letter"), with
  the human it was answering as the counterpart;
- a present human's announcement of a public event ("Odyssey opened on 2026-07-17"):
  `world`.
Other personas' lines, and the seated persona's other words, make nothing. A stated time
is written out as a date in the sentence and fills `valid_from`. The write filter
(`domain/room_extraction.py`) still decides, in code, what may be kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date

from chatmemory.adapters.offline_dates import (
    NAME,
    dated,
    instant,
    stated,
)
from chatmemory.adapters.offline_threads import (
    FollowedThread,
    Item,
    StoryReader,
    clauses,
    materialise,
)
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

# A relative time that would mislead months later and cannot be dated here.
_UNDATED = re.compile(r"\s*\b(?:(?:last|this|next) (?:week|weekend|month|year)|recently)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_PLACE = NAME

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
class _Event:
    """A speaker's upcoming event read as a thread, which "ask me how it went" in a later
    line may still turn into the open loop they asked for."""

    thread: FollowedThread
    text: str  # "Has a job interview on Thursday 2026-12-03."
    day: date | None
    message_id: str


#: a speaker's last event: an open loop already made (its place), or a thread
Pending = dict[str, int | _Event]


def room_candidates(
    request: ExtractionInput, seat: RoomSeat, read_statements: ReadStatements
) -> list[Candidate]:
    """What the seated persona would carry away from the slice, each with its subject;
    nothing at all when no present human spoke."""
    present = frozenset(seat.present)
    if not any(_human(line) in present for line in request.transcript):
        return []
    own = f"p:{seat.persona}"
    story = StoryReader(request.threads, request.today, room=True)
    items: list[Item] = []
    pending: Pending = {}  # speaker → their last event, for "ask me how it went"
    last_human: str | None = None
    for line in request.transcript:
        if _human(line) in present:
            last_human = line.speaker
            _read_human(line, request.today, read_statements, items, pending, story=story)
        elif line.speaker == own:
            counterpart = _answering(seat, last_human)
            if counterpart is not None:
                items.extend(_promises(line, counterpart, request.today))
    return _distinct(materialise(items))[:ROOM_MAX_CANDIDATES]


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
    items: list[Item],
    pending: Pending,
    *,
    story: StoryReader,
) -> None:
    """Sentence by sentence: an explicit ask first (an open loop, as asked); then, clause
    by clause, the person's concerns (threads), the room's rules, the one-to-one rules."""
    for sentence in _SENTENCE.split(line.content.strip()):
        if _follow_up(sentence, line, today, items, pending, story=story):
            continue
        for clause in clauses(sentence):
            reading = story.read(clause, line)
            items.extend(reading.items)
            event = _event(clause, today)
            if reading.thread is not None and event is not None:
                pending[line.speaker] = _Event(reading.thread, *event, line.message_id)
            if reading.consumed:
                continue
            found = _world_fact(clause, line, today) or _holding(clause, line, today)
            if found is not None:
                items.append(found)
                continue
            items.extend(
                replace(statement, subject=line.speaker)
                for statement in read_statements(clause, line, today)
            )


def _follow_up(
    sentence: str,
    line: TranscriptLine,
    today: date,
    items: list[Item],
    pending: Pending,
    *,
    story: StoryReader,
) -> bool:
    """A request to be asked back or reminded, and the event said with it: open loops
    about the speaker (the promise kind binds every character), never also a thread.
    "Ask me how it went" joins the speaker's last event; alone it says nothing. True when
    the sentence asked; an event said without an ask is left to the threads."""
    reminded = _REMIND.search(sentence)
    asked = _ASKED_BACK.search(sentence)
    if asked is not None and asked["ask"].lower() == "ask me" and not asked["rest"].strip():
        asked = None  # "just ask me" offers help; it asks for nothing
    if reminded is None and asked is None:
        return False
    if reminded:
        text, day = dated(f"asked to be reminded {reminded['what']}", today, ahead=True)
        items.append(_open_loop(third_person(text), line, day, OPEN_LOOP_IMPORTANCE))
    event = _event(sentence, today)
    if event is not None:
        pending[line.speaker] = len(items)
        items.append(_open_loop(event[0], line, event[1], OPEN_LOOP_IMPORTANCE))
    if asked is None:
        return True
    passive = _PASSIVE[asked["ask"].lower()]
    request, day = dated(passive + asked["rest"].rstrip(), today, ahead=True)
    if not _ANAPHORIC.match(asked["rest"]):
        items.append(_open_loop(third_person(request), line, day, ASKED_BACK_IMPORTANCE))
        return True
    _join(pending.pop(line.speaker, None), request, line, items, story)
    return True  # without an event said before, nothing standalone to keep


def _join(
    earlier: int | _Event | None,
    request: str,
    line: TranscriptLine,
    items: list[Item],
    story: StoryReader,
) -> None:
    """ "… and asked to be asked how it went": the speaker's last event becomes (or was
    already) the open loop they asked for, resting on both lines."""
    if isinstance(earlier, int):
        loop = items[earlier]
        if isinstance(loop, Candidate):
            text = third_person(f"{loop.text.rstrip('.')} and {request}")
            items[earlier] = replace(
                loop,
                text=text[:200],
                evidence=tuple(dict.fromkeys((*loop.evidence, line.message_id))),
                importance=ASKED_BACK_IMPORTANCE,
            )
    elif earlier is not None:
        story.take_back(earlier.thread)
        text = third_person(f"{earlier.text.rstrip('.')} and {request}")
        joined = replace(
            _open_loop(text, line, earlier.day, ASKED_BACK_IMPORTANCE),
            evidence=tuple(dict.fromkeys((earlier.message_id, line.message_id))),
        )
        place = next((i for i, item in enumerate(items) if item is earlier.thread), None)
        if place is None:
            items.append(joined)
        else:
            items[place] = joined


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
    when = stated(sentence, today, ahead=True)
    said = f" {when.phrase}" if when else ""
    return third_person(f"{what}{(place or '').rstrip()}{said}"), when.day if when else None


def _holding(sentence: str, line: TranscriptLine, today: date) -> Candidate | None:
    """ "Owns a flat in Xuhui.", "Sold their Tesla shares in July 2026." (seed 000's rows)."""
    match = _HOLDINGS.search(sentence)
    if match is None:
        return None
    verb = match["verb"].lower().removeprefix("have ").removeprefix("'ve ")
    when = None if verb == "own" else stated(sentence[match.end() :], today, ahead=False)
    said_when = f" {when.phrase}" if when else ""
    said = "owns" if verb == "own" else verb
    text = third_person(f"{said} {match['thing']}{(match['place'] or '').rstrip()}{said_when}")
    return Candidate(
        text=text[:200],
        category="home" if match["home"] else "finance" if match["money"] else "general",
        kind=Kind.FACT if verb == "own" else Kind.EVENT,
        importance=5 if verb == "sold" else 6,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        valid_from=instant(when.day if when else None),
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
        valid_from=instant(day),
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
    rest, day = dated(_UNDATED.sub("", match["rest"]).rstrip(), today, ahead=ahead)
    if day is None:  # "Yesterday Apple launched …": the time came before the name
        before = stated(sentence[: match.start("verb")], today, ahead=ahead)
        rest, day = (f"{rest} {before.phrase}", before.day) if before else (rest, None)
    text = f"{' '.join(words)} {match['verb']}{rest}."
    return Candidate(
        text=text[:200],
        category=category_by_words(text) or "general",
        kind=Kind.EVENT,
        importance=WORLD_IMPORTANCE,
        stated_by=StatedBy.USER,
        evidence=(line.message_id,),
        valid_from=instant(day),
        subject="world",
    )


# ---- the persona's promise ------------------------------------------------------------


def _promises(line: TranscriptLine, counterpart: str, today: date) -> list[Candidate]:
    """ "Promised u:dan to send the 1988 shareholder letter.", one per promise said."""
    made = []
    for match in _PROMISE.finditer(line.content):
        act, day = dated(_GIVE_YOU.sub(r"\g<verb> ", match["act"].strip()), today, ahead=True)
        text = " ".join(f"Promised {counterpart} to {_from_the_persona(act, counterpart)}".split())
        made.append(
            Candidate(
                text=text.rstrip(",:- ")[:199] + ".",
                category=category_by_words(text) or "general",
                kind=Kind.PROMISE,
                importance=PROMISE_IMPORTANCE,
                stated_by=StatedBy.USER,
                evidence=(line.message_id,),
                valid_from=instant(day),
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
