"""The offline stand-in's reading of the concerns a friend follows (seed 004): a job hunt,
a house hunt, a stock held for a target, a baby on the way, a dated event ahead (an exam,
an operation, a race) — the common phrasings that start one, move it on, or conclude it.

Each concern writes its state as one short sentence in the same third-person, nameless
style as the other offline rules, with its anchors (names, numbers, dates) copied as said
and times written out as dates; and it reads that sentence back, so a later beat keeps the
anchors that still hold ("second round on Friday" keeps the company). No clock, no I/O.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import date
from typing import Final

from chatmemory.adapters.offline_dates import (
    MONTH_NAMES,
    NAME,
    WEEKDAY_NAMES,
    Stated,
    month_of,
    stated,
    written_day,
)
from chatmemory.domain.restate import third_person
from chatmemory.domain.sensitive import SENSITIVE_CATEGORIES
from chatmemory.domain.threads import THREAD_TEXT_MAX, Cadence
from chatmemory.domain.uses import category_by_words


@dataclass(frozen=True, slots=True)
class Story:
    """A concern's current state: its key, its one sentence, how fast it moves."""

    key: str
    text: str
    cadence: Cadence
    category: str
    event_on: date | None = None


@dataclass(frozen=True, slots=True)
class Ending:
    """A concern concluded, as the plain fact that carries it from now on (without when)."""

    key: str
    said: str  # "Works at Acme", "Found a flat in Xuhui"
    category: str
    good: bool  # news a friend congratulates
    since: bool = False  # a state that began ("since December 2026"), else a one-off ("in")

    def text(self, today: date) -> str:
        if written_day(self.said) is not None:
            return f"{self.said}."
        return f"{self.said} {'since' if self.since else 'in'} {month_of(today)}."


class _Concern(ABC):
    """One kind of concern: how a thread about it reads, begins, moves on and ends."""

    @abstractmethod
    def owns(self, key: str) -> bool:
        """Is `key` one of this concern's keys."""

    @abstractmethod
    def key_of(self, text: str) -> str | None:
        """The key of a thread whose text reads as this concern; None if it does not."""

    @abstractmethod
    def category(self, key: str, text: str) -> str: ...

    @abstractmethod
    def start(self, sentence: str, today: date) -> Story | None:
        """A concern stated outright ("I have a job interview at Acme on Thursday")."""

    @abstractmethod
    def news(self, sentence: str, key: str, old: str, today: date) -> Story | None:
        """News of the thread `key` whose state is `old`: its new state, keeping the
        anchors that still hold; looser phrasings count, since the concern is known."""

    @abstractmethod
    def end(self, sentence: str, key: str, old: str) -> Ending | None:
        """The fact that concludes the thread, if the sentence says it concluded."""


def _fitting(*texts: str) -> str | None:
    """The first (fullest) of `texts` within THREAD_TEXT_MAX: a shorter state loses a
    detail whole rather than have an anchor cut ("$10" of "$100")."""
    return next((text for text in texts if len(text) <= THREAD_TEXT_MAX), None)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _when(when: Stated | None) -> tuple[Cadence, date | None]:
    """An event when a day is stated: it waits for that day (a month: its last day)."""
    return (Cadence.EVENT, when.over_by) if when else (Cadence.FAST, None)


# ---- a job hunt -----------------------------------------------------------------------------

