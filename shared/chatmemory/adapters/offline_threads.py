"""The offline stand-in's threads (seed 004): which of a spell's lines start, move on or
conclude a person's ongoing concern, and how the person met a thread the persona raised.

- A new concern ("I have a job interview at Acme on Thursday") is a thread candidate.
- News of a known thread (it names the thread, or says the same concern's news: "second
  round on Friday") is a beat of it: a thread candidate naming its number ("T1"), with
  its new state. One candidate per thread per spell, holding the spell's last state.
- A conclusion ("I got the job!") is a plain fact naming the thread it concludes.
- A report per known thread the persona raised: its own line names the thread while what
  was said to it since its last line did not (the stand-in's replies quote the person, and
  a quote is no raise); the person's next line says how they met it.

The phrasings themselves are `offline_concerns`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Final

from chatmemory.adapters.offline_concerns import (
    Ending,
    Story,
    category_of,
    ending,
    key_of,
    news,
    start,
)
from chatmemory.adapters.offline_dates import instant
from chatmemory.domain.extraction import (
    Candidate,
    ExtractionInput,
    KnownThread,
    TranscriptLine,
    asked_to_remember,
)
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.threads import THREAD_TEXT_MAX, Cadence, Response, ThreadReport, mentions

THREAD_IMPORTANCE: Final = 7  # a story a friend follows; its later beats ride whatever it is
CONCLUSION_IMPORTANCE: Final = 7
SHORT_REPLY_WORDS: Final = 3  # "eh, fine" — too short to have taken the question up

# A sentence, or a clause of one that starts its own statement ("… and I live in Pune").
_CLAUSES = re.compile(r"(?<=[.!?;])\s+|\s+(?:and|but)\s+(?=I\b|my\b)", re.IGNORECASE)
_DEFLECTION = re.compile(
    r"(?i:\b(?:let's|let\s+us|can\s+we|could\s+we)\s+(?:talk\s+about\s+something|change\s+the\s+subject)"
    r"|\b(?:rather|prefer)\s+not\s+(?:to\s+)?(?:talk|get\s+into|discuss|go\s+into)\b"
    r"|\bdon't\s+(?:want|wanna)\s+(?:to\s+)?(?:talk|get\s+into|discuss|go\s+into)\b"
    r"|\bchange\s+the\s+subject\b|\bsomething\s+else\b|\bnot\s+now\b|\bnever\s*mind\b"
    r"|\bmoving\s+on\b|\bdrop\s+it\b|\banother\s+time\b|\bno\s+comment\b"
    r"|^\W*(?:eh|meh|whatever|anyway|anyhow|ugh|hmm+)\b)"
)
# Words that take a question up even in a short reply ("Went well!", "Not yet.").
_ANSWER_WORDS: Final = frozenset(
    """
    yes yeah yep yup no nope not well good great fine badly bad terrible awful amazing
    passed failed got still waiting soon news offer done over close nearly almost
    """.split()  # noqa: SIM905 - a reviewed word list reads best as prose
)
_WORDS = re.compile(r"[\w'$€£¥.-]+")


def clauses(text: str) -> list[str]:
    """The statements of `text`, one per sentence or clause, stripped; none empty."""
    return [part.strip() for part in _CLAUSES.split(text) if part and part.strip()]


@dataclass(eq=False, slots=True)
class FollowedThread:
    """A thread the reader follows through a spell: a known one (its number) or a concern
    begun in the spell. Once touched it is one candidate, holding the last state said."""

    subject: str
    number: str | None
    key: str | None
    text: str
    category: str
    evidence: list[str] = field(default_factory=list)
    cadence: Cadence | None = None  # None: a mention that leaves its manners as they are
    event_on: date | None = None
    touched: bool = False
    open: bool = True  # concluded (or taken back) in the spell: no later beat joins it
    dropped: bool = False  # begun and concluded in one spell: only its fact remains

    @classmethod
    def known(cls, thread: KnownThread) -> FollowedThread:
        key = thread.key or key_of(thread.text)
        return cls(thread.subject, thread.number, key, thread.text, category_of(key, thread.text))

    def candidate(self) -> Candidate | None:
        """The beat or new thread, once touched; a state too long to keep whole is none."""
        if not self.touched or self.dropped or len(self.text) > THREAD_TEXT_MAX:
            return None
        return Candidate(
            text=self.text,
            category=self.category,
            kind=Kind.THREAD,
            importance=THREAD_IMPORTANCE,
            stated_by=StatedBy.USER,
            evidence=tuple(dict.fromkeys(self.evidence)),
            key=self.key,
            cadence=self.cadence,
            event_on=self.event_on if self.cadence is Cadence.EVENT else None,
            thread=self.number,
            subject=self.subject,
        )


Item = Candidate | FollowedThread


@dataclass(frozen=True, slots=True)
class Reading:
    """What one clause did: the items to add in its place (a thread the first time it is
    touched, a concluding fact), whether the clause is spent (no other rule reads it),
    and the thread it began or moved on."""

    items: tuple[Item, ...] = ()
    consumed: bool = False
    thread: FollowedThread | None = None


class StoryReader:
    """Reads a spell's lines, clause by clause, for the person's concerns. In a room each
    speaker's clauses touch only the threads about them."""

    def __init__(self, threads: Sequence[KnownThread], today: date, *, room: bool) -> None:
        self._today = today
        self._room = room
        self._followed = [FollowedThread.known(thread) for thread in threads]

    def read(self, clause: str, line: TranscriptLine) -> Reading:
        """A conclusion first, then news of a followed thread, then a new concern; else a
        mention of a followed thread, which leaves the clause to the other rules. A clause
        that asks to be remembered is kept as the person put it (not a thread)."""
        if asked_to_remember(clause):
            return Reading()
        subject = line.speaker if self._room else ""
        mine = [t for t in self._followed if t.open and (not self._room or t.subject == subject)]
        mine.sort(key=lambda thread: not mentions(clause, thread.text))  # the one named first
        for thread in mine:
            concluded = ending(clause, thread.key, thread.text) if thread.key else None
            if concluded is not None:
                return Reading((self._conclude(thread, concluded, line),), consumed=True)
        for thread in mine:
            story = news(clause, thread.key, thread.text, self._today) if thread.key else None
            if story is not None:
                return self._moved(thread, story, line)
        story = start(clause, self._today)
        if story is not None:
            same = next((t for t in mine if t.key == story.key), None)
            if same is None:
                same = FollowedThread(subject, None, story.key, story.text, story.category)
                self._followed.append(same)
            return self._moved(same, story, line)
        named = [t for t in mine if mentions(clause, t.text)]
        return Reading(tuple(item for t in named for item in self._touched(t, line)))

    def take_back(self, thread: FollowedThread) -> None:
        """The person asked to be asked about it: that stays an open loop, not a thread."""
        thread.open = False
        thread.dropped = True

    def _moved(self, thread: FollowedThread, story: Story, line: TranscriptLine) -> Reading:
        items = self._touched(thread, line)
        thread.key, thread.text, thread.category = story.key, story.text, story.category
        thread.cadence, thread.event_on = story.cadence, story.event_on
        return Reading(items, consumed=True, thread=thread)

    def _touched(self, thread: FollowedThread, line: TranscriptLine) -> tuple[Item, ...]:
        first = not thread.touched
        thread.touched = True
        thread.evidence.append(line.message_id)
        return (thread,) if first else ()

    def _conclude(self, thread: FollowedThread, end: Ending, line: TranscriptLine) -> Candidate:
        thread.open = False
        thread.dropped = thread.number is None  # never known: nothing to conclude but the fact
        return Candidate(
            text=end.text(self._today),
            category=end.category,
            kind=Kind.FACT,
            importance=CONCLUSION_IMPORTANCE,
            stated_by=StatedBy.USER,
            evidence=(line.message_id,),
            key=end.key,
            valid_from=instant(self._today),
            subject=thread.subject,
            concludes=thread.number,
        )


