"""The offline stand-in extracts from a persona's seat in a room: every candidate about its
own speaker, the persona's own promises, open loops (only when someone asked to be
followed up), threads and world facts; nothing from other personas' lines, nothing about
anyone not present."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.extraction import Candidate, ExtractionInput, RoomSeat, TranscriptLine
from chatmemory.domain.memory import Kind
from chatmemory.domain.room_extraction import filter_room_candidates
from chatmemory.domain.threads import Cadence

DAN, CARA, EVE = "dan", "cara", "eve"
TODAY = date(2026, 11, 30)  # a Monday


def spell(
    *lines: tuple[str, str], present: tuple[str, ...] = (DAN,), group: bool = False
) -> ExtractionInput:
    """Warren's seat; each line (speaker, words) gets the id m1, m2, … in order."""
    transcript = tuple(
        TranscriptLine(
            f"m{number}",
            "user" if speaker.startswith("u:") else "assistant",
            words,
            speaker=speaker,
        )
        for number, (speaker, words) in enumerate(lines, start=1)
    )
    return ExtractionInput(
        transcript=transcript,
        profile="",
        known=(),
        today=TODAY,
        seat=RoomSeat(persona="warren", present=present, group=group),
    )


def extract(request: ExtractionInput) -> list[Candidate]:
    return list(OfflineModel().extract(request).candidates)


def about(candidates: list[Candidate]) -> list[tuple[str, str]]:
    return [(c.subject, c.text) for c in candidates]


def on(day: int, month: int = 12, year: int = 2026) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


# ---- a human's own lines ------------------------------------------------------------


def test_a_private_chat_notes_the_humans_statements_about_them() -> None:
    # Given a private chat where Dan says two things about himself
    request = spell((f"u:{DAN}", "I live in Pune and I'm vegetarian."))

    # When Warren's seat is read
    candidates = extract(request)

    # Then both are noted about Dan, in the one-to-one mode's sentences, from his line
    assert about(candidates) == [("u:dan", "Lives in Pune."), ("u:dan", "Is vegetarian.")]
    assert all(c.evidence == ("m1",) and c.counterpart is None for c in candidates)


def test_the_statements_are_the_one_to_one_modes_with_a_subject() -> None:
    words = "I moved to Bengaluru. My sister is called Asha. I have a dog named Bruno."
    one_to_one = (
        OfflineModel()
        .extract(
            ExtractionInput(
                transcript=(TranscriptLine("m1", "user", words),),
                profile="",
                known=(),
                today=TODAY,
            )
        )
        .candidates
    )

    in_a_room = extract(spell((f"u:{DAN}", words)))

    assert len(one_to_one) == 3
    assert in_a_room == [replace(c, subject="u:dan") for c in one_to_one]
    assert {c.subject for c in one_to_one} == {""}


def test_a_home_owned_and_shares_sold_are_noted_about_the_speaker() -> None:
    candidates = extract(
        spell((f"u:{DAN}", "I own a flat in Xuhui. I sold my Tesla shares in July."))
    )

    assert about(candidates) == [
        ("u:dan", "Owns a flat in Xuhui."),
        ("u:dan", "Sold their Tesla shares in July 2026."),
    ]
    assert [c.kind for c in candidates] == [Kind.FACT, Kind.EVENT]
    assert [c.valid_from for c in candidates] == [None, on(1, 7)]


def test_in_a_group_each_candidate_is_about_its_own_speaker() -> None:
    # Given two humans in a group, each saying something about themselves and one about
    # the other
    request = spell(
        (f"u:{DAN}", "I live in Pune."),
        (f"u:{CARA}", "I'm vegan. Dan lives in Mumbai now, I think."),
        (f"u:{DAN}", "I work as a teacher at Vidya School."),
        present=(CARA, DAN),
        group=True,
    )

    # When Warren's seat is read
    candidates = extract(request)

    # Then what each said of themselves is about them, from their own line
    assert [(c.subject, c.text, c.evidence) for c in candidates] == [
        ("u:dan", "Lives in Pune.", ("m1",)),
        ("u:cara", "Is vegan.", ("m2",)),
        ("u:dan", "Works as a teacher at Vidya School.", ("m3",)),
    ]


def test_two_people_saying_the_same_thing_are_two_candidates() -> None:
    request = spell(
        (f"u:{DAN}", "I'm vegetarian."),
        (f"u:{CARA}", "I'm vegetarian."),
        present=(CARA, DAN),
        group=True,
    )

    assert about(extract(request)) == [("u:dan", "Is vegetarian."), ("u:cara", "Is vegetarian.")]


def test_nothing_about_someone_who_is_not_present() -> None:
    request = spell(
        (f"u:{EVE}", "I live in Lyon."),
        (f"u:{DAN}", "I live in Pune."),
        present=(DAN,),
        group=True,
    )

    assert about(extract(request)) == [("u:dan", "Lives in Pune.")]