_STAGE = (
    r"(?:(?:job|phone|video|final|second|third|first|technical|onsite|on-site|follow-up|panel)\s+)*interview"
    r"|(?:first|second|third|final|next|last)\s+(?:round|stage)(?:\s+interview)?"
)
# A company named before the stage ("the Acme interview"), never a word that opens one.
_NOT_A_COMPANY = (
    r"(?!(?:The|A|An|My|Our|Their|This|That|First|Second|Third|Final|Next|Last|Phone|Video|"
    r"Technical|Job|Today|Tomorrow|Yesterday|Tonight|I)\b)"
)
_JOB_HAVE = re.compile(
    r"(?i:\b(?:I|we)(?:'ve got| have got| have|'ve|(?:'m| am) having))\s+"
    rf"(?i:a|an|my|the|another|our)\s+(?P<stage>(?i:{_STAGE}))\b"
    rf"(?:\s+(?i:at|with|for)\s+(?P<company>{NAME}))?"
)
_JOB_DOING = re.compile(
    r"(?i:\bI(?:'m| am)\s+(?:now\s+|currently\s+|still\s+)?(?P<doing>interviewing|applying))\b"
    r"(?:\s+(?i:for\s+(?:a\s+|some\s+)?(?:new\s+)?(?:jobs?|roles?|positions?)))?"
    rf"(?:\s+(?i:at|with|to|for)\s+(?P<company>{NAME}))?"
)
_JOB_SEARCH = re.compile(
    r"(?i:\bI(?:'m| am)\s+(?:still\s+|now\s+|currently\s+|actively\s+)?"
    r"(?:(?:looking|searching|hunting)\s+for\s+(?:a\s+)?(?:new\s+)?(?:job|role|position)"
    r"|job[- ]?hunting|job[- ]?searching|on\s+the\s+job\s+market))\b"
    rf"(?:\s+(?i:in)\s+(?P<place>{NAME}))?"
)
_STAGE_SAID = re.compile(rf"(?i:\b(?P<stage>{_STAGE}))\b(?:\s+(?i:at|with)\s+(?P<company>{NAME}))?")
_NAMED_STAGE = re.compile(
    rf"\b{_NOT_A_COMPANY}(?P<company>{NAME})(?:'s)?\s+(?i:(?P<stage>{_STAGE}))\b"
)
_HOW = re.compile(
    r"(?i:\b(?P<how>(?:went|goes|is going)\s+(?:really\s+|very\s+|pretty\s+|quite\s+)?"
    r"(?:well|great|badly|fine|ok|okay|terribly|brilliantly|horribly|not\s+(?:so\s+|too\s+)?"
    r"(?:well|great))|didn't\s+go\s+(?:so\s+)?(?:well|great)))\b"
)
_GOT_JOB = re.compile(
    r"(?i:\b(?:I|we)\s+(?:just\s+|finally\s+|actually\s+|have\s+|'ve\s+)?"
    r"(?:got|landed|accepted|took|signed)\s+(?:the|a|an|that|their)\s+(?:new\s+)?"
    r"(?:job|offer|position|role)(?:\s+offer)?)\b"
    rf"(?:\s+(?i:at|with|from)\s+(?P<company>{NAME}))?"
)
_GOT_IT = re.compile(r"(?i:^\W*(?:(?:yes|yay|guess\s+what)\W+)?I\s+got\s+it\b)")
_OFFERED = re.compile(
    rf"(?:(?i:they)|{_NOT_A_COMPANY}(?P<company>{NAME}))\s+(?i:offered\s+me\s+(?:the|a)\s+"
    r"(?:job|position|role))\b"
)
_STARTING = re.compile(
    rf"(?i:\bI(?:'m| am)\s+(?:starting|joining)(?:\s+at)?)\s+(?P<company>{NAME})"
)
_JOB_TEXT = re.compile(r"(?i:job[- ]?hunting)(?::\s*(?P<detail>.+?))?\.?$")
_JOB_DETAIL = re.compile(
    rf"(?P<stage>.+?)(?:\s+(?:at|to)\s+(?P<company>{NAME}))?"
    rf"(?:\s+(?P<when>(?:on|in)\s+(?:(?:{WEEKDAY_NAMES}|{MONTH_NAMES})\s+)?\d{{4}}(?:-\d{{2}}-\d{{2}})?))?"
    r"(?:\s+(?P<how>(?:went|didn't go)\s.+))?"
)
_AT_COMPANY = re.compile(rf"\b(?:at|to)\s+(?P<company>{NAME})")
_JOB_WORDS = re.compile(
    r"(?i)\bjob[- ]?(?:hunt|hunting|search|searching)\b|\binterview|\bapplying\b"
    r"|\b(?:first|second|third|final|next) round\b|\blooking for (?:a )?(?:new )?job\b"
)


@dataclass(frozen=True, slots=True)
class _JobState:
    stage: str = ""  # "interview", "second round", "interviewing", "applying"
    company: str = ""
    when: str = ""  # as written out: "on Friday 2026-12-11"
    how: str = ""  # "went well"

    @classmethod
    def read(cls, text: str) -> _JobState:
        """The state of a thread's text as this stand-in writes it; from anyone else's
        words, only the company (the anchor that holds through every stage)."""
        match = _JOB_TEXT.search(text)
        detail = match["detail"] if match and match["detail"] else ""
        parts = _JOB_DETAIL.fullmatch(detail) if detail else None
        if parts:
            return cls(
                parts["stage"], parts["company"] or "", parts["when"] or "", parts["how"] or ""
            )
        company = _AT_COMPANY.search(text)
        return cls(company=company["company"] if company else "")

    def texts(self) -> tuple[str, ...]:
        """The state in one sentence, fullest first, then without the outcome, the time."""
        at = f"{'to' if self.stage == 'applying' else 'at'} {self.company}" if self.company else ""
        full = (self.stage, at, self.when, self.how)
        variants = (full, (self.stage, at, self.when), (self.stage, at))
        texts = []
        for parts in variants:
            detail = " ".join(part for part in parts if part)
            texts.append(f"Is job-hunting: {detail}." if detail else "Is job-hunting.")
        return tuple(texts)


