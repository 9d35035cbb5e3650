"""The offline stand-in learns two shapes of statement that matter for what comes after them:
a fact with an end date ("I'm in Lisbon until Friday"), its time written out and
`valid_until` the day after it, so reads drop it once it is over; and an ending ("I sold my
car"), a sentence that starts with what ended, so the memory it ends can be closed."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from chatmemory.adapters.offline_extractor import OfflineExtractor
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.extraction import (
    IMPORTANCE_FLOOR,
    Candidate,
    ExtractionInput,
    RoomSeat,
    TranscriptLine,
    filter_candidates,
)
from chatmemory.domain.memory import Kind
from chatmemory.domain.routing import Action, Neighbour
from tests.support import builders

TODAY = date(2026, 12, 9)  # a Wednesday
DAN = "dan"


def said(words: str, today: date = TODAY) -> list[Candidate]:
    """What one user line proposes in a one-to-one chat (the line's id is m1)."""
    request = ExtractionInput(
        transcript=(TranscriptLine("m1", "user", words),), profile="", known=(), today=today
    )
    return list(OfflineModel().extract(request).candidates)


def only(words: str, today: date = TODAY) -> Candidate:
    [candidate] = said(words, today)
    return candidate


def on(day: int, month: int = 12, year: int = 2026) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


# ---- a fact with an end date ------------------------------------------------------------


def test_a_trip_next_week_is_remembered_until_that_week_is_over() -> None:
    # Given a user who says where they are going next week
    words = "I am travelling to Goa next week"

    # When the stand-in reads it
    trip = only(words)

    # Then the week is written out, and the memory ends the Monday after it
    assert trip.text == "Is travelling to Goa the week of 2026-12-14."
    assert (trip.kind, trip.category, trip.key) == (Kind.FACT, "travel", None)
    assert trip.valid_until == on(21) and trip.valid_from is None
    assert trip.importance >= IMPORTANCE_FLOOR and trip.evidence == ("m1",)


@pytest.mark.parametrize(
    ("words", "text", "until"),
    [
        (
            "I'm flying to Lisbon this weekend",
            "Is flying to Lisbon the weekend of 2026-12-12.",
            on(14),
        ),
        ("I'm heading to Paris next month", "Is heading to Paris in January 2027.", on(1, 2, 2027)),
        ("I'm going to Goa tomorrow", "Is going to Goa on Thursday 2026-12-10.", on(11)),
        ("We're flying to Lisbon on Friday", "Is flying to Lisbon on Friday 2026-12-11.", on(12)),
        (
            "Next week I'm travelling to Goa.",
            "Is travelling to Goa the week of 2026-12-14.",
            on(21),
        ),
        ("I'll be in Lisbon next week", "Will be in Lisbon the week of 2026-12-14.", on(21)),
    ],
)
def test_a_trip_writes_out_its_time_and_ends_after_it(
    words: str, text: str, until: datetime
) -> None:
    # Given a trip said with when it happens
    # When the stand-in reads it
    trip = only(words)

    # Then its time is a date in the sentence, and it ends the day after that time is over
    assert (trip.text, trip.valid_until) == (text, until)
    assert (trip.kind, trip.category) == (Kind.FACT, "travel")


def test_what_completes_a_trip_after_its_time_is_kept() -> None:
    # Given a trip with its reason said after its time
    # When the stand-in reads it
    trip = only("I'm travelling to Goa next week for a wedding")

    # Then the reason stays in the sentence
    assert trip.text == "Is travelling to Goa the week of 2026-12-14 for a wedding."


@pytest.mark.parametrize(
    ("words", "text", "category", "until"),
    [
        (
            "I'm staying with my parents until Friday",
            "Is staying with their parents until Friday 2026-12-11.",
            "family",
            on(12),
        ),
        (
            "I'm in Lisbon until 12 March",
            "Is in Lisbon until 2027-03-12.",
            "travel",
            on(13, 3, 2027),
        ),
        (
            "I'm living in Lisbon until the end of the month",
            "Is living in Lisbon until the end of December 2026.",
            "location",
            on(1, 1, 2027),
        ),
    ],
)
def test_a_stay_until_a_named_day_ends_the_day_after_it(
    words: str, text: str, category: str, until: datetime
) -> None:
    # Given a stay said with the day it ends
    # When the stand-in reads it
    stay = only(words)

    # Then the day is written out, and the memory ends the day after it
    assert (stay.text, stay.category, stay.valid_until) == (text, category, until)
    assert (stay.kind, stay.key) == (Kind.FACT, None)


@pytest.mark.parametrize(
    ("words", "text", "category"),
    [
        ("I'm in Lisbon for the summer", "Is in Lisbon for the summer of 2027.", "travel"),
        (
            "I'm working at a camp for the summer",
            "Is working at a camp for the summer of 2027.",
            "work",
        ),
    ],
)
def test_a_summer_said_after_august_is_next_years_and_ends_on_1_september(
    words: str, text: str, category: str
) -> None:
    # Given December, and a stay said for the summer
    # When the stand-in reads it
    stay = only(words)

    # Then it is next year's northern summer, over on 1 September
    assert (stay.text, stay.category, stay.valid_until) == (text, category, on(1, 9, 2027))


def test_a_summer_said_before_september_is_this_years() -> None:
    # Given June
    june = date(2026, 6, 3)

    # When a summer stay is said
    stay = only("I'm in Lisbon for the summer", today=june)

    # Then it is this year's summer
    assert stay.text == "Is in Lisbon for the summer of 2026."
    assert stay.valid_until == on(1, 9, 2026)


@pytest.mark.parametrize(
    ("words", "text", "until"),
    [
        ("I'm off work for two weeks", "Is off work until 2026-12-23.", on(24)),
        ("I'm in Berlin for the next three days", "Is in Berlin until 2026-12-12.", on(13)),
        ("I'm in Berlin this week", "Is in Berlin the week of 2026-12-07.", on(14)),
    ],
)
def test_a_length_of_time_or_this_week_ends_counted_from_today(
    words: str, text: str, until: datetime
) -> None:
    # Given a stay said for a length of time, or for this week
    # When the stand-in reads it
    stay = only(words)

    # Then its last day is written out, and it ends the day after
    assert (stay.text, stay.valid_until) == (text, until)


def test_this_weekend_said_on_its_sunday_ends_tomorrow() -> None:
    # Given a Sunday
    sunday = date(2026, 12, 13)

    # When the user says where they are this weekend
    stay = only("I'm in Lisbon this weekend", today=sunday)

    # Then it ends on Monday, never before today
    assert stay.text == "Is in Lisbon the weekend of 2026-12-12."
    assert stay.valid_until == on(14)


def test_an_end_already_past_is_not_remembered() -> None:
    # Given a stay said to end on a day already past
    # When the stand-in reads it
    # Then it proposes nothing: a memory of it would be over before it is read
    assert said("I'm in Lisbon until 2026-12-01") == []


def test_a_fact_said_without_an_end_stays_a_plain_fact() -> None:
    # Given a home said with no time
    # When the stand-in reads it
    home = only("I live in Lisbon")

    # Then it is the standing fact, with no end
    assert (home.text, home.key, home.valid_until) == ("Lives in Lisbon.", "home_city", None)


@pytest.mark.parametrize(
    "words",
    [
        "I'm going to quit next week",  # a plan to act, not a state that ends
        "I'm in Lisbon from Friday",  # when it starts, not when it ends
        "I'm flying to Goa next Friday",  # which Friday is not certain
        "I'm flying to Goa on Friday for two weeks",  # two times: which one ends it?
        "If I'm in Lisbon next week, let's meet",  # a maybe
        "I'm busy this week",  # not a stay
    ],
)
def test_a_time_that_does_not_end_a_stay_makes_no_end_dated_fact(words: str) -> None:
    # Given a sentence with a time that does not say when a stay ends
    # When the stand-in reads it
    # Then nothing with an end date is proposed
    assert [c.text for c in said(words) if c.valid_until is not None] == []


def test_a_place_written_in_capitals_is_kept_as_said() -> None:
    # Given a trip to a country written in capitals
    # When the stand-in reads it
    trip = only("I'm flying to the US next week")

    # Then "US" stays a country, never the pronoun
    assert trip.text == "Is flying to the US the week of 2026-12-14."


def test_a_visit_to_the_doctor_is_filed_under_health() -> None:
    # Given an end-dated plan that says something of the person's health
    line = TranscriptLine("m1", "user", "I'm going to the doctor tomorrow")
    [visit] = said(line.content)

    # When the write filter reads it, the person not having asked to remember it
    filtered = filter_candidates([visit], [line], created_today=0)

    # Then it is health, which the filter keeps only when asked
    assert visit.category == "health" and filtered.kept == ()


def test_an_exam_month_is_still_read_by_the_exam_rule() -> None:
    # Given an exam said with its month
    # When the stand-in reads it
    exam = only("I'm preparing for GATE in February")

    # Then the exam rule still reads it, with its key
    assert (exam.text, exam.key) == ("Is preparing for GATE, in February 2027.", "exam")


def test_an_end_dated_fact_passes_the_write_filter() -> None:
    # Given a trip the stand-in proposes
    line = TranscriptLine("m1", "user", "I'm flying to Lisbon on Friday")
    [trip] = said(line.content)

    # When the write filter reads it
    filtered = filter_candidates([trip], [line], created_today=0)

    # Then it is kept
    assert filtered.kept == (trip,)


def test_in_a_room_an_end_dated_fact_is_about_its_speaker() -> None:
    # Given Dan, in a private chat with Warren, says where he is going
    request = ExtractionInput(
        transcript=(
            TranscriptLine("m1", "user", "I'm flying to Lisbon on Friday", speaker=f"u:{DAN}"),
        ),
        profile="",
        known=(),
        today=TODAY,
        seat=RoomSeat(persona="warren", present=(DAN,), group=False),
    )

    # When Warren's seat is read
    [trip] = OfflineModel().extract(request).candidates

    # Then it is about Dan, with its end date
    assert (trip.subject, trip.text) == ("u:dan", "Is flying to Lisbon on Friday 2026-12-11.")
    assert trip.valid_until == on(12)


# ---- an ending ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "text", "kind", "category", "key"),
    [
        ("I sold my car", "Sold their car.", Kind.EVENT, "general", None),
        ("I sold our flat in Xuhui", "Sold their flat in Xuhui.", Kind.EVENT, "home", None),
        (
            "I broke up with my boyfriend Sam",
            "Broke up with their boyfriend Sam.",
            Kind.EVENT,
            "relationships",
            "family_boyfriend",
        ),
        (
            "I split up with my girlfriend",
            "Split up with their girlfriend.",
            Kind.EVENT,
            "relationships",
            "family_girlfriend",
        ),
        (
            "I cancelled my trip to Japan",
            "Cancelled their trip to Japan.",
            Kind.EVENT,
            "travel",
            None,
        ),
        ("we called off the wedding", "Called off the wedding.", Kind.EVENT, "relationships", None),
        ("I quit my job at Acme", "Quit their job at Acme.", Kind.EVENT, "work", "job"),
        ("I left the band", "Left the band.", Kind.EVENT, "hobbies", None),
        ("I stopped running", "Stopped running.", Kind.EVENT, "hobbies", None),
        ("I gave up smoking", "Gave up smoking.", Kind.EVENT, "general", None),
        ("I've finally given up sugar", "Gave up sugar.", Kind.EVENT, "general", None),
        (
            "I moved out of my flat in Xuhui",
            "Moved out of their flat in Xuhui.",
            Kind.EVENT,
            "home",
            None,
        ),
        (
            "I divorced my husband",
            "Divorced their husband.",
            Kind.EVENT,
            "relationships",
            "family_husband",
        ),
        ("I retired from Acme", "Retired from Acme.", Kind.EVENT, "work", "job"),
        ("I closed my bakery", "Closed their bakery.", Kind.EVENT, "work", None),
        ("I'm no longer vegetarian", "Is no longer vegetarian.", Kind.FACT, "diet", "diet"),
        ("I'm not vegetarian any more", "Is no longer vegetarian.", Kind.FACT, "diet", "diet"),
        ("I'm no longer at Acme", "Is no longer at Acme.", Kind.FACT, "work", "job"),
        ("I no longer work at Acme", "No longer works at Acme.", Kind.FACT, "work", "job"),
        (
            "I don't live in Berlin anymore",
            "No longer lives in Berlin.",
            Kind.FACT,
            "location",
            "home_city",
        ),
    ],
)
def test_an_ending_starts_with_what_ended_and_keeps_its_object(
    words: str, text: str, kind: Kind, category: str, key: str | None
) -> None:
    # Given a user who says something of theirs ended
    # When the stand-in reads it
    ending = only(words)

    # Then one sentence says so, starting with how it ended, the object kept
    assert (ending.text, ending.kind, ending.category, ending.key) == (text, kind, category, key)
    assert ending.importance >= IMPORTANCE_FLOOR and ending.valid_until is None


