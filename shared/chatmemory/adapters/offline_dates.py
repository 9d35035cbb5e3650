"""The offline stand-in's stated times: a weekday, a relative day, a date or a month said in
a sentence, written out as a real date ("on Thursday" → "on Thursday 2026-12-03"), so a
memory read months later still says when; and a stretch of time ahead ("next week", "until
Friday", "for the summer") written out the same way, with the day it is over. Shared by the
one-to-one, room and thread rules.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

_WEEKDAYS: Final = {name.lower(): number for number, name in enumerate(calendar.day_name)}
_MONTHS: Final = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTH_NAMES: Final = "|".join(name for name in calendar.month_name if name)
WEEKDAY_NAMES: Final = "|".join(calendar.day_name)
# A time this stand-in can turn into a date: a weekday, a relative day, a date, a month.
_WHEN: Final = re.compile(
    rf"\b(?:(?:(?:on|this) )?(?P<weekday>{WEEKDAY_NAMES})"
    r"|(?P<relative>today|tonight|tomorrow|yesterday)"
    rf"|(?:on )?(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})"
    rf"|on (?P<day>\d{{1,2}})(?:st|nd|rd|th)? (?P<month>{MONTH_NAMES})(?: (?P<year>\d{{4}}))?"
    rf"|in (?P<month_only>{MONTH_NAMES})(?: (?P<month_year>\d{{4}}))?)\b",
    re.IGNORECASE,
)
# A name (a place, a company): capitalised words that are not a month or a weekday, so
# "at Acme on Friday" ends at "Acme". Case-sensitive wherever it is used.
NAME: Final = (
    rf"(?!(?:{MONTH_NAMES}|{WEEKDAY_NAMES})\b)[A-Z][\w'&-]*"
    rf"(?:\s(?!(?:{MONTH_NAMES})\b)[A-Z][\w'&-]*)*"
)
# A time as this stand-in writes it out: the phrase `Stated.phrase` makes.
_WRITTEN: Final = re.compile(
    rf"(?:on (?:(?:{WEEKDAY_NAMES}) )?(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})"
    rf"|in (?P<month>{MONTH_NAMES}) (?P<year>\d{{4}}))"
)


# A stretch of time ahead that ends on a day: "until Friday", "till the end of March".
_UNTIL: Final = re.compile(
    r"\b(?:until|till|til|through)\s+(?:"
    r"the\s+end\s+of\s+(?:(?:the|this)\s+(?P<end_this>week|month|year)|next\s+(?P<end_next>week|month)"
    rf"|(?P<end_month>{MONTH_NAMES})(?:\s+(?P<end_year>\d{{4}}))?)"
    r"|next\s+(?P<next>week|month)"
    r"|(?:the\s+)?(?P<weekend>weekend)"
    rf"|(?P<weekday>{WEEKDAY_NAMES})"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?P<iso>\d{4}-\d{2}-\d{2})"
    rf"|(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{MONTH_NAMES})(?:,?\s+(?P<year>\d{{4}}))?"
    rf"|(?P<month_first>{MONTH_NAMES})\s+(?P<day_after>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<year_after>\d{{4}}))?"
    rf"|(?P<month_only>{MONTH_NAMES})(?:\s+(?P<month_year>\d{{4}}))?"
    r")\b",
    re.IGNORECASE,
)
# A calendar stretch ("next week", "this weekend", "for the summer") or a length of time
# from today ("for two weeks", "for the next three days").
_SPAN: Final = re.compile(
    r"\b(?:(?P<which>this|next|for\s+the|over\s+the)\s+(?P<unit>weekend|week|month|year)"
    r"|(?P<season>(?:for|over|during)\s+the|this)\s+summer"
    r"|for\s+(?:the\s+next\s+|another\s+)?(?P<count>\d{1,3}|a\s+couple\s+of|an?|one|two|three|"
    r"four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?P<length>days?|weeks?|months?)"
    r")\b",
    re.IGNORECASE,
)
_COUNTS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
# The days that are over too soon to be worth remembering as a stretch.
_TOO_SOON: Final = frozenset({"today", "tonight", "yesterday"})


@dataclass(frozen=True, slots=True)
class Period:
    """A stretch of time ahead stated in a sentence: where its words are, as a standalone
    phrase ("the week of 2026-12-14", "until Friday 2026-12-11"), and its last day."""

    start: int
    end: int
    phrase: str
    last: date

    @property
    def over_on(self) -> date:
        """The first day it no longer holds: when a memory of it expires."""
        return self.last + timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Stated:
    """A time stated in a sentence: where its words are, as a standalone phrase, its day.
    A month said alone is its first day; `whole_month` says so."""

    start: int
    end: int
    phrase: str
    day: date
    whole_month: bool = False

    @property
    def over_by(self) -> date:
        """The day by which it has happened: the month's last day for "in March"."""
        return month_end(self.day) if self.whole_month else self.day