@dataclass(frozen=True, slots=True)
class _JobSaid:
    stage: str = ""
    company: str = ""
    when: Stated | None = None
    how: str = ""
    search: bool = False  # a search begun: nothing of an earlier stage holds


def _stage(said: str) -> str:
    """ "job interview" → "interview", "second round interview" → "second round"."""
    stage = " ".join(said.lower().split()).removeprefix("job ")
    return re.sub(
        r"^((?:first|second|third|final|next|last) (?:round|stage)) interview$", r"\1", stage
    )


def _job_said(sentence: str, today: date, known: _JobState | None) -> _JobSaid | None:
    """What the sentence says of a job hunt; with a `known` one, looser phrasings count."""
    when = stated(sentence, today, ahead=True)
    how = _HOW.search(sentence)
    outright = _job_said_outright(sentence, when, how["how"].lower() if how else "")
    if outright is not None or known is None:
        return outright
    named = _NAMED_STAGE.search(sentence) or _STAGE_SAID.search(sentence)
    if named is None:
        return None
    stage = _stage(named["stage"])
    # "it went well, they want a third round": the outcome was the last round's
    outcome = how["how"].lower() if how and how.start() > named.start("stage") else ""
    # a round of its own ("a third round") is news; the bare word "interview" is not
    next_round = stage not in (known.stage, "interview")
    if when or named["company"] or outcome or next_round:
        return _JobSaid(stage, named["company"] or "", when, outcome)
    return None


def _job_said_outright(sentence: str, when: Stated | None, outcome: str) -> _JobSaid | None:
    """A job hunt said in so many words: an interview had, interviewing, looking."""
    have = _JOB_HAVE.search(sentence)
    if have:
        return _JobSaid(_stage(have["stage"]), have["company"] or "", when, outcome)
    doing = _JOB_DOING.search(sentence)
    if doing:
        stage = doing["doing"].lower()
        if stage == "interviewing" and when:
            stage = "interview"
        return _JobSaid(stage, doing["company"] or "", when, outcome)
    search = _JOB_SEARCH.search(sentence)
    if search:
        return _JobSaid(f"looking in {search['place']}" if search["place"] else "", search=True)
    return None


class _JobHunt(_Concern):
    KEY: Final = "job_hunt"

    def owns(self, key: str) -> bool:
        return key == self.KEY

    def key_of(self, text: str) -> str | None:
        return self.KEY if _JOB_WORDS.search(text) else None

    def category(self, key: str, text: str) -> str:
        return "work"

    def start(self, sentence: str, today: date) -> Story | None:
        said = _job_said(sentence, today, None)
        return self._story(said, _JobState()) if said else None

    def news(self, sentence: str, key: str, old: str, today: date) -> Story | None:
        before = _JobState.read(old)
        said = _job_said(sentence, today, before)
        return self._story(said, before) if said else None

    def end(self, sentence: str, key: str, old: str) -> Ending | None:
        match = (
            _GOT_JOB.search(sentence)
            or _OFFERED.search(sentence)
            or _STARTING.search(sentence)
            or _GOT_IT.search(sentence)
        )
        if match is None:
            return None
        company = match.groupdict().get("company") or _JobState.read(old).company
        said = f"Works at {company}" if company else "Got a new job"
        return Ending("job", said, "work", good=True, since=bool(company))

    def _story(self, said: _JobSaid, old: _JobState) -> Story | None:
        if said.search:
            state = _JobState(stage=said.stage)
        elif said.when or (said.stage and said.stage != old.stage):
            # a new stage, or a new day: what was said of the old one no longer holds
            when = said.when.phrase if said.when else ""
            state = _JobState(said.stage or old.stage, said.company or old.company, when, said.how)
        else:
            company = said.company or old.company
            state = _JobState(old.stage or said.stage, company, old.when, said.how or old.how)
        text = _fitting(*state.texts())
        if text is None:
            return None
        cadence, event_on = _when(said.when if not said.how else None)
        return Story(self.KEY, text, cadence, "work", event_on)


# ---- a house hunt ---------------------------------------------------------------------------

