"""The offline stand-in follows a person's story (seed 004) with no model key: a new concern
is a thread, news of a known one is its beat, a conclusion is a plain fact naming the
thread, and each thread the persona raised is reported with how the person met it."""

from __future__ import annotations

from datetime import date

import pytest

from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.extraction import (
    Candidate,
    ExtractionInput,
    ExtractionResult,
    KnownThread,
    RoomSeat,
    TranscriptLine,
    filter_candidates,
)
from chatmemory.domain.memory import Kind
from chatmemory.domain.room_extraction import filter_room_candidates
from chatmemory.domain.threads import THREAD_TEXT_MAX, Cadence, Response, ThreadReport

TODAY = date(2026, 11, 30)  # a Monday
DAN, CARA = "dan", "cara"
ACME = "Is job-hunting: second round at Acme on Friday 2026-12-11."


def chat(*lines: tuple[str, str], threads: tuple[KnownThread, ...] = ()) -> ExtractionResult:
    """A one-to-one slice; each (role, words) gets the id m1, m2, … in order."""
    transcript = tuple(
        TranscriptLine(f"m{number}", role, words)
        for number, (role, words) in enumerate(lines, start=1)
    )
    request = ExtractionInput(
        transcript=transcript, profile="", known=(), today=TODAY, threads=threads
    )
    return OfflineModel().extract(request)


def said(*words: str, threads: tuple[KnownThread, ...] = ()) -> list[Candidate]:
    """What the user's lines propose, in a one-to-one chat."""
    return list(chat(*(("user", line) for line in words), threads=threads).candidates)


def room(
    *lines: tuple[str, str],
    threads: tuple[KnownThread, ...] = (),
    present: tuple[str, ...] = (DAN,),
) -> ExtractionResult:
    """Warren's seat; each (speaker, words) gets the id m1, m2, … in order."""
    transcript = tuple(
        TranscriptLine(
            f"m{number}", "user" if speaker.startswith("u:") else "assistant", words, speaker
        )
        for number, (speaker, words) in enumerate(lines, start=1)
    )
    seat = RoomSeat(persona="warren", present=present, group=len(present) > 1)
    request = ExtractionInput(
        transcript=transcript, profile="", known=(), today=TODAY, seat=seat, threads=threads
    )
    return OfflineModel().extract(request)


def known(text: str, number: str = "T1", subject: str = "") -> KnownThread:
    return KnownThread(
        number=number,
        text=text,
        status="live",
        last_heard=date(2026, 11, 20),
        memory_id=f"mem_{number}",
        subject=subject,
    )