def dated(text: str, today: date, *, ahead: bool) -> tuple[str, date | None]:
    """`text` with its first stated time written out as a date ("on Thursday" → "on
    Thursday 2026-12-03"), and that date; unchanged and None when none is stated."""
    when = stated(text, today, ahead=ahead)
    if when is None:
        return text, None
    return text[: when.start] + when.phrase + text[when.end :], when.day


def stated(text: str, today: date, *, ahead: bool) -> Stated | None:
    """The first time `text` states that names a real day; a bare weekday or month is the
    next one when the sentence looks `ahead`, else the last one."""
    for match in _WHEN.finditer(text):
        day = _day(match, today, ahead=ahead)
        if day is not None:
            whole_month = bool(match["month_only"])
            return Stated(match.start(), match.end(), _phrase(match, day), day, whole_month)
    return None


def period(text: str, today: date) -> Period | None:
    """The first stretch of time ahead that `text` states: a calendar stretch, a length of
    time from today, an end ("until Friday"), or a day or month said alone. None when it
    states none, or only today or a time already past: a memory of it would be over
    before it is read."""
    found = [
        found
        for found in (_until(text, today), _span(text, today), _day_ahead(text, today))
        if found is not None
    ]
    return min(found, key=lambda found: found.start, default=None)


def time_at(text: str) -> int | None:
    """Where the first time `text` states begins, whichever day it names; None when it
    states none."""
    found = [match.start() for pattern in (_WHEN, _UNTIL, _SPAN) if (match := pattern.search(text))]
    return min(found, default=None)


def written_day(phrase: str) -> date | None:
    """The day a written-out time names ("on Friday 2026-12-11" → that day; "in March
    2027" → its last day); None when `phrase` holds none."""
    match = _WRITTEN.search(phrase)
    if match is None:
        return None
    if match["iso"]:
        try:
            return date.fromisoformat(match["iso"])
        except ValueError:
            return None
    return month_end(date(int(match["year"]), _MONTHS[match["month"].lower()], 1))


def month_end(day: date) -> date:
    return day.replace(day=calendar.monthrange(day.year, day.month)[1])


def month_of(day: date) -> str:
    """ "December 2026": when a conclusion happened, as a memory says it."""
    return f"{calendar.month_name[day.month]} {day.year}"


def instant(day: date | None) -> datetime | None:
    return datetime.combine(day, time(), tzinfo=UTC) if day else None


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
            month, number = _MONTHS[groups["month"].lower()], int(groups["day"])
            if groups["year"]:
                day = date(int(groups["year"]), month, number)
            else:  # "on 3 March": the next one when looking ahead, else the last one
                day = date(today.year, month, number)
                if ahead and day < today:
                    day = date(today.year + 1, month, number)
                elif not ahead and day > today:
                    day = date(today.year - 1, month, number)
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
        return f"in {month_of(day)}"
    if match["weekday"] or match["relative"]:
        return f"on {calendar.day_name[day.weekday()]} {day.isoformat()}"
    return f"on {day.isoformat()}"


# ---- a stretch of time ahead -------------------------------------------------------------


def _until(text: str, today: date) -> Period | None:
    for match in _UNTIL.finditer(text):
        try:
            said = _until_day(match, today)
        except ValueError:  # "until 31 February"
            continue
        if said is not None and said[1] >= today:
            return Period(match.start(), match.end(), f"until {said[0]}", said[1])
    return None


def _until_day(match: re.Match[str], today: date) -> tuple[str, date] | None:
    """What an "until …" names, written out, and the last day it covers."""
    groups = match.groupdict()
    return _until_stretch(groups, today) or _until_named(groups, today)


def _until_stretch(groups: dict[str, str | None], today: date) -> tuple[str, date] | None:
    """ "the end of the month", "the end of March", "next week", "the weekend"."""
    monday = _monday(today)
    if groups["end_this"] or groups["end_next"]:
        unit = (groups["end_this"] or groups["end_next"] or "").lower()
        return _end_of(unit, 1 if groups["end_next"] else 0, today)
    if groups["end_month"]:
        first = _month(groups["end_month"], groups["end_year"], today, ahead=True)
        return f"the end of {month_of(first)}", month_end(first)
    if groups["next"]:
        if groups["next"].lower() == "week":
            return f"the week of {monday + timedelta(days=7)}", monday + timedelta(days=13)
        first = _add_months(today.replace(day=1), 1)
        return month_of(first), month_end(first)
    if groups["weekend"]:
        return f"the weekend of {monday + timedelta(days=5)}", monday + timedelta(days=6)
    return None


