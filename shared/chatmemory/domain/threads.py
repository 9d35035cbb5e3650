"""Threads (seed 004): the parts of a person's story a persona follows, and its manners. Pure.

A thread is a memory row of kind `thread`; its manners live in the row's `meta`
(`ThreadMeta`). The laws that keep caring from curdling into nagging (seed 004 §4) are
plain transitions and questions over dates here, so each is checked in code:

- a deflection sleeps a thread DEFLECTION_SLEEP x its rhythm; the second leaves it for the
  person to reopen (law 2);
- a resolved thread is acknowledged once (`acknowledged`), then silent; one gone stale is
  silent even if never acknowledged (law 3);
- a thread quiet past STALE_AFTER x its rhythm is never raised (law 4); `ripeness` says so
  before the nightly review has run, so the block reads the same on either side of it;
- one ask per room per day, whichever persona asks (law 8).

Dormant threads stay rows, listed to the person like any memory, but the block leaves them
out: the block is what the persona might raise. If the person raises one, recall finds the
row and its arc.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, TypeVar

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.events import Op
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.prompt import one_line
from chatmemory.domain.time import bounded_day, require_utc


class Cadence(StrEnum):
    """How fast the story moves: how long a quiet spell lasts before asking is natural."""

    FAST = "fast"
    SLOW = "slow"
    EVENT = "event"


class ThreadStatus(StrEnum):
    LIVE = "live"
    DORMANT = "dormant"  # remembered, never raised until the person brings it up
    RESOLVED = "resolved"  # the concluding fact carries it now


@dataclass(frozen=True, slots=True)
class Rhythm:
    days: int
    why: str


# Reviewed 2026-12: the quiet spell after which a friend would naturally ask.
RHYTHMS: Final[Mapping[Cadence, Rhythm]] = MappingProxyType(
    {
        Cadence.FAST: Rhythm(7, "an interview process moves in days; a quiet week invites it"),
        Cadence.SLOW: Rhythm(28, "a house hunt or a held stock moves in weeks; monthly at most"),
        Cadence.EVENT: Rhythm(7, "a dated event is ripe once past; 'how did it go' keeps a week"),
    }
)

MAX_LIVE_THREADS: Final = 5  # per (persona, person): more is a questionnaire, not a friend
THREAD_TEXT_MAX: Final = 120  # one sentence: the current state and its anchors
STALE_AFTER: Final = 3  # x the rhythm without a beat: gone quiet, never asked about
DEFLECTION_SLEEP: Final = 2  # x the rhythm a thread sleeps after a sideways answer
DORMANT_AFTER_DEFLECTIONS: Final = 2  # the second deflection is an answer too
RETURN_AFTER_DAYS: Final = 3  # a quiet spell this long makes the next opening a reunion

_ISO_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATES: Final = ("asked", "sleeps_until", "event_on")


@dataclass(frozen=True, slots=True)
class ThreadMeta:
    """A thread's manners, as kept in its row's `meta`.

    `asked`: the last day a persona raised it; `sleeps_until`: the day a deflected thread
    wakes; `event_on`: the date an event thread waits for (ignored for other cadences, so a
    change of cadence never makes a stored row unreadable); `acknowledged`: a resolved
    thread has had its one acknowledgement.
    """

    cadence: Cadence = Cadence.SLOW
    status: ThreadStatus = ThreadStatus.LIVE
    asked: date | None = None
    deflects: int = 0
    sleeps_until: date | None = None
    event_on: date | None = None
    acknowledged: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "cadence", _choice("meta.cadence", Cadence, self.cadence))
        object.__setattr__(self, "status", _choice("meta.status", ThreadStatus, self.status))
        for name in _DATES:
            value = getattr(self, name)
            # A datetime is a date too; refusing it keeps the stored form one shape.
            if value is not None and type(value) is not date:
                raise InvalidField(f"meta.{name}", "must be a date (YYYY-MM-DD) or absent")
            if value is not None:
                bounded_day(f"meta.{name}", value)
        rules.int_range("meta.deflects", self.deflects, 0)
        if not isinstance(self.acknowledged, bool):
            raise InvalidField("meta.acknowledged", "must be true or false")

    @property
    def rhythm_days(self) -> int:
        return RHYTHMS[self.cadence].days

    def to_meta(self) -> dict[str, Any]:
        """The JSON mapping for `Memory.meta`: every key written, absent dates as null."""
        dates = {name: _iso(getattr(self, name)) for name in _DATES}
        return {
            "cadence": self.cadence.value,
            "status": self.status.value,
            "deflects": self.deflects,
            "acknowledged": self.acknowledged,
            **dates,
        }

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> ThreadMeta:
        """The manners in a row's `meta`. A missing key (or a null) takes the quietest
        default: slow, live, never asked. Unknown keys are ignored; a bad value is
        InvalidField naming its key."""
        if not isinstance(meta, Mapping):
            raise InvalidField("meta", "must be an object")

        def given(key: str, default: object) -> Any:
            value = meta.get(key)
            return default if value is None else value

        return cls(
            cadence=given("cadence", Cadence.SLOW),
            status=given("status", ThreadStatus.LIVE),
            deflects=given("deflects", 0),
            acknowledged=given("acknowledged", False),
            **{name: _date_of(name, meta.get(name)) for name in _DATES},
        )


# ---- the manners: each returns a new ThreadMeta ------------------------------------------


def asked(meta: ThreadMeta, today: date) -> ThreadMeta:
    """A persona raised it today; on a resolved thread, that was its one acknowledgement."""
    acknowledged = meta.acknowledged or meta.status is ThreadStatus.RESOLVED
    return dataclasses.replace(meta, asked=today, acknowledged=acknowledged)


def answered(meta: ThreadMeta, today: date) -> ThreadMeta:
    """Raised today and taken up: awake, deflections forgiven. An answer is the person
    engaging, so it wakes a dormant thread as their reopening it would."""
    raised = asked(meta, today)
    if meta.status is ThreadStatus.RESOLVED:
        return raised
    return dataclasses.replace(raised, status=ThreadStatus.LIVE, deflects=0, sleeps_until=None)


def deflected(meta: ThreadMeta, today: date) -> ThreadMeta:
    """Raised today and steered away from: it sleeps twice its rhythm; the second time it
    is left for the person to reopen. A resolution is final; a shrug does not undo it."""
    raised = asked(meta, today)
    if meta.status is ThreadStatus.RESOLVED:
        return raised
    deflects = meta.deflects + 1
    if deflects >= DORMANT_AFTER_DEFLECTIONS or meta.status is ThreadStatus.DORMANT:
        return dataclasses.replace(
            raised, status=ThreadStatus.DORMANT, deflects=deflects, sleeps_until=None
        )
    wakes = today + timedelta(days=DEFLECTION_SLEEP * meta.rhythm_days)
    return dataclasses.replace(raised, deflects=deflects, sleeps_until=wakes)


def reopened_by_user(meta: ThreadMeta) -> ThreadMeta:
    """The person brought it up: live again with a clean slate, since their raising it is
    what licenses the persona to follow it again."""
    return dataclasses.replace(
        meta, status=ThreadStatus.LIVE, deflects=0, sleeps_until=None, acknowledged=False
    )


def resolved(meta: ThreadMeta) -> ThreadMeta:
    """The story concluded; it waits for its one acknowledgement (unchanged if resolved)."""
    if meta.status is ThreadStatus.RESOLVED:
        return meta
    return dataclasses.replace(
        meta, status=ThreadStatus.RESOLVED, deflects=0, sleeps_until=None, acknowledged=False
    )


def crowded_out(meta: ThreadMeta) -> ThreadMeta:
    """Past the live cap (`over_cap`): dormant, as a stale thread is; others unchanged."""
    if meta.status is not ThreadStatus.LIVE:
        return meta
    return dataclasses.replace(meta, status=ThreadStatus.DORMANT, sleeps_until=None)


def nightly_review(meta: ThreadMeta, last_beat: date, today: date) -> ThreadMeta:
    """A live thread quiet past STALE_AFTER x its rhythm goes dormant, silently; nothing
    else changes, so a second (or retried) pass writes nothing."""
    if meta.status is ThreadStatus.LIVE and _is_stale(meta, last_beat, today):
        return dataclasses.replace(meta, status=ThreadStatus.DORMANT, sleeps_until=None)
    return meta


def over_cap(threads: Sequence[tuple[str, ThreadMeta, date]]) -> list[str]:
    """The ids of the live threads past MAX_LIVE_THREADS, quietest (oldest last beat) first;
    ties go by id, so the choice never depends on the input's order."""
    live = sorted((beat, tid) for tid, meta, beat in threads if meta.status is ThreadStatus.LIVE)
    return [tid for _, tid in live[: max(0, len(live) - MAX_LIVE_THREADS)]]