# ---- a new concern ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "key", "cadence", "event_on", "text"),
    [
        (
            "I have a job interview at Acme on Thursday",
            "job_hunt",
            Cadence.EVENT,
            date(2026, 12, 3),
            "Is job-hunting: interview at Acme on Thursday 2026-12-03.",
        ),
        (
            "I'm interviewing at Acme.",
            "job_hunt",
            Cadence.FAST,
            None,
            "Is job-hunting: interviewing at Acme.",
        ),
        ("I'm looking for a new job.", "job_hunt", Cadence.FAST, None, "Is job-hunting."),
        (
            "We're looking for a flat in Xuhui.",
            "house_hunt",
            Cadence.SLOW,
            None,
            "Is house-hunting: looking for a flat in Xuhui.",
        ),
        (
            "We're house hunting at the moment.",
            "house_hunt",
            Cadence.SLOW,
            None,
            "Is house-hunting.",
        ),
        (
            "I bought TSLA at $10 and won't sell till $100.",
            "holding_tsla",
            Cadence.SLOW,
            None,
            "Bought TSLA at $10; holding until $100.",
        ),
        (
            "My wife is expecting!",
            "expecting",
            Cadence.SLOW,
            None,
            "Their wife is expecting a baby.",
        ),
        (
            "We're expecting a baby in March.",
            "expecting",
            Cadence.EVENT,
            date(2027, 3, 31),
            "Is expecting a baby, due in March 2027.",
        ),
        (
            "I have my driving test on Friday.",
            "event_test",
            Cadence.EVENT,
            date(2026, 12, 4),
            "Has their driving test on Friday 2026-12-04.",
        ),
        (
            "I have an operation on 3 December.",
            "event_operation",
            Cadence.EVENT,
            date(2026, 12, 3),
            "Has an operation on 2026-12-03.",
        ),
        (
            "I'm running a marathon on Sunday.",
            "event_marathon",
            Cadence.EVENT,
            date(2026, 12, 6),
            "Is running a marathon on Sunday 2026-12-06.",
        ),
    ],
    ids=[
        "job-interview",
        "interviewing",
        "job-search",
        "flat-hunt",
        "house-hunting",
        "stock-target",
        "wife-expecting",
        "baby-in-march",
        "driving-test",
        "operation",
        "marathon",
    ],
)
def test_a_new_concern_is_a_thread_with_its_anchors_as_said(
    words: str, key: str, cadence: Cadence, event_on: date | None, text: str
) -> None:
    # Given the user stating an ongoing concern, with no thread known
    # When the slice is read
    [candidate] = said(words)

    # Then it is one new thread: its key, how fast it moves, its day, its anchors verbatim
    assert candidate.kind is Kind.THREAD and candidate.thread is None
    assert (candidate.key, candidate.cadence, candidate.event_on) == (key, cadence, event_on)
    assert candidate.text == text and len(candidate.text) <= THREAD_TEXT_MAX
    assert candidate.evidence == ("m1",) and candidate.concludes is None


@pytest.mark.parametrize(
    "words",
    ["I'm expecting a parcel today.", "I hate waiting.", "Interviews are stressful."],
    ids=["a-parcel", "nothing", "no-one-of-theirs"],
)
def test_words_that_only_sound_like_a_concern_make_no_thread(words: str) -> None:
    assert [c for c in said(words) if c.kind is Kind.THREAD] == []


def test_a_thread_and_a_statement_in_one_sentence_are_both_kept() -> None:
    candidates = said("I live in Pune and I have a job interview at Acme on Thursday.")

    assert [(c.kind, c.text) for c in candidates] == [
        (Kind.FACT, "Lives in Pune."),
        (Kind.THREAD, "Is job-hunting: interview at Acme on Thursday 2026-12-03."),
    ]


def test_asked_to_remember_it_stays_what_the_user_asked_for_not_a_thread() -> None:
    [candidate] = said("Please remember that I'm interviewing at Acme.")

    assert candidate.kind is Kind.FACT


def test_every_new_thread_passes_the_write_filter_an_operation_too() -> None:
    # Given threads of several concerns, an operation among them (health would be dropped
    # unless the user asked to remember it)
    words = (
        "I have a job interview at Acme on Thursday. I have an operation on 3 December. "
        "We're looking for a flat in Xuhui."
    )
    result = chat(("user", words))

    # When the write filter reads them
    filtered = filter_candidates(
        result.candidates,
        (TranscriptLine("m1", "user", words),),
        created_today=0,
    )

    # Then every one is kept
    assert filtered.dropped == ()
    assert [c.key for c in filtered.kept] == ["job_hunt", "event_operation", "house_hunt"]