def _end_of(unit: str, ahead: int, today: date) -> tuple[str, date]:
    """The end of this (or, `ahead`, the next) week, month or year, and its last day."""
    if unit == "week":
        return _weekday_phrase(_monday(today) + timedelta(days=6 + 7 * ahead))
    if unit == "month":
        first = _add_months(today.replace(day=1), ahead)
        return f"the end of {month_of(first)}", month_end(first)
    return f"the end of {today.year}", date(today.year, 12, 31)


def _until_named(groups: dict[str, str | None], today: date) -> tuple[str, date] | None:
    """A day or a month by name: "Friday", "tomorrow", "12 March", "March"."""
    if groups["weekday"]:
        return _weekday_phrase(_next_weekday(today, groups["weekday"]))
    if groups["tomorrow"]:
        return _weekday_phrase(today + timedelta(days=1))
    if groups["iso"]:
        day = date.fromisoformat(groups["iso"])
        return day.isoformat(), day
    month = groups["month"] or groups["month_first"]
    number = groups["day"] or groups["day_after"]
    if month and number:
        day = _date_ahead(month, int(number), groups["year"] or groups["year_after"], today)
        return day.isoformat(), day
    if groups["month_only"]:
        first = _month(groups["month_only"], groups["month_year"], today, ahead=True)
        return month_of(first), month_end(first)
    return None


def _span(text: str, today: date) -> Period | None:
    for match in _SPAN.finditer(text):
        phrase, last = _span_days(match, today)
        if last >= today:
            return Period(match.start(), match.end(), phrase, last)
    return None


def _span_days(match: re.Match[str], today: date) -> tuple[str, date]:
    """A calendar stretch or a length of time, written out, with its last day."""
    groups = match.groupdict()
    if groups["season"]:  # the northern summer: this year's, or next year's once it is over
        year = today.year if today.month <= 8 else today.year + 1
        said = " ".join(groups["season"].lower().split())
        prefix = "in the" if said == "this" else said
        return f"{prefix} summer of {year}", date(year, 8, 31)
    if groups["count"]:
        count = _COUNTS.get(" ".join(groups["count"].lower().split())) or int(groups["count"])
        length = groups["length"].lower().rstrip("s")
        if length == "month":
            last = _add_months(today, count)
        else:
            last = today + timedelta(days=count * (7 if length == "week" else 1))
        return f"until {last.isoformat()}", last
    which = " ".join(groups["which"].lower().split())
    ahead = 1 if which == "next" else 0
    prefix = f"{which} " if which in ("for the", "over the") else ""
    unit = groups["unit"].lower()
    monday = _monday(today) + timedelta(days=7 * ahead)
    if unit == "week":
        return f"{prefix or 'the '}week of {monday}", monday + timedelta(days=6)
    if unit == "weekend":
        saturday = monday + timedelta(days=5)
        return f"{prefix or 'the '}weekend of {saturday}", saturday + timedelta(days=1)
    if unit == "month":
        first = _add_months(today.replace(day=1), ahead)
        return f"{'for' if prefix else 'in'} {month_of(first)}", month_end(first)
    year = today.year + ahead
    return f"{'for' if prefix else 'in'} {year}", date(year, 12, 31)


def _day_ahead(text: str, today: date) -> Period | None:
    """A day or a month said alone, looking ahead ("on Friday", "tomorrow", "in March")."""
    for match in _WHEN.finditer(text):
        if (match["relative"] or "").lower() in _TOO_SOON:
            continue
        day = _day(match, today, ahead=True)
        if day is None:
            continue
        last = month_end(day) if match["month_only"] else day
        if last >= today:
            return Period(match.start(), match.end(), _phrase(match, day), last)
    return None


def _weekday_phrase(day: date) -> tuple[str, date]:
    return f"{calendar.day_name[day.weekday()]} {day.isoformat()}", day


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _next_weekday(today: date, name: str) -> date:
    """The next such weekday, never today."""
    return today + timedelta(days=(_WEEKDAYS[name.lower()] - today.weekday()) % 7 or 7)


def _date_ahead(month: str, number: int, year: str | None, today: date) -> date:
    """ "12 March": of the year given, else the next one (today counts)."""
    chosen = date(int(year) if year else today.year, _MONTHS[month.lower()], number)
    if not year and chosen < today:
        chosen = chosen.replace(year=today.year + 1)
    return chosen


def _add_months(day: date, months: int) -> date:
    """The same day `months` later, or that month's last day when it has no such day."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))