# ---- follow-ups: open loops ---------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "text", "importance", "valid_from"),
    [
        (
            "I have a job interview on Thursday, ask me how it went.",
            "Has a job interview on Thursday 2026-12-03 and asked to be asked how it went.",
            8,
            on(3),
        ),
        (
            "I'm interviewing at Tencent tomorrow, check in with me after.",
            "Is interviewing at Tencent on Tuesday 2026-12-01 and asked to be checked in with "
            "after.",
            8,
            on(1),
        ),
        (
            "Remind me to call my mother on Sunday.",
            "Asked to be reminded to call their mother on Sunday 2026-12-06.",
            7,
            on(6),
        ),
        (
            "Could you ask me about my move next week?",
            "Asked to be asked about their move next week.",
            8,
            None,
        ),
    ],
    ids=["interview-ask-back", "interviewing-check-in", "remind-me", "ask-me-about"],
)
def test_a_request_to_be_followed_up_is_an_open_loop_about_the_speaker(
    words: str, text: str, importance: int, valid_from: datetime | None
) -> None:
    [candidate] = extract(spell((f"u:{DAN}", words)))

    assert (candidate.subject, candidate.kind, candidate.text) == ("u:dan", Kind.OPEN_LOOP, text)
    assert candidate.importance == importance >= 7
    assert candidate.valid_from == valid_from
    assert candidate.evidence == ("m1",)


@pytest.mark.parametrize(
    ("words", "text", "event_on"),
    [
        (
            "I have a job interview on Thursday.",
            "Is job-hunting: interview on Thursday 2026-12-03.",
            date(2026, 12, 3),
        ),
        (
            "I'm interviewing at Tencent tomorrow.",
            "Is job-hunting: interview at Tencent on Tuesday 2026-12-01.",
            date(2026, 12, 1),
        ),
    ],
    ids=["interview", "interviewing"],
)
def test_an_upcoming_interview_without_an_ask_is_a_thread_not_an_open_loop(
    words: str, text: str, event_on: date
) -> None:
    # Given Dan mentioning an interview ahead, without asking to be asked about it
    # When Warren's seat is read
    [candidate] = extract(spell((f"u:{DAN}", words)))

    # Then it is a thread of Dan's story, dated, waiting for its day
    assert (candidate.subject, candidate.kind, candidate.text) == ("u:dan", Kind.THREAD, text)
    assert (candidate.key, candidate.cadence, candidate.event_on) == (
        "job_hunt",
        Cadence.EVENT,
        event_on,
    )
    assert candidate.thread is None and candidate.evidence == ("m1",)


def test_ask_me_how_it_went_joins_the_event_said_before() -> None:
    # Given Dan's interview, Warren's answer, then Dan asking to be asked back
    request = spell(
        (f"u:{DAN}", "I have a job interview on Thursday."),
        ("p:warren", "Good luck, you will do well."),
        (f"u:{DAN}", "Thanks! Ask me how it went."),
    )

    # When Warren's seat is read
    [candidate] = extract(request)

    # Then it is one open loop, resting on both of Dan's lines
    assert candidate.text == (
        "Has a job interview on Thursday 2026-12-03 and asked to be asked how it went."
    )
    assert candidate.evidence == ("m1", "m3")
    assert candidate.importance == 8


@pytest.mark.parametrize(
    "words",
    ["Ask me how it went.", "If you need anything, just ask me.", "Don't ask me about it."],
)
def test_a_follow_up_of_nothing_said_notes_nothing(words: str) -> None:
    assert extract(spell((f"u:{DAN}", words))) == []


# ---- the persona's own promises -----------------------------------------------------


@pytest.mark.parametrize(
    ("words", "text", "valid_from"),
    [
        (
            "I'll send you the 1988 shareholder letter.",
            "Promised u:dan to send the 1988 shareholder letter.",
            None,
        ),
        (
            "I will ask you about it on Friday.",
            "Promised u:dan to ask u:dan about it on Friday 2026-12-04.",
            on(4),
        ),
        (
            "Good question. I'm going to dig out my notes for you.",
            "Promised u:dan to dig out their own notes for u:dan.",
            None,
        ),
    ],
    ids=["send", "ask-on-friday", "dig-out"],
)
def test_the_personas_own_promise_is_a_self_item_with_whom_it_answered(
    words: str, text: str, valid_from: datetime | None
) -> None:
    request = spell((f"u:{DAN}", "What did Buffett write back then?"), ("p:warren", words))

    [promise] = extract(request)

    assert (promise.subject, promise.counterpart, promise.kind) == ("self", "u:dan", Kind.PROMISE)
    assert promise.text == text
    assert promise.valid_from == valid_from
    assert promise.evidence == ("m2",)