# ---- whether and how a persona may raise it -----------------------------------------------


class Ripeness(StrEnum):
    RIPE = "ripe"  # a natural moment to ask
    RECENT = "recent"  # heard within its rhythm: nothing to ask yet
    NOT_YET = "not_yet"  # an event still ahead
    RESTING = "resting"  # asked within its rhythm
    SLEEPING = "sleeping"  # deflected once: until sleeps_until
    LEAVE = "leave"  # deflected twice: only if the person brings it up
    RESOLVED = "resolved"  # concluded, not yet acknowledged
    SETTLED = "settled"  # concluded and acknowledged (or long quiet): silence
    STALE = "stale"  # live, quiet past STALE_AFTER x its rhythm: the next review's catch
    DORMANT = "dormant"  # gone quiet or crowded out: never asked about
    ASKED_HERE = "asked_here"  # would be ripe, but a thread was raised here today already


ANNOTATIONS: Final[Mapping[Ripeness, str]] = MappingProxyType(
    {
        Ripeness.RIPE: "quiet past its rhythm — a natural moment to ask, if you would",
        Ripeness.NOT_YET: "still ahead — ask how it went only once it has happened",
        Ripeness.RESTING: "asked recently — let it rest",
        Ripeness.SLEEPING: "they steered away from it last time — let it lie for now",
        Ripeness.LEAVE: "they changed the subject last time — leave it unless they bring it up",
        Ripeness.RESOLVED: "it's settled — acknowledge it once, in a line, then let it go",
        Ripeness.ASKED_HERE: "one of their threads was already raised here today — leave it",
    }
)
#: what the block never shows: nothing in it is for the persona to raise
HIDDEN: Final = frozenset({Ripeness.SETTLED, Ripeness.STALE, Ripeness.DORMANT})