_HOMES = r"flat|apartment|house|home|place|studio|condo"
_HOUSE_SEARCH = re.compile(
    r"(?i:\b(?:I|we)(?:'re|\s+are|'m|\s+am)\s+(?:still\s+|now\s+|currently\s+)?"
    r"(?:looking|searching|hunting)\s+for\s+(?:a|an|our)\s+(?:new\s+|bigger\s+|smaller\s+|first\s+)?"
    rf"(?P<home>{_HOMES}))\b(?:\s+(?i:to\s+(?:rent|buy)))?(?:\s+(?i:in|near|around)\s+(?P<place>{NAME}))?"
)
_HUNTING = re.compile(
    r"(?i:\b(?P<home>house|flat|apartment|home)[- ]?hunting)\b"
    rf"(?:\s+(?i:in|near|around)\s+(?P<place>{NAME}))?"
)
_VIEWING = re.compile(
    r"(?i:\bviewings?\b|\b(?:see|seeing|view|viewing|look\s+at|looking\s+at)\s+"
    rf"(?:a|an|the|another|one|two|three)\s+(?:new\s+)?(?P<home>{_HOMES})s?\b)"
    rf"(?:\s+(?i:in|near)\s+(?P<place>{NAME}))?"
)
_OFFER = re.compile(
    r"(?i:\b(?:made|put\s+in|put|making|placed)\s+an?\s+offer\s+on\s+(?:a|an|the)\s+(?:new\s+)?"
    rf"(?P<home>{_HOMES}))\b(?:\s+(?i:in|near)\s+(?P<place>{NAME}))?"
)
_HOUSE_END = re.compile(
    r"(?i:\b(?:I|we)\s+(?:just\s+|finally\s+|have\s+|'ve\s+)?(?P<verb>found|bought|got|rented|"
    r"signed\s+(?:the|a)\s+lease\s+(?:on|for))\s+(?:a|an|the|our|my)\s+(?:new\s+)?"
    rf"(?P<home>{_HOMES}))\b(?:\s+(?i:in|near)\s+(?P<place>{NAME}))?"
)
_HOUSE_TEXT = re.compile(
    r"(?P<activity>looking for|viewing|made an offer on)\s+an?\s+(?P<home>\w+)"
    rf"(?:\s+in\s+(?P<place>{NAME}))?(?:\s+(?P<when>on\s.+?))?\.?$"
)
_IN_PLACE = re.compile(rf"\bin\s+(?P<place>{NAME})")
_HOME_WORD = re.compile(rf"(?i)\b(?P<home>{_HOMES})\b")
_HOUSE_WORDS = re.compile(
    r"(?i)\b(?:house|flat|apartment|home)[- ]?hunt"
    r"|\blooking for an? (?:new )?(?:flat|apartment|house|home|place)\b"
)
_GENERIC_HOMES: Final = frozenset({"house", "home", "place"})


@dataclass(frozen=True, slots=True)
class _HouseState:
    activity: str = ""  # "looking for", "viewing", "made an offer on"
    home: str = ""
    place: str = ""
    when: str = ""

    @classmethod
    def read(cls, text: str) -> _HouseState:
        match = _HOUSE_TEXT.search(text)
        if match:
            return cls(match["activity"], match["home"], match["place"] or "", match["when"] or "")
        place, home = _IN_PLACE.search(text), _HOME_WORD.search(text)
        return cls(place=place["place"] if place else "", home=home["home"].lower() if home else "")

    def texts(self) -> tuple[str, ...]:
        where = f" in {self.place}" if self.place else ""
        if not self.activity:
            return (f"Is house-hunting{where}.",)
        thing = f"{_article(self.home)} {self.home}" if self.home else "a place"
        detail = f"{self.activity} {thing}{where}"
        return tuple(
            f"Is house-hunting: {text}."
            for text in (f"{detail} {self.when}" if self.when else detail, detail)
        )


class _HouseHunt(_Concern):
    KEY: Final = "house_hunt"

    def owns(self, key: str) -> bool:
        return key == self.KEY

    def key_of(self, text: str) -> str | None:
        return self.KEY if _HOUSE_WORDS.search(text) else None

    def category(self, key: str, text: str) -> str:
        return "home"

    def start(self, sentence: str, today: date) -> Story | None:
        return self._story(sentence, _HouseState(), today, known=False)

    def news(self, sentence: str, key: str, old: str, today: date) -> Story | None:
        return self._story(sentence, _HouseState.read(old), today, known=True)

    def end(self, sentence: str, key: str, old: str) -> Ending | None:
        match = _HOUSE_END.search(sentence)
        if match is None:
            return None
        before = _HouseState.read(old)
        verb = " ".join(match["verb"].lower().split()).replace("signed a lease", "signed the lease")
        home = match["home"].lower() if match["home"] else before.home
        place = match["place"] or before.place
        said = f"{verb.capitalize()} {_article(home)} {home}" + (f" in {place}" if place else "")
        return Ending("home", said, "home", good=True)

    def _story(self, sentence: str, old: _HouseState, today: date, *, known: bool) -> Story | None:
        found = _HOUSE_SEARCH.search(sentence) or _HUNTING.search(sentence)
        activity, when = "looking for", None
        if found is None and known:
            found = _VIEWING.search(sentence)
            activity = "viewing"
            if found is None:
                found, activity = _OFFER.search(sentence), "made an offer on"
            when = stated(sentence, today, ahead=True) if activity == "viewing" else None
        if found is None:
            return None
        home = (found["home"] or "").lower()
        if activity == "looking for" and home in _GENERIC_HOMES:
            home = ""  # "house hunting" says no more than the hunt itself
        state = _HouseState(
            activity if home or activity != "looking for" else old.activity,
            home or old.home,
            found["place"] or old.place,
            when.phrase if when else "",
        )
        text = _fitting(*state.texts())
        if text is None:
            return None
        cadence, event_on = (Cadence.EVENT, when.over_by) if when else (Cadence.SLOW, None)
        return Story(self.KEY, text, cadence, "home", event_on)