def test_in_a_group_a_promise_is_to_the_last_human_who_spoke_before_it() -> None:
    request = spell(
        (f"u:{DAN}", "Morning all."),
        (f"u:{CARA}", "Which letter was the one about insurance float?"),
        ("p:warren", "I'll send you the 1967 letter."),
        (f"u:{DAN}", "Me too please."),
        ("p:warren", "I'll send you both."),
        present=(CARA, DAN),
        group=True,
    )

    promises = [c for c in extract(request) if c.subject == "self"]

    assert [(c.counterpart, c.evidence) for c in promises] == [
        ("u:cara", ("m3",)),
        ("u:dan", ("m5",)),
    ]


def test_in_a_private_chat_a_promise_is_to_the_one_person_there() -> None:
    request = spell(("p:warren", "I'll send you the letter tomorrow."), (f"u:{DAN}", "Great."))

    [promise] = extract(request)

    assert promise.counterpart == "u:dan"
    assert promise.text == "Promised u:dan to send the letter on Tuesday 2026-12-01."


# ---- the world ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "text", "valid_from"),
    [
        (
            "Nolan's Odyssey opened on 2026-07-17, we should go!",
            "Nolan's Odyssey opened on 2026-07-17.",
            on(17, 7),
        ),
        (
            "Did you hear? The Berkshire annual report was released yesterday.",
            "The Berkshire annual report was released on Sunday 2026-11-29.",
            on(29, 11),
        ),
        (
            "Apple launched the iPhone 20 on 9 September 2026.",
            "Apple launched the iPhone 20 on 2026-09-09.",
            on(9, 9),
        ),
        ("Odyssey opens on Friday.", "Odyssey opens on Friday 2026-12-04.", on(4)),
    ],
    ids=["opened", "was-released", "launched", "opens"],
)
def test_a_public_event_announced_by_someone_present_is_a_world_event(
    words: str, text: str, valid_from: datetime
) -> None:
    request = spell((f"u:{CARA}", words), present=(CARA, DAN), group=True)

    [fact] = extract(request)

    assert (fact.subject, fact.kind, fact.text) == ("world", Kind.EVENT, text)
    assert fact.valid_from == valid_from
    assert fact.counterpart is None and fact.evidence == ("m1",)


@pytest.mark.parametrize(
    "words",
    [
        "My café opened today.",
        "I launched my podcast.",
        "Our Kickstarter launched on Friday.",
        "The new album was released last week.",
    ],
    ids=["my-cafe", "my-podcast", "our-kickstarter", "names-nothing"],
)
def test_someones_own_news_or_a_nameless_thing_is_not_a_world_fact(words: str) -> None:
    assert extract(spell((f"u:{DAN}", words))) == []


# ---- personas' lines ----------------------------------------------------------------


def test_nothing_about_a_personas_lines_except_its_own_promises() -> None:
    # Given a persona seated beside Warren who says things about itself, promises and
    # announces, and Warren who says things about himself besides a promise
    request = spell(
        (f"u:{DAN}", "Hello both."),
        ("p:nolan", "I live in London and I'm vegetarian. I'll send you my script."),
        ("p:nolan", "Odyssey opened on 2026-07-17. Remind me to call my agent."),
        ("p:warren", "I live in Omaha. I have a job interview on Thursday."),
        ("p:warren", "I'll send you the 1988 shareholder letter."),
        present=(DAN,),
        group=True,
    )

    # When Warren's seat is read
    candidates = extract(request)

    # Then the only candidate is Warren's own promise
    assert about(candidates) == [("self", "Promised u:dan to send the 1988 shareholder letter.")]


def test_nothing_when_no_human_spoke() -> None:
    request = spell(
        ("p:warren", "I'll send you the 1988 shareholder letter."),
        ("p:nolan", "I live in London."),
        present=(DAN,),
    )

    assert extract(request) == []


def test_what_the_stand_in_proposes_passes_the_room_filter_when_everyone_allows_it() -> None:
    request = spell(
        (f"u:{DAN}", "I live in Pune. I have a job interview on Thursday, ask me how it went."),
        ("p:warren", "I'll send you the 1988 shareholder letter."),
        (f"u:{CARA}", "Nolan's Odyssey opened on 2026-07-17."),
        present=(CARA, DAN),
        group=True,
    )
    assert request.seat is not None
    candidates = extract(request)

    filtered = filter_room_candidates(
        candidates,
        request.transcript,
        request.seat,
        allowed=frozenset({CARA, DAN}),
        created_today={},
    )

    assert filtered.dropped == ()
    assert [c.subject for c in filtered.kept] == ["u:dan", "u:dan", "self", "world"]