def ripeness(
    meta: ThreadMeta, last_beat: date, today: date, *, asked_here_today: bool = False
) -> Ripeness:
    """Whether the persona may raise the thread today, given its last beat (the day the
    person last said something about it). What restrains is checked before what invites.

    `asked_here_today`: a thread was already raised in this room (or this conversation)
    today, by any persona — one ask per room per day (law 8), one per opening (law 1); a
    ripe thread then waits for another day."""
    state = _restraint(meta, last_beat, today) or _invitation(meta, last_beat, today)
    return Ripeness.ASKED_HERE if asked_here_today and state is Ripeness.RIPE else state


def annotation(state: Ripeness) -> str:
    """The block's note on a thread line; "" where nothing should be said."""
    return ANNOTATIONS.get(state, "")


def room_may_ask(last_ask_in_room: date | None, today: date) -> bool:
    """True unless a persona already raised a thread in this room today (law 8: one ask per
    room per day, across minds); a stamp from a later day (a skewed clock) also says no."""
    return last_ask_in_room is None or last_ask_in_room < today


def thread_line(
    text: str, meta: ThreadMeta, last_beat: date, today: date, *, asked_here_today: bool = False
) -> str | None:
    """`- <text> (last heard 12 days ago · <annotation>)`; None for a thread the block does
    not show (settled, stale, dormant). The text is never clipped: a cut anchor ("$10" of
    "$100") is worse than no thread (law 5); THREAD_TEXT_MAX binds the writer."""
    state = ripeness(meta, last_beat, today, asked_here_today=asked_here_today)
    if state in HIDDEN:
        return None
    tags = [f"last heard {heard_ago((today - last_beat).days)}", annotation(state)]
    return f"- {one_line(text)} ({' · '.join(tag for tag in tags if tag)})"