@pytest.mark.parametrize(
    ("words", "text"),
    [
        ("I just quit my job, taking a break.", "Quit their job."),
        ("I left my job", "Left their job."),
        ("I lost my job", "Lost their job."),
    ],
)
def test_a_job_that_ended_keeps_the_job_key(words: str, text: str) -> None:
    # Given a user whose job ended
    # When the stand-in reads it
    ending = only(words)

    # Then it names how, under the job's key, so routing closes the job it ends
    assert (ending.text, ending.key, ending.category) == (text, "job", "work")


@pytest.mark.parametrize(
    ("words", "text", "key"),
    [
        ("Sam and I broke up", "Broke up with Sam.", None),
        ("My wife and I split up", "Split up with their wife.", "family_wife"),
    ],
)
def test_a_partner_named_before_and_i_is_who_they_parted_from(
    words: str, text: str, key: str | None
) -> None:
    # Given a user who names the other one first
    # When the stand-in reads it
    ending = only(words)

    # Then the ending names them
    assert (ending.text, ending.key, ending.category) == (text, key, "relationships")


@pytest.mark.parametrize(
    ("words", "text"),
    [
        ("I sold my car yesterday", "Sold their car on Tuesday 2026-12-08."),
        ("Yesterday I sold my car", "Sold their car on Tuesday 2026-12-08."),
    ],
)
def test_the_stated_day_of_an_ending_is_written_out_and_is_its_valid_from(
    words: str, text: str
) -> None:
    # Given an ending said with its day
    # When the stand-in reads it
    ending = only(words)

    # Then the day is written out and the memory is valid from it
    assert (ending.text, ending.valid_from) == (text, on(8))