# ---- a stock held for a target --------------------------------------------------------------

_MONEY = (
    r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?[kKmM]?"
    r"|\d[\d,]*(?:\.\d+)?\s?(?:dollars|USD|yuan|RMB|euros?|pounds)\b"
)
_TICKER = r"(?!(?:I|A|An|The|My|Our|Some|It|Its)\b)(?:[A-Z]{2,5}|[A-Z][a-z]{2,})"
_BOUGHT_AT = re.compile(
    r"(?i:\b(?:I|we)\s+(?:just\s+|recently\s+|also\s+|have\s+|'ve\s+)?(?:bought|picked\s+up))\s+"
    r"(?:(?P<qty>\d[\d,]*)\s+)?(?i:(?:shares|units)\s+of\s+|some\s+)?"
    rf"(?P<ticker>{_TICKER})(?:\s+(?i:shares|stock))?\s+(?i:at|for)\s+(?P<price>{_MONEY})"
)
_HOLD_UNTIL = re.compile(
    r"(?i:\b(?:I|we)(?:'m|\s+am|'re|\s+are)\s+(?:still\s+)?(?:holding|keeping))\s+(?:(?i:my|our)\s+)?"
    rf"(?P<ticker>{_TICKER})(?:\s+(?i:shares|stock))?\s+(?i:until|till|til|to|for)\s+(?P<target>{_MONEY})"
)
_TARGET = re.compile(
    r"(?i:(?:\b(?:won't|will\s+not|not\s+going\s+to|never\s+going\s+to|not|never)\s+sell(?:ing)?"
    r"(?:\s+(?:it|them|out|up))?|\b(?:hold|holding|keep|keeping)(?:\s+(?:it|them|on))?)"
    r"\s+(?:until|till|til|before|below|under|to|for)\s+(?:it\s+(?:hits|reaches|gets\s+to)\s+)?)"
    rf"(?P<target>{_MONEY})"
)
_SOLD = re.compile(
    r"(?i:\b(?:I|we)\s+(?:just\s+|finally\s+|already\s+|have\s+|'ve\s+)?sold\s+"
    r"(?:(?:all|some|half)\s+(?:of\s+)?)?(?:my\s+|our\s+|the\s+)?)"
    rf"(?:(?P<ticker>{_TICKER})\b\s*)?(?P<what>(?i:shares|stock|stake|position|it|them)\b)?"
    rf"(?:\s*(?i:at|for)\s+(?P<price>{_MONEY}))?"
)
_HELD = re.compile(
    r"(?i:\b(?:bought|holding|holds|hold)\s+(?:\d[\d,]*\s+)?(?:shares\s+of\s+)?)"
    rf"(?P<ticker>{_TICKER})\b[^.;]*?(?i:\bat\b|\buntil\b|\btill\b)"
)
_PRICE = re.compile(rf"(?i:\bat)\s+(?P<price>{_MONEY})")
_TARGET_SAID = re.compile(rf"(?i:\b(?:until|till))\s+(?P<target>{_MONEY})")
_QTY = re.compile(r"(?i:\bbought)\s+(?P<qty>\d[\d,]*)\s")
_CAPS = re.compile(r"\b[A-Z]{2,5}\b")