# ---- a beat of a known thread ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "words", "text", "cadence", "event_on"),
    [
        (
            "Is job-hunting: interview at Acme on Thursday 2026-12-03.",
            "Second round on Friday!",
            "Is job-hunting: second round at Acme on Friday 2026-12-04.",
            Cadence.EVENT,
            date(2026, 12, 4),
        ),
        (
            "Is job-hunting: interview at Acme on Thursday 2026-12-03.",
            "The Acme interview went well.",
            "Is job-hunting: interview at Acme on Thursday 2026-12-03 went well.",
            Cadence.FAST,
            None,
        ),
        (
            ACME,
            "It went well, they want a third round.",
            "Is job-hunting: third round at Acme.",
            Cadence.FAST,
            None,
        ),
        (
            "Is house-hunting: looking for a flat in Xuhui.",
            "We have a viewing on Saturday.",
            "Is house-hunting: viewing a flat in Xuhui on Saturday 2026-12-05.",
            Cadence.EVENT,
            date(2026, 12, 5),
        ),
        (
            "Bought TSLA at $10; holding until $100.",
            "I'm not selling until $150 now.",
            "Bought TSLA at $10; holding until $150.",
            Cadence.SLOW,
            None,
        ),
        (
            "Bought TSLA at $10; holding until $100.",
            "I bought TSLA at $20.",
            "Bought TSLA at $20; holding until $100.",
            Cadence.SLOW,
            None,
        ),
        (
            "Their wife is expecting a baby, due in March 2027.",
            "We're expecting a baby!",
            "Their wife is expecting a baby, due in March 2027.",
            Cadence.EVENT,
            date(2027, 3, 31),
        ),
        (
            "Has their driving test on Friday 2026-12-04.",
            "The test moved to Monday.",
            "Has their driving test on Monday 2026-12-07.",
            Cadence.EVENT,
            date(2026, 12, 7),
        ),
    ],
    ids=[
        "next-round",
        "went-well",
        "third-round",
        "viewing",
        "new-target",
        "bought-again-keeps-target",
        "said-again-keeps-due-date",
        "rescheduled",
    ],
)
def test_news_of_a_known_thread_is_its_beat_with_the_new_state(
    state: str, words: str, text: str, cadence: Cadence, event_on: date | None
) -> None:
    # Given a thread the persona follows, offered as T1
    # When the user says something new about it
    [beat] = said(words, threads=(known(state),))

    # Then it is a beat of T1: the same key, the new state, the anchors that still hold
    assert (beat.kind, beat.thread, beat.text) == (Kind.THREAD, "T1", text)
    assert (beat.cadence, beat.event_on) == (cadence, event_on)


def test_a_beat_keeps_the_key_of_the_thread_it_continues() -> None:
    [beat] = said("Second round on Friday!", threads=(known(ACME),))

    assert beat.key == "job_hunt"


def test_another_stock_bought_is_a_thread_of_its_own() -> None:
    [thread] = said(
        "I bought NVDA at $50.", threads=(known("Bought TSLA at $10; holding until $100."),)
    )

    assert (thread.thread, thread.key, thread.text) == (None, "holding_nvda", "Bought NVDA at $50.")


def test_bringing_a_thread_up_again_without_news_is_a_beat_with_the_same_state() -> None:
    # Given a dormant job hunt
    # When the user brings it up with nothing new
    [beat] = said("What about the Acme thing, no news yet.", threads=(known(ACME),))

    # Then it is a beat of T1 that changes neither its state nor its manners
    assert (beat.thread, beat.text) == ("T1", ACME)
    assert beat.cadence is None and beat.event_on is None


def test_one_spell_gives_one_beat_per_thread_holding_its_last_state() -> None:
    candidates = said(
        "The second round at Acme went great.",
        "They moved the final round to Monday.",
        threads=(known(ACME),),
    )

    [beat] = candidates
    assert beat.text == "Is job-hunting: final round at Acme on Monday 2026-12-07."
    assert beat.evidence == ("m1", "m2")


def test_a_new_concern_said_twice_in_one_spell_is_one_thread() -> None:
    [thread] = said("I'm interviewing at Acme.", "Second round at Acme on Friday, fingers crossed.")

    assert (thread.thread, thread.key) == (None, "job_hunt")
    assert thread.text == "Is job-hunting: second round at Acme on Friday 2026-12-04."