def heard_ago(days: int) -> str:
    """`today`, `yesterday`, `12 days ago`, `3 weeks ago`: ages as a friend says them."""
    if days <= 0:
        return "today"
    return "yesterday" if days == 1 else f"{_span(days)} ago"


def return_cue(last_seen: datetime | None, now: datetime, ripe_anchor: str | None) -> str | None:
    """The kickoff cue for a private chat reopened after RETURN_AFTER_DAYS quiet days: a
    reunion, at most one question, opening with the ripe thread by its anchors. None on a
    first meeting (nothing to return to) or after a short gap (no reunion to mark)."""
    if last_seen is None:
        return None
    gap = require_utc("now", now) - require_utc("last_seen", last_seen)
    if gap < timedelta(days=RETURN_AFTER_DAYS):
        return None
    cue = (
        f"You last talked {_span(gap.days)} ago: greet them as someone you know and are glad "
        "to see again, with no introductions."
    )
    if ripe_anchor and ripe_anchor.strip():
        return f"{cue} If you ask anything, ask this one thing, by its details: " + one_line(
            ripe_anchor
        )
    return f"{cue} Ask at most one thing, and only what the moment invites."


# ---- a thread as a row -------------------------------------------------------------------


def last_beat_of(memory: Memory) -> date:
    """The day the person last said something about it: every beat is a new version, so
    the version's own creation is its beat (a change of manners never moves it)."""
    return memory.created_at.date()


def meta_of(memory: Memory) -> ThreadMeta:
    """A thread row's manners. A row whose meta cannot be read is treated as dormant: a
    thread the persona is unsure about is one it never raises."""
    try:
        return ThreadMeta.from_meta(memory.meta)
    except InvalidField:
        return ThreadMeta(status=ThreadStatus.DORMANT)


def with_manners(row_meta: Mapping[str, Any], meta: ThreadMeta) -> dict[str, Any]:
    """The row's meta with the thread's manners replaced and everything else (its uses)
    kept as it was."""
    return {**dict(row_meta), **meta.to_meta()}


def review_date(memory: Memory) -> date | None:
    """The first day the nightly review would put this thread to sleep: for a visible
    active row of kind `thread` whose status is live; None for every other row. The stores
    index live threads by it, so the review reads only the ones it has to."""
    if memory.kind is not Kind.THREAD or memory.status is not Status.ACTIVE:
        return None
    meta = meta_of(memory)
    if meta.status is not ThreadStatus.LIVE:
        return None
    start = last_beat_of(memory)
    if meta.cadence is Cadence.EVENT and meta.event_on is not None:
        start = max(start, meta.event_on)
    return start + timedelta(days=STALE_AFTER * meta.rhythm_days + 1)


def with_beat(meta: ThreadMeta, *, cadence: Cadence | None, event_on: date | None) -> ThreadMeta:
    """The manners once the person said something new about it: they raised it, so it is
    theirs to follow again (a clean slate), at the cadence and date the beat gives."""
    fresh = reopened_by_user(meta)
    return dataclasses.replace(
        fresh,
        cadence=cadence or fresh.cadence,
        event_on=event_on if event_on is not None else fresh.event_on,
    )