@dataclass(frozen=True, slots=True)
class _Held:
    ticker: str
    qty: str = ""
    price: str = ""
    target: str = ""

    @classmethod
    def read(cls, ticker: str, text: str) -> _Held:
        price, target, qty = _PRICE.search(text), _TARGET_SAID.search(text), _QTY.search(text)
        return cls(
            ticker,
            qty["qty"] if qty else "",
            price["price"] if price else "",
            target["target"] if target else "",
        )

    def text(self) -> str:
        if self.price:
            bought = f"Bought {self.qty + ' ' if self.qty else ''}{self.ticker} at {self.price}"
            return f"{bought}; holding until {self.target}." if self.target else f"{bought}."
        return (
            f"Holding {self.ticker} until {self.target}."
            if self.target
            else f"Holds {self.ticker}."
        )


def _held_said(sentence: str) -> _Held | None:
    """A stock bought at a price (and the target it is held for), or held for a target."""
    bought = _BOUGHT_AT.search(sentence)
    if bought:
        target = _TARGET.search(sentence, bought.end())
        return _Held(
            bought["ticker"],
            bought["qty"] or "",
            bought["price"],
            target["target"] if target else "",
        )
    holding = _HOLD_UNTIL.search(sentence)
    return _Held(holding["ticker"], target=holding["target"]) if holding else None


class _Holding(_Concern):
    PREFIX: Final = "holding_"

    def owns(self, key: str) -> bool:
        return key.startswith(self.PREFIX)

    def key_of(self, text: str) -> str | None:
        held = _HELD.search(text)
        return self.PREFIX + held["ticker"].lower() if held else None

    def category(self, key: str, text: str) -> str:
        return "finance"

    def start(self, sentence: str, today: date) -> Story | None:
        held = _held_said(sentence)
        return self._story(held) if held else None

    def news(self, sentence: str, key: str, old: str, today: date) -> Story | None:
        ticker = self._ticker(key, old)
        before = _Held.read(ticker, old)
        said = _held_said(sentence)
        if said is not None:
            if said.ticker.lower() != ticker.lower():
                return None  # another stock: a thread of its own
            bought = said if said.price else before
            return self._story(
                _Held(ticker, bought.qty, bought.price, said.target or before.target)
            )
        target = _TARGET.search(sentence)
        others = {word for word in _CAPS.findall(sentence) if word.lower() != ticker.lower()}
        if target is None or others:
            return None
        return self._story(_Held(ticker, before.qty, before.price, target["target"]))

    def end(self, sentence: str, key: str, old: str) -> Ending | None:
        sold = _SOLD.search(sentence)
        if sold is None or not (sold["ticker"] or sold["what"]):
            return None
        ticker = self._ticker(key, old)
        if sold["ticker"] and sold["ticker"].lower() != ticker.lower():
            return None
        price = f" at {sold['price']}" if sold["price"] else ""
        return Ending(
            f"shares_{ticker.lower()}", f"Sold their {ticker} shares{price}", "finance", False
        )

    def _ticker(self, key: str, old: str) -> str:
        """The ticker as the thread writes it ("TSLA"), from its key ("holding_tsla")."""
        wanted = key.removeprefix(self.PREFIX)
        said = re.search(rf"\b(?i:{re.escape(wanted)})\b", old)
        return said.group(0) if said else wanted.upper()

    def _story(self, held: _Held) -> Story | None:
        text = _fitting(held.text())
        if text is None:
            return None
        return Story(self.PREFIX + held.ticker.lower(), text, Cadence.SLOW, "finance")


# ---- a baby on the way ----------------------------------------------------------------------

_EXPECTING = re.compile(
    r"(?i:\b(?:my\s+(?P<relation>wife|partner|girlfriend|fiancée?)(?:\s+is|'s)|(?:we|I)(?:'re|\s+are|'m|\s+am))"
    r"\s+(?:now\s+|finally\s+)?expecting"
    r"(?P<what>\s+(?:a\s+baby(?:\s+(?:boy|girl))?|a\s+child|a\s+(?:boy|girl)|twins"
    r"|our\s+(?:first|second|third)(?:\s+(?:baby|child))?))?"
    r"(?=\s*[,.!;]|\s*$|\s+(?:in|on|this|next|around|due|any\s+day|soon|again)\b))"
)
_DUE = re.compile(r"(?i:\b(?:is|'s|are|'re)\s+due\b|\bdue\s+(?:date|in|on)\b)")
_BORN = re.compile(
    r"(?i:\b(?:(?:the|our|my)\s+(?P<who>baby|son|daughter|boy|girl|little\s+one)|(?P<pronoun>she|he))"
    r"\s+(?:is|was|has\s+been|'s)\s+(?:finally\s+)?(?:born|arrived)\b"
    r"|\b(?:the|our)\s+baby\s+is\s+here\b"
    r"|\b(?:she|we|I)\s+(?:had|gave\s+birth\s+to)\s+(?:the|a|our)\s+(?:baby\s+)?(?P<had>baby|boy|girl|son|daughter)\b"
    r"|\bgave\s+birth\b)"
)
_DUE_WRITTEN = re.compile(r",\s*due\s+.*$")
_BABY_WORDS = re.compile(r"(?i)\bexpecting\b|\bbaby\b")
_CHILD: Final = {
    "boy": "son",
    "girl": "daughter",
    "little one": "baby",
    "she": "daughter",
    "he": "son",
}