@pytest.mark.parametrize(
    ("words", "text"),
    [
        ("I quit my job last week", "Quit their job."),
        ("I stopped running last month because of my knee", "Stopped running."),
        ("I gave up smoking two years ago", "Gave up smoking."),
    ],
)
def test_a_time_that_cannot_be_dated_is_left_out_of_an_ending(words: str, text: str) -> None:
    # Given an ending said with a time the stand-in does not write out
    # When the stand-in reads it
    ending = only(words)

    # Then the sentence stays whole without it
    assert (ending.text, ending.valid_from) == (text, None)


def test_retiring_with_nothing_named_ends_work() -> None:
    # Given a user who says they retired, and nothing more
    # When the stand-in reads it
    ending = only("I retired last year")

    # Then it ends their work, under the job's key
    assert (ending.text, ending.key) == ("Retired from work.", "job")


def test_selling_things_for_a_living_is_not_an_ending() -> None:
    # Given a user who says what they did for work
    # When the stand-in reads it
    found = said("I sold cars for a living")

    # Then nothing says a possession of theirs was sold
    assert [c.text for c in found if c.text.startswith("Sold")] == []


@pytest.mark.parametrize(
    "words",
    [
        "I left my keys at home",
        "I left the gym at 6",
        "I closed the deal",
        "I stopped by the shop",
        "I'm no longer sure",
        "I want to quit my job",
        "I never quit my job",
        "If I sold my car I could travel",
        "I think Sam and I might split up",
        "I quit Facebook",  # an app or an employer: the stand-in does not guess
    ],
)
def test_what_ends_nothing_of_theirs_is_not_an_ending(words: str) -> None:
    # Given a sentence with an ending's verb that ends nothing the person had
    # When the stand-in reads it
    # Then it proposes nothing
    assert said(words) == []