# ---- what the extractor reports about a spell ----------------------------------------------


class Response(StrEnum):
    """How the person met a thread the persona raised."""

    ANSWERED = "answered"  # took it up
    DEFLECTED = "deflected"  # a short or sideways reply, a change of subject
    UNANSWERED = "unanswered"  # the spell ended before they said anything


@dataclass(frozen=True, slots=True)
class ThreadReport:
    """Post hoc, from the transcript: the persona raised this thread in the spell (its own
    line names the thread's subject) and how the person met it. `thread` is the known
    thread's number as the extractor saw it ("T1"), and its memory id once the service
    mapped it back; `raised_in` the message id of the persona's line."""

    thread: str
    raised_in: str
    response: Response

    def __post_init__(self) -> None:
        rules.opaque_id("thread", self.thread)
        rules.opaque_id("raised_in", self.raised_in, max_len=160)
        object.__setattr__(self, "response", _choice("response", Response, self.response))

    def to_json(self) -> dict[str, str]:
        return {"thread": self.thread, "raised_in": self.raised_in, "response": self.response}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThreadReport:
        return cls(str(data["thread"]), str(data["raised_in"]), str(data["response"]))  # type: ignore[arg-type]


def after_spell(
    meta: ThreadMeta,
    *,
    raised_on: date | None = None,
    response: Response | None = None,
    beat: bool = False,
    cadence: Cadence | None = None,
    event_on: date | None = None,
) -> ThreadMeta:
    """The manners after a quiet spell: the persona's raise and the person's answer first
    (`raised_on`, `response`), then the person's own beat on it, which reopens it.

    A raise on a day the thread is already stamped with is the same raise, counted once:
    a retried spell never deflects a thread twice (and one ask a day is all the manners
    allow anyway)."""
    if response is not None and raised_on is not None and meta.asked != raised_on:
        step = {
            Response.ANSWERED: answered,
            Response.DEFLECTED: deflected,
            Response.UNANSWERED: asked,
        }[response]
        meta = step(meta, raised_on)
    if beat:
        meta = with_beat(meta, cadence=cadence, event_on=event_on)
    return meta


def manner_ops(before: ThreadMeta, after: ThreadMeta) -> tuple[Op, ...]:
    """What a change of manners says in the thread's history (ops only, never words): a
    raise, a deflection, and each change of status."""
    ops: list[Op] = []
    if after.deflects > before.deflects:
        ops.append(Op.DEFLECTED)
    elif after.asked != before.asked and after.asked is not None:
        ops.append(Op.ASKED)
    if after.status is not before.status:
        ops.append(
            {
                ThreadStatus.DORMANT: Op.DORMANT,
                ThreadStatus.RESOLVED: Op.RESOLVED,
                ThreadStatus.LIVE: Op.REOPENED,
            }[after.status]
        )
    return tuple(ops)


# ---- saying a thread's name ------------------------------------------------------------------