class _Expecting(_Concern):
    KEY: Final = "expecting"

    def owns(self, key: str) -> bool:
        return key == self.KEY

    def key_of(self, text: str) -> str | None:
        return self.KEY if _BABY_WORDS.search(text) else None

    def category(self, key: str, text: str) -> str:
        return "family"

    def start(self, sentence: str, today: date) -> Story | None:
        match = _EXPECTING.search(sentence)
        if match is None:
            return None
        relation = match["relation"]
        head = f"Their {relation.lower()} is expecting" if relation else "Is expecting"
        what = re.sub(r"(?i)\bour\b", "their", " ".join((match["what"] or "a baby").split()))
        return self._story(f"{head} {what}", stated(sentence, today, ahead=True))

    def news(self, sentence: str, key: str, old: str, today: date) -> Story | None:
        fresh = self.start(sentence, today)
        due = _DUE_WRITTEN.search(old)
        if fresh is not None and fresh.event_on is None and due is not None:
            # said again without a date: the due date said before still holds
            return Story(self.KEY, old, Cadence.EVENT, "family", written_day(due.group(0)))
        if fresh is not None:
            return fresh
        when = stated(sentence, today, ahead=True) if _DUE.search(sentence) else None
        if when is None:
            return None
        return self._story(_DUE_WRITTEN.sub("", old.strip()).rstrip("."), when)

    def end(self, sentence: str, key: str, old: str) -> Ending | None:
        match = _BORN.search(sentence)
        if match is None:
            return None
        said = (match["who"] or match["pronoun"] or match["had"] or "baby").lower()
        child = _CHILD.get(" ".join(said.split()), said)
        return Ending("family_baby", f"Their {child} was born", "family", good=True)

    def _story(self, head: str, when: Stated | None) -> Story | None:
        text = _fitting(f"{head}, due {when.phrase}." if when else f"{head}.")
        if text is None:
            return None
        cadence = Cadence.EVENT if when else Cadence.SLOW
        return Story(self.KEY, text, cadence, "family", when.over_by if when else None)


# ---- a dated event ahead --------------------------------------------------------------------

_EVENT_NOUNS = (
    "exams?|test|surgery|operation|audition|presentation|hearing|recital|concert|pitch|scan|viva|"
    "defen[cs]e|half[- ]marathon|marathon|triathlon|race|match|appointment|wedding|graduation|"
    "performance|competition|tournament"
)
_EVENT_HAVE = re.compile(
    r"(?i:\b(?:I|we)(?:'ve\s+got|\s+have\s+got|\s+have|'ve|(?:'m|\s+am|'re|\s+are)\s+"
    r"(?:having|taking|sitting|running|doing))\s+"
    rf"(?:a|an|my|the|our)\s+(?:[\w-]+\s+){{0,3}}?(?P<noun>{_EVENT_NOUNS}))\b"
    rf"(?:\s+(?i:at|with|for|in)\s+{NAME})?"
)
_EVENT_DOING = re.compile(
    r"(?i:\b(?:I|we)(?:'m|\s+am|'re|\s+are)\s+"
    r"(?P<doing>auditioning|presenting|pitching|performing|competing))\b"
    rf"(?:\s+(?i:at|with|for|in)\s+{NAME})?"
)
_DOING_NOUN: Final = {
    "auditioning": "audition",
    "presenting": "presentation",
    "pitching": "pitch",
    "performing": "performance",
    "competing": "competition",
}
_STUDIES: Final = frozenset({"exam", "test", "viva", "defence"})
_OUTCOME = re.compile(
    r"(?i:\b(?P<good>passed|aced|nailed|finished|completed|won|went\s+(?:really\s+|very\s+|so\s+)?"
    r"(?:well|great|fine|smoothly|ok|okay))\b"
    r"|\b(?:failed|lost|didn't\s+pass|went\s+(?:badly|terribly|wrong)|didn't\s+go\s+well)\b"
    r"|\b(?:is|was)\s+(?:over|done)\b|\bwent\s+through\b)"
)
_RELATIVE = re.compile(
    r"(?i)\s*\b(?:just|today|yesterday|tonight|last\s+night|this\s+(?:morning|afternoon|evening))\b"
)
_WRITTEN_WHEN = re.compile(
    rf"\s+(?:on|in)\s+(?:(?:{WEEKDAY_NAMES}|{MONTH_NAMES})\s+)?\d{{4}}(?:-\d{{2}}-\d{{2}})?(?=\.?$)"
)
_ANY_EVENT = re.compile(rf"(?i)\b(?P<noun>{_EVENT_NOUNS})\b")