# ---- a conclusion ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "words", "key", "text"),
    [
        (ACME, "I got the job!", "job", "Works at Acme since November 2026."),
        (ACME, "I got the offer", "job", "Works at Acme since November 2026."),
        (ACME, "I got it!", "job", "Works at Acme since November 2026."),
        (
            "Is house-hunting: looking for a flat in Xuhui.",
            "We found a flat!",
            "home",
            "Found a flat in Xuhui in November 2026.",
        ),
        (
            "Is house-hunting: looking for a flat in Xuhui.",
            "We bought the house.",
            "home",
            "Bought a house in Xuhui in November 2026.",
        ),
        (
            "Bought TSLA at $10; holding until $100.",
            "I sold my TSLA shares.",
            "shares_tsla",
            "Sold their TSLA shares in November 2026.",
        ),
        (
            "Their wife is expecting a baby, due in March 2027.",
            "The baby is born!",
            "family_baby",
            "Their baby was born in November 2026.",
        ),
        (
            "Their wife is expecting a baby, due in March 2027.",
            "She was born on Tuesday.",
            "family_baby",
            "Their daughter was born in November 2026.",
        ),
        (
            "Has their driving test on Friday 2026-12-04.",
            "I passed my driving test!",
            "test",
            "Passed their driving test in November 2026.",
        ),
    ],
    ids=[
        "got-the-job",
        "got-the-offer",
        "got-it",
        "found-a-flat",
        "bought-the-house",
        "sold-the-shares",
        "baby-born",
        "she-was-born",
        "passed-the-test",
    ],
)
def test_a_conclusion_is_a_plain_fact_naming_the_thread_it_concludes(
    state: str, words: str, key: str, text: str
) -> None:
    # Given a thread the persona follows
    # When the user says the story concluded
    [fact] = said(words, threads=(known(state),))

    # Then it is a plain fact that concludes T1, never a thread
    assert (fact.kind, fact.concludes, fact.thread) == (Kind.FACT, "T1", None)
    assert (fact.key, fact.text) == (key, text)


def test_i_got_it_concludes_nothing_without_a_job_hunt_known() -> None:
    assert said("I got it!") == []


def test_a_concern_begun_and_concluded_in_one_spell_leaves_only_the_fact() -> None:
    [fact] = said("I'm interviewing at Acme.", "I got the job!")

    assert (fact.kind, fact.text, fact.concludes) == (
        Kind.FACT,
        "Works at Acme since November 2026.",
        None,
    )


# ---- in a room ------------------------------------------------------------------------------


def test_the_leak_exams_plant_is_learned_in_a_private_room_as_a_thread() -> None:
    result = room((f"u:{DAN}", "I'm interviewing at Tencent on Thursday, don't tell anyone."))

    [thread] = result.candidates
    assert (thread.subject, thread.kind, thread.key) == ("u:dan", Kind.THREAD, "job_hunt")
    assert "Tencent" in thread.text


def test_in_a_room_a_thread_passes_the_room_filter() -> None:
    words = "I own a flat in Xuhui. I have a job interview at Tencent on Thursday."
    result = room((f"u:{DAN}", words))
    transcript = (TranscriptLine("m1", "user", words, f"u:{DAN}"),)

    filtered = filter_room_candidates(
        result.candidates,
        transcript,
        RoomSeat(persona="warren", present=(DAN,), group=False),
        allowed=frozenset({DAN}),
        created_today={},
    )

    assert filtered.dropped == ()
    assert [(c.kind, c.text) for c in filtered.kept] == [
        (Kind.FACT, "Owns a flat in Xuhui."),
        (Kind.THREAD, "Is job-hunting: interview at Tencent on Thursday 2026-12-03."),
    ]


def test_in_a_room_only_the_threads_subject_moves_it_on() -> None:
    # Given Dan's job hunt, and Cara in the room too
    threads = (known(ACME, subject=f"u:{DAN}"),)

    # When both speak of a second round
    candidates = room(
        (f"u:{CARA}", "I have a second round at Initech on Friday."),
        (f"u:{DAN}", "The second round at Acme moved to Monday."),
        threads=threads,
        present=(CARA, DAN),
    ).candidates

    # Then Dan's line is the beat of his thread; Cara's is a new thread of hers
    assert [(c.subject, c.thread, c.text) for c in candidates] == [
        ("u:cara", None, "Is job-hunting: second round at Initech on Friday 2026-12-04."),
        ("u:dan", "T1", "Is job-hunting: second round at Acme on Monday 2026-12-07."),
    ]