_APOSTROPHES = "'\u2019"
_WORD = re.compile(r"[$€£¥]?[\w'\u2019]+(?:[.,:/-][\w'\u2019]+)*%?")
# Words too common to name anything, and sentence openers a thread's text starts with.
_COMMON: Final = frozenset(
    """
    a about after again all also am an and any are as at be been before being both but by
    can could did do does doing done for from get gets getting go goes going gone got had
    has have having he her here him his how i i'm if in into is it it's its just know last
    let like me more most my new next no not now of on one or our out over said say says
    see she so some still such than that the their them then there these they thing things
    this those though through to too until up us very was way we well were what when where which
    while who why will with would yet you your yours
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday week
    weeks month months year years day days time
    """.split()  # noqa: SIM905 - a reviewed word list reads best as prose
)
_SUFFIXES: Final = ("ings", "ing", "ers", "er", "ed", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(anchors, subject words): anchors are what a friend would quote — numbers, amounts,
    dates and names (capitalised mid-sentence, or any weekday or month); subject words
    the other meaningful words, stemmed ("hunting" names "hunt")."""
    anchors: set[str] = set()
    subject: set[str] = set()
    sentence_start = True
    for match in _WORD.finditer(text):
        token = match.group(0).strip(_APOSTROPHES)
        folded = token.casefold()
        if _is_anchor(token, folded, sentence_start=sentence_start):
            anchors.add(folded)
        for part in re.split(r"[-/]", folded):
            if len(part) >= 3 and part not in _COMMON and not part.isdigit():
                subject.add(_stem(part))
        sentence_start = text[match.end() : match.end() + 1] in {".", "!", "?", ":"}
    return frozenset(anchors), frozenset(subject)


def _is_anchor(token: str, folded: str, *, sentence_start: bool) -> bool:
    """A number, a date or a calendar name; a capitalised word mid-sentence; or a word of
    several capitals (TSLA, NYC), a name wherever it stands."""
    return (
        any(ch.isdigit() for ch in token)
        or folded in _CALENDAR
        or (token[:1].isupper() and not sentence_start and folded not in _COMMON)
        or sum(ch.isupper() for ch in token) >= 2
    )


_CALENDAR: Final = frozenset(
    """
    monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december
    """.split()  # noqa: SIM905 - a reviewed word list reads best as prose
)


def mentions(line: str, thread_text: str) -> bool:
    """Does `line` name the thread — one of its anchors (a number, a date, a name), or two
    of its subject words? A line that names neither has not raised it: "let's talk about
    something else" names no thread, "how did the second round at Acme go?" does."""
    anchors, subject = _words(thread_text)
    said_anchors, said_subject = _words(line)
    named_anchors = anchors & said_anchors
    if named_anchors - _CALENDAR or len(named_anchors) >= 2:
        return True
    return len(subject & said_subject) >= 2 or bool(named_anchors and subject & said_subject)


# ---- what the block shows --------------------------------------------------------------------

#: the order thread lines are offered in: what invites first, then what restrains
_SHOWN_ORDER: Final = (
    Ripeness.RIPE,
    Ripeness.RESOLVED,
    Ripeness.NOT_YET,
    Ripeness.RECENT,
    Ripeness.ASKED_HERE,
    Ripeness.RESTING,
    Ripeness.SLEEPING,
    Ripeness.LEAVE,
)


@dataclass(frozen=True, slots=True)
class ThreadView:
    """A thread as the block shows it today: its row, manners, state and rendered line."""

    memory: Memory
    meta: ThreadMeta
    state: Ripeness
    line: str


def shown_threads(
    rows: Sequence[Memory], today: date, *, asked_here_today: bool = False
) -> list[ThreadView]:
    """The thread rows a block shows (active, kind `thread`, not hidden by their state),
    what invites first, then newest beat first, then by id — the same rows always render
    the same lines in the same order."""
    views: list[ThreadView] = []
    for memory in rows:
        if memory.kind is not Kind.THREAD or memory.status is not Status.ACTIVE:
            continue
        meta, beat = meta_of(memory), last_beat_of(memory)
        line = thread_line(memory.text, meta, beat, today, asked_here_today=asked_here_today)
        if line is None:
            continue
        state = ripeness(meta, beat, today, asked_here_today=asked_here_today)
        views.append(ThreadView(memory, meta, state, line))
    views.sort(
        key=lambda v: (
            _SHOWN_ORDER.index(v.state),
            -last_beat_of(v.memory).toordinal(),
            v.memory.memory_id,
        )
    )
    return views


def cue_thread(views: Sequence[ThreadView]) -> ThreadView | None:
    """The one thread a reunion may open with: the first ripe one (an event whose day has
    passed before a quieter thread, as `shown_threads` orders them), or none."""
    return next((view for view in views if view.state is Ripeness.RIPE), None)


def acknowledged_after(lines: Sequence[tuple[str, bool]], news: Sequence[str]) -> bool:
    """Did the persona speak after the news? `lines`: the spell in order, as (message id,
    said by the persona). Its first line after the news was the one acknowledgement a
    resolution gets (law 3)."""
    told = [index for index, (message_id, _) in enumerate(lines) if message_id in news]
    return bool(told) and any(own for _, own in lines[max(told) + 1 :])


def first_since_return(said: Sequence[tuple[str, datetime]], speaker: str) -> bool:
    """Has `speaker` said nothing since the person came back — since the last quiet spell of
    RETURN_AFTER_DAYS between two lines of `said` (who, when), or since the first line?
    Only then does a reunion's cue still stand: after its opening it is spent."""
    start = 0
    for index in range(1, len(said)):
        if said[index][1] - said[index - 1][1] >= timedelta(days=RETURN_AFTER_DAYS):
            start = index
    return all(who != speaker for who, _ in said[start:])


# ---- the small parts ------------------------------------------------------------------------


def _restraint(meta: ThreadMeta, last_beat: date, today: date) -> Ripeness | None:
    """What holds the persona back, if anything: resolution, deflection, rest, staleness."""
    stale = _is_stale(meta, last_beat, today)
    if meta.status is ThreadStatus.RESOLVED:
        return Ripeness.SETTLED if meta.acknowledged or stale else Ripeness.RESOLVED
    if meta.deflects >= DORMANT_AFTER_DEFLECTIONS:
        return Ripeness.DORMANT if stale else Ripeness.LEAVE
    if meta.status is ThreadStatus.DORMANT:
        return Ripeness.DORMANT
    if stale:
        return Ripeness.STALE
    sleeping = meta.sleeps_until is not None and today < meta.sleeps_until
    return Ripeness.SLEEPING if sleeping else None


def _invitation(meta: ThreadMeta, last_beat: date, today: date) -> Ripeness:
    """For a live, awake thread: ripe once past its date or its rhythm, unless asked since."""
    recently_asked = meta.asked is not None and (today - meta.asked).days < meta.rhythm_days
    if meta.cadence is Cadence.EVENT and meta.event_on is not None:
        if today <= meta.event_on:
            return Ripeness.RESTING if recently_asked else Ripeness.NOT_YET
        if meta.asked is None or meta.asked < meta.event_on:
            return Ripeness.RIPE  # its day has passed and no one has asked how it went
    if recently_asked:
        return Ripeness.RESTING
    return Ripeness.RIPE if (today - last_beat).days >= meta.rhythm_days else Ripeness.RECENT


def _is_stale(meta: ThreadMeta, last_beat: date, today: date) -> bool:
    """Quiet past STALE_AFTER x its rhythm; an event thread's clock starts at its date, so
    a wedding in June is not stale in May."""
    start = last_beat
    if meta.cadence is Cadence.EVENT and meta.event_on is not None:
        start = max(start, meta.event_on)
    return (today - start).days > STALE_AFTER * meta.rhythm_days


def _span(days: int) -> str:
    if days < 14:
        return "1 day" if days == 1 else f"{days} days"
    return f"{days // 7} weeks"


def _iso(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


def _date_of(key: str, value: object) -> date | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _ISO_DATE.fullmatch(value):
        raise InvalidField(f"meta.{key}", "must be a date (YYYY-MM-DD) or null")
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidField(f"meta.{key}", "must be a real calendar date") from exc


_E = TypeVar("_E", bound=StrEnum)


def _choice(field: str, enum: type[_E], value: object) -> _E:
    allowed = [member.value for member in enum]
    if not isinstance(value, str) or value not in allowed:
        raise InvalidField(field, f"must be one of: {', '.join(allowed)}")
    return enum(value)