def _noun(said: str) -> str:
    """The event's key word: "exams" → "exam", "half-marathon" → "half_marathon"."""
    noun = " ".join(said.lower().replace("-", " ").split())
    noun = {"exams": "exam", "defense": "defence"}.get(noun, noun)
    return noun.replace(" ", "_")


def _names(sentence: str, noun: str) -> bool:
    words = noun.replace("_", r"[\s-]")
    return re.search(rf"(?i)\b{words}s?\b", sentence) is not None


class _Event(_Concern):
    PREFIX: Final = "event_"

    def owns(self, key: str) -> bool:
        return key.startswith(self.PREFIX)

    def key_of(self, text: str) -> str | None:
        found = _ANY_EVENT.search(text)
        return self.PREFIX + _noun(found["noun"]) if found else None

    def category(self, key: str, text: str) -> str:
        """Exams are education; an operation is just a date in the diary (health is a
        sensitive category, kept only when the person asked), as is anything else."""
        if key.removeprefix(self.PREFIX) in _STUDIES:
            return "education"
        category = category_by_words(text)
        return category if category and category not in SENSITIVE_CATEGORIES else "schedule"

    def start(self, sentence: str, today: date) -> Story | None:
        found = _EVENT_HAVE.search(sentence)
        if found is not None:
            noun = _noun(found["noun"])
        else:
            found = _EVENT_DOING.search(sentence)
            if found is None:
                return None
            noun = _DOING_NOUN[found["doing"].lower()]
        when = stated(sentence, today, ahead=True)
        said = sentence[found.start() : found.end()] + (f" {when.phrase}" if when else "")
        return self._story(self.PREFIX + noun, third_person(said), when)

    def news(self, sentence: str, key: str, old: str, today: date) -> Story | None:
        fresh = self.start(sentence, today)
        if fresh is not None:
            return fresh if fresh.key == key else None
        when = stated(sentence, today, ahead=True)
        if when is None or not _names(sentence, key.removeprefix(self.PREFIX)):
            return None
        moved = _WRITTEN_WHEN.sub("", old.strip().rstrip(".")).rstrip(".")
        return self._story(key, f"{moved} {when.phrase}.", when)

    def end(self, sentence: str, key: str, old: str) -> Ending | None:
        noun = key.removeprefix(self.PREFIX)
        outcome = _OUTCOME.search(sentence)
        if outcome is None or not _names(sentence, noun):
            return None
        said = third_person(_RELATIVE.sub("", sentence)).rstrip(".")
        return Ending(noun, said, self.category(key, said), good=bool(outcome["good"]))

    def _story(self, key: str, text: str, when: Stated | None) -> Story | None:
        fitting = _fitting(text)
        if fitting is None:
            return None
        event_on = when.over_by if when else None
        return Story(key, fitting, Cadence.EVENT, self.category(key, fitting), event_on)


# ---- any concern ----------------------------------------------------------------------------

#: in the order a thread's text is recognised: a job interview is a job hunt, not an event
_CONCERNS: Final[tuple[_Concern, ...]] = (
    _JobHunt(),
    _HouseHunt(),
    _Holding(),
    _Expecting(),
    _Event(),
)


def key_of(text: str) -> str | None:
    """The concern a thread's text is about, as its key ("job_hunt", "holding_tsla")."""
    return next((key for concern in _CONCERNS if (key := concern.key_of(text))), None)


def category_of(key: str | None, text: str) -> str:
    concern = _owner(key)
    return concern.category(key, text) if concern and key else "general"


def start(sentence: str, today: date) -> Story | None:
    """A new concern the sentence states outright, if any."""
    return next((story for concern in _CONCERNS if (story := concern.start(sentence, today))), None)


def news(sentence: str, key: str, old: str, today: date) -> Story | None:
    """The new state of the thread `key` (its state now `old`), if the sentence moves it on."""
    concern = _owner(key)
    return concern.news(sentence, key, old, today) if concern else None


def ending(sentence: str, key: str, old: str) -> Ending | None:
    """The fact that concludes the thread `key`, if the sentence says it concluded."""
    concern = _owner(key)
    return concern.end(sentence, key, old) if concern else None


def _owner(key: str | None) -> _Concern | None:
    return next((concern for concern in _CONCERNS if key and concern.owns(key)), None)