def materialise(items: Iterable[Item]) -> list[Candidate]:
    """The candidates, in the order first said, each thread with its last state."""
    made: list[Candidate] = []
    for item in items:
        candidate = item if isinstance(item, Candidate) else item.candidate()
        if candidate is not None:
            made.append(candidate)
    return made


# ---- reports ----------------------------------------------------------------------------


def thread_reports(request: ExtractionInput) -> tuple[ThreadReport, ...]:
    """For each known thread the persona raised in the slice, its first raise and how the
    person met it. One-to-one the persona speaks as the assistant; in a room, from its
    seat, and the person is the thread's subject."""
    seat = request.seat
    if seat is None:
        return _reports(
            request, lambda line: line.role == "assistant", lambda _t, line: line.role == "user"
        )
    own = f"p:{seat.persona}"

    def theirs(thread: KnownThread, line: TranscriptLine) -> bool:
        if thread.subject:
            return line.speaker == thread.subject
        return line.speaker.startswith("u:")

    return _reports(request, lambda line: line.speaker == own, theirs)


def _reports(
    request: ExtractionInput,
    own: Callable[[TranscriptLine], bool],
    theirs: Callable[[KnownThread, TranscriptLine], bool],
) -> tuple[ThreadReport, ...]:
    reports = []
    lines = request.transcript
    for thread in request.threads:
        heard: list[str] = []  # what others said since the persona last spoke
        for index, line in enumerate(lines):
            if not own(line):
                heard.append(line.content)
                continue
            raised = mentions(line.content, thread.text)
            if raised and not any(mentions(said, thread.text) for said in heard):
                reply = next((later for later in lines[index + 1 :] if theirs(thread, later)), None)
                met = (
                    Response.UNANSWERED
                    if reply is None
                    else response_to(reply.content, thread.text)
                )
                reports.append(ThreadReport(thread.number, line.message_id, met))
                break
            heard = []
    return tuple(reports)


def response_to(reply: str, thread_text: str) -> Response:
    """How a reply met the thread raised just before it: a change of subject, or a reply
    too short to take it up that does not name it, is a deflection; anything else an answer."""
    if _DEFLECTION.search(reply):
        return Response.DEFLECTED
    words = [word.strip(".-").lower() for word in _WORDS.findall(reply)]
    if (
        len(words) <= SHORT_REPLY_WORDS
        and not mentions(reply, thread_text)
        and not _ANSWER_WORDS.intersection(words)
    ):
        return Response.DEFLECTED
    return Response.ANSWERED


# ---- a conclusion, for the reply ----------------------------------------------------------


def concluded_by(message: str, thread_texts: Sequence[str]) -> Ending | None:
    """The conclusion `message` brings to one of the threads shown, if it brings one."""
    for clause in clauses(message):
        for text in thread_texts:
            key = key_of(text)
            concluded = ending(clause, key, text) if key else None
            if concluded is not None:
                return concluded
    return None