def test_in_a_room_a_conclusion_names_the_subjects_thread() -> None:
    [fact] = room(
        (f"u:{DAN}", "I got the job!"), threads=(known(ACME, subject=f"u:{DAN}"),)
    ).candidates

    assert (fact.subject, fact.kind, fact.concludes) == ("u:dan", Kind.FACT, "T1")


# ---- reports --------------------------------------------------------------------------------


def test_a_raised_thread_taken_up_is_answered() -> None:
    result = chat(
        ("user", "Hi!"),
        ("assistant", "Good to see you! How did the second round at Acme go?"),
        ("user", "Really well, they want me back for a chat with the CTO."),
        threads=(known(ACME),),
    )

    assert result.reports == (ThreadReport("T1", "m2", Response.ANSWERED),)


@pytest.mark.parametrize(
    "reply",
    [
        "eh, let's talk about something else",
        "I'd rather not talk about it.",
        "Can we change the subject?",
        "Not now.",
        "meh",
        "Anyway, what's the weather like there?",
        "whatever",
        "ok",
    ],
)
def test_a_raised_thread_met_with_a_change_of_subject_or_a_shrug_is_deflected(
    reply: str,
) -> None:
    result = chat(
        ("user", "Hi!"),
        ("assistant", "How did the second round at Acme go?"),
        ("user", reply),
        threads=(known(ACME),),
    )

    assert result.reports == (ThreadReport("T1", "m2", Response.DEFLECTED),)


@pytest.mark.parametrize("reply", ["Went well!", "Not yet.", "You mean Acme?"])
def test_a_short_reply_that_answers_or_names_the_thread_is_answered(reply: str) -> None:
    result = chat(
        ("user", "Hi!"),
        ("assistant", "How did the second round at Acme go?"),
        ("user", reply),
        threads=(known(ACME),),
    )

    assert result.reports == (ThreadReport("T1", "m2", Response.ANSWERED),)


def test_a_raised_thread_with_no_reply_in_the_slice_is_unanswered() -> None:
    result = chat(
        ("user", "Hi!"),
        ("assistant", "How did the second round at Acme go?"),
        threads=(known(ACME),),
    )

    assert result.reports == (ThreadReport("T1", "m2", Response.UNANSWERED),)


def test_a_reply_echoing_the_users_own_mention_is_not_a_raise() -> None:
    # Given the user naming the thread, and the stand-in quoting them back
    result = chat(
        ("user", "The second round at Acme is on Friday."),
        ("assistant", 'You said: "The second round at Acme is on Friday."'),
        ("user", "ok"),
        threads=(known(ACME),),
    )

    # Then nothing was raised: the persona only answered what it was told
    assert result.reports == ()


def test_a_persona_line_that_names_no_thread_raises_nothing() -> None:
    result = chat(
        ("user", "Hi!"),
        ("assistant", "Let's talk about something else: how is the weather?"),
        ("user", "eh"),
        threads=(known(ACME),),
    )

    assert result.reports == ()


def test_in_a_room_the_seats_persona_raises_and_the_subject_answers() -> None:
    # Given Dan's thread, Nolan speaking, then Warren raising it, then Cara and Dan
    result = room(
        (f"u:{DAN}", "Hello both."),
        ("p:nolan", "Morning, Dan."),
        ("p:warren", "Dan, the second round at Acme on Friday: how did it go?"),
        (f"u:{CARA}", "meh"),
        (f"u:{DAN}", "They liked my case study, waiting to hear back."),
        threads=(known(ACME, subject=f"u:{DAN}"),),
        present=(CARA, DAN),
    )

    # Then Warren's line is his raise, and Dan's reply (not Cara's) is how it was met
    assert result.reports == (ThreadReport("T1", "m3", Response.ANSWERED),)
