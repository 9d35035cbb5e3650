"""Threads as rows and as the block shows them (seed 004): the review date the stores index,
what a spell does to the manners, the history's ops, naming a thread, and the block's
order and restraint. Pure."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.events import Op
from chatmemory.domain.memory import Kind, Status
from chatmemory.domain.threads import (
    Cadence,
    Response,
    Ripeness,
    ThreadMeta,
    ThreadReport,
    ThreadStatus,
    acknowledged_after,
    after_spell,
    cue_thread,
    deflected,
    first_since_return,
    manner_ops,
    mentions,
    meta_of,
    nightly_review,
    review_date,
    ripeness,
    shown_threads,
    with_manners,
)
from tests.support.builders import memory

NOW = datetime(2026, 12, 14, 9, 0, tzinfo=UTC)
TODAY = NOW.date()
SECOND_ROUND = "Is job-hunting: second round at Acme on Friday 2026-12-04."
DAYS = st.dates(min_value=date(2026, 1, 1), max_value=date(2027, 12, 31))


def thread(text: str = SECOND_ROUND, *, heard_days_ago: int = 10, **manners: Any) -> Any:
    at = NOW - timedelta(days=heard_days_ago)
    meta = ThreadMeta(**{"cadence": Cadence.FAST, **manners}).to_meta()
    return memory("dan", text, at, kind=Kind.THREAD, persona="warren", meta=meta)


# ---- the review date --------------------------------------------------------------------


def test_a_live_thread_is_reviewed_the_day_after_three_rhythms_of_quiet() -> None:
    row = thread(heard_days_ago=0)  # fast: a week's rhythm

    assert review_date(row) == TODAY + timedelta(days=3 * 7 + 1)


def test_an_event_thread_is_reviewed_from_its_day_not_from_when_it_was_told() -> None:
    row = thread(heard_days_ago=0, cadence=Cadence.EVENT, event_on=TODAY + timedelta(days=30))

    assert review_date(row) == TODAY + timedelta(days=30 + 21 + 1)


@pytest.mark.parametrize(
    "row",
    [
        thread(status=ThreadStatus.DORMANT),
        thread(status=ThreadStatus.RESOLVED),
        memory("dan", "Is vegan.", NOW),
    ],
    ids=["dormant", "resolved", "a fact"],
)
def test_only_a_live_thread_has_a_review_date(row: Any) -> None:
    assert review_date(row) is None


def test_a_thread_that_is_no_longer_believed_has_no_review_date() -> None:
    row = thread().closed(NOW)

    assert row.status is Status.CLOSED and review_date(row) is None


@given(last_beat=DAYS, cadence=st.sampled_from(list(Cadence)))
def test_the_review_date_is_the_first_day_the_nightly_review_changes_it(
    last_beat: date, cadence: Cadence
) -> None:
    at = datetime(last_beat.year, last_beat.month, last_beat.day, 12, tzinfo=UTC)
    row = memory(
        "dan", SECOND_ROUND, at, kind=Kind.THREAD, meta=ThreadMeta(cadence=cadence).to_meta()
    )
    due = review_date(row)
    assert due is not None
    meta = meta_of(row)

    assert nightly_review(meta, last_beat, due).status is ThreadStatus.DORMANT
    assert nightly_review(meta, last_beat, due - timedelta(days=1)) == meta


# ---- a spell's news ---------------------------------------------------------------------


def test_a_deflection_reported_twice_for_the_same_raise_counts_once() -> None:
    # Given a thread deflected once today (a spell's report, applied)
    once = after_spell(ThreadMeta(), raised_on=TODAY, response=Response.DEFLECTED)

    # When the same report is applied again (a retried spell)
    twice = after_spell(once, raised_on=TODAY, response=Response.DEFLECTED)

    # Then it is one deflection, not two (which would send it dormant)
    assert once.deflects == twice.deflects == 1 and twice.status is ThreadStatus.LIVE


def test_a_beat_after_a_deflection_reopens_with_a_clean_slate() -> None:
    meta = after_spell(
        ThreadMeta(cadence=Cadence.SLOW),
        raised_on=TODAY,
        response=Response.DEFLECTED,
        beat=True,
        cadence=Cadence.EVENT,
        event_on=TODAY + timedelta(days=3),
    )

    assert meta.deflects == 0 and meta.sleeps_until is None
    assert meta.cadence is Cadence.EVENT and meta.event_on == TODAY + timedelta(days=3)
    assert meta.asked == TODAY


def test_an_answer_stamps_the_raise_without_a_deflection() -> None:
    meta = after_spell(ThreadMeta(), raised_on=TODAY, response=Response.ANSWERED)

    assert meta.asked == TODAY and meta.deflects == 0


def test_the_manners_keep_the_rows_other_meta() -> None:
    merged = with_manners({"uses": ["how is the job hunt"]}, ThreadMeta())

    assert merged["uses"] == ["how is the job hunt"] and merged["status"] == "live"


def test_a_report_round_trips_through_json() -> None:
    report = ThreadReport("T1", "msg_1", Response.UNANSWERED)

    assert ThreadReport.from_json(report.to_json()) == report


# ---- the history's ops --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("after", "ops"),
    [
        (ThreadMeta(asked=TODAY), (Op.ASKED,)),
        (deflected(ThreadMeta(), TODAY), (Op.DEFLECTED,)),
        (deflected(deflected(ThreadMeta(), TODAY), TODAY), (Op.DEFLECTED, Op.DORMANT)),
        (ThreadMeta(status=ThreadStatus.RESOLVED), (Op.RESOLVED,)),
        (ThreadMeta(), ()),
    ],
    ids=["asked", "deflected", "second deflection", "resolved", "unchanged"],
)
def test_each_change_of_manners_says_what_happened(after: ThreadMeta, ops: tuple[Op]) -> None:
    assert manner_ops(ThreadMeta(), after) == ops


def test_a_dormant_thread_the_person_brings_back_is_reopened() -> None:
    assert manner_ops(ThreadMeta(status=ThreadStatus.DORMANT), ThreadMeta()) == (Op.REOPENED,)


# ---- naming a thread -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "How did the second round at Acme go?",
        "Did you hear back from Acme?",
        "How is the job hunt going?",
    ],
)
def test_a_line_that_names_an_anchor_or_the_subject_raises_the_thread(line: str) -> None:
    assert mentions(line, SECOND_ROUND)


@pytest.mark.parametrize(
    "line",
    [
        "eh, let's talk about something else",
        "Good morning! How are you?",
        "What do you want for dinner on Friday?",
        "How was your weekend?",
    ],
)
def test_a_line_that_names_neither_has_not_raised_it(line: str) -> None:
    assert not mentions(line, SECOND_ROUND)


def test_a_ticker_and_an_amount_are_anchors_wherever_they_stand() -> None:
    holding = "Bought TSLA at $10; holding until $100."

    assert mentions("TSLA is up today", holding)
    assert mentions("Still holding for $100?", holding)
    assert not mentions("How are the markets?", holding)


# ---- what the block shows ------------------------------------------------------------------


def test_the_block_shows_what_invites_first_and_hides_what_sleeps_for_good() -> None:
    ripe = thread(heard_days_ago=10)
    recent = thread("Is house-hunting in Xuhui: two bedrooms.", heard_days_ago=1)
    dormant = thread("Bought TSLA at $10; holding until $100.", status=ThreadStatus.DORMANT)

    views = shown_threads([recent, dormant, ripe], TODAY)

    assert [view.memory for view in views] == [ripe, recent]
    assert [view.state for view in views] == [Ripeness.RIPE, Ripeness.RECENT]
    assert "last heard 10 days ago" in views[0].line
    assert cue_thread(views) is views[0]


def test_once_a_thread_was_raised_here_today_a_ripe_one_waits() -> None:
    row = thread(heard_days_ago=10)

    (view,) = shown_threads([row], TODAY, asked_here_today=True)

    assert view.state is Ripeness.ASKED_HERE
    assert "already raised here today" in view.line
    assert cue_thread([view]) is None


def test_a_resolution_waiting_for_its_acknowledgement_is_not_held_back() -> None:
    meta = ThreadMeta(status=ThreadStatus.RESOLVED)

    assert ripeness(meta, TODAY, TODAY, asked_here_today=True) is Ripeness.RESOLVED


def test_a_row_whose_manners_cannot_be_read_is_never_raised() -> None:
    row = thread().with_changes(meta={"cadence": "hourly"})

    assert meta_of(row).status is ThreadStatus.DORMANT
    assert shown_threads([row], TODAY) == []


# ---- a reunion's opening -------------------------------------------------------------------


def test_the_opening_is_the_first_line_a_persona_says_after_quiet_days() -> None:
    long_ago, back = NOW - timedelta(days=9), NOW
    said = [("u:dan", long_ago), ("p:warren", long_ago), ("u:dan", back)]

    assert first_since_return(said, "p:warren")
    assert not first_since_return([*said, ("p:warren", back)], "p:warren")
    # another persona's words do not spend this one's opening
    assert first_since_return([*said, ("p:nolan", back)], "p:warren")


def test_a_short_pause_is_not_a_return() -> None:
    said = [("u:dan", NOW - timedelta(days=1)), ("p:warren", NOW - timedelta(days=1))]

    assert not first_since_return([*said, ("u:dan", NOW)], "p:warren")


def test_the_persona_acknowledges_news_only_by_speaking_after_it() -> None:
    spell = [("m1", False), ("m2", True), ("m3", False)]

    assert acknowledged_after(spell, ["m1"])
    assert not acknowledged_after(spell, ["m3"])
    assert not acknowledged_after(spell, ["elsewhere"])
