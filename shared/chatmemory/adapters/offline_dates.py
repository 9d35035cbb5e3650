"""The offline stand-in's stated times: a weekday, a relative day, a date or a month said in
a sentence, written out as a real date ("on Thursday" → "on Thursday 2026-12-03"), so a
memory read months later still says when. Shared by the one-to-one, room and thread rules.
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