def test_an_ending_passes_the_write_filter() -> None:
    # Given an ending the stand-in proposes
    line = TranscriptLine("m1", "user", "I sold my car")
    [ending] = said(line.content)

    # When the write filter reads it
    filtered = filter_candidates([ending], [line], created_today=0)

    # Then it is kept
    assert filtered.kept == (ending,)


@pytest.mark.parametrize(
    ("remembered", "key", "words"),
    [
        ("Is vegetarian.", "diet", "I'm no longer vegetarian"),
        ("Works at Acme.", "job", "I quit my job at Acme"),
        ("Works at Acme.", "job", "I retired from Acme"),
        ("Their husband is called Tom.", "family_husband", "I divorced my husband"),
        ("Lives in London.", "home_city", "I moved out of London"),
    ],
)
def test_an_ending_closes_the_fact_with_its_key(remembered: str, key: str, words: str) -> None:
    # Given a remembered fact, and the user saying it ended
    fact = builders.memory("alice", remembered, on(1), key=key)
    ending = only(words)

    # When the stand-in routes the ending
    decision = OfflineExtractor().route(ending, [Neighbour("1", fact)])

    # Then the fact is closed
    assert (decision.action, decision.neighbour) == (Action.CLOSE, "1")


@pytest.mark.parametrize(
    ("words", "text", "category"),
    [
        ("I own a car.", "Owns a car.", "general"),
        ("I own a flat in Xuhui", "Owns a flat in Xuhui.", "home"),
    ],
)
def test_a_possession_is_a_standing_fact_a_sale_can_end(
    words: str, text: str, category: str
) -> None:
    # Given a user who says what they own
    # When the stand-in reads it
    owned = only(words)

    # Then it is a standing fact, worded as the room's rule words it
    assert (owned.text, owned.kind, owned.category) == (text, Kind.FACT, category)


def test_a_fiancees_name_is_kept_under_a_plain_key() -> None:
    # Given a user who names their fiancée
    # When the stand-in reads it
    named = only("My fiancée is called Anna")

    # Then it is kept, its key plain ASCII
    assert (named.text, named.key) == ("Their fiancée is called Anna.", "family_fiancee")
