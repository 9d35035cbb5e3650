"""ClaudeModel's extraction from a persona's seat in a room, through the real SDK.

The anthropic client runs over an httpx2 MockTransport serving a recorded response
(tests/adapters/recordings/claude/extract_room_memories.json, and
extract_room_threads.json for the threads the persona follows); the requests it recorded
are checked after the call.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from importlib import resources

import pytest

from chatmemory.adapters.claude.prompts import extract_room_prompt
from chatmemory.domain.errors import ModelUnavailable
from chatmemory.domain.extraction import (
    Candidate,
    Dropped,
    ExtractionInput,
    ExtractionResult,
    KnownThread,
    RoomSeat,
    TranscriptLine,
)
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.room_extraction import filter_room_candidates
from chatmemory.domain.threads import Cadence, Response, ThreadReport
from tests.adapters.test_claude_model import FakeClaude, Serve, claude

DAN, CARA = "42", "17"
FLAT, LETTER, HUNTING, INTERVIEW, ODYSSEY, VEGETARIAN = (
    "rmsg_01JF0A1",
    "rmsg_01JF0A2",
    "rmsg_01JF0A3",
    "rmsg_01JF0A4",
    "rmsg_01JF0A5",
    "rmsg_01JF0A6",
)
ROOM_PROMPT_FILE = (
    resources.files("chatmemory.prompts").joinpath("extract_room.txt").read_text("utf-8")
)


def line(message_id: str, speaker: str, content: str) -> TranscriptLine:
    role = "user" if speaker.startswith("u:") else "assistant"
    return TranscriptLine(message_id, role, content, speaker=speaker)


def group_spell() -> ExtractionInput:
    """Warren's seat in a group with Dan (u:42) and Cara (u:17); Nolan speaks too."""
    return ExtractionInput(
        transcript=(
            line(FLAT, f"u:{DAN}", "Morning! I finally own a flat in Xuhui, bought it in July."),
            line(LETTER, "p:warren", "Congratulations. I'll send you the 1988 shareholder letter."),
            line(HUNTING, f"u:{CARA}", "Dan has been job-hunting for months, by the way."),
            line(
                INTERVIEW,
                f"u:{DAN}",
                "True. I have a job interview on Thursday.\nAsk me how it went?",
            ),
            line(ODYSSEY, "p:nolan", "Nolan's Odyssey opened on 2026-07-17, if you need a break."),
            line(VEGETARIAN, f"u:{CARA}", "I'm vegetarian, so pick a place with options."),
        ),
        profile="",
        known=("Lives in Shanghai.", "Promised u:42 to look up the Berkshire letters."),
        today=date(2026, 11, 30),
        seat=RoomSeat(persona="warren", present=(DAN, CARA), group=True),
    )


def test_a_room_extraction_asks_for_record_room_memories_from_the_personas_seat() -> None:
    # Given Warren's seat in a group spell
    fake = FakeClaude(FakeClaude.json("extract_room_memories.json"))

    # When the fast model extracts from it
    claude(fake).extract(group_spell())

    # Then one plain request went to the fast model, forced to call record_room_memories
    [body] = fake.bodies()
    assert body["model"] == "claude-haiku-5-5"
    assert "stream" not in body
    assert body["tool_choice"] == {
        "type": "tool",
        "name": "record_room_memories",
        "disable_parallel_tool_use": True,
    }
    assert body["thinking"] == {"type": "disabled"}
    # And its answer tool offers a subject and a counterpart on every memory
    [tool] = body["tools"]
    assert tool["name"] == "record_room_memories"
    memories = tool["input_schema"]["properties"]["memories"]
    assert memories["maxItems"] == 24
    item = memories["items"]
    assert set(item["required"]) == {
        "subject",
        "text",
        "category",
        "kind",
        "importance",
        "stated_by",
        "evidence",
    }
    assert {
        "subject",
        "counterpart",
        "valid_from",
        "cadence",
        "event_on",
        "thread",
        "concludes",
    } <= (set(item["properties"]))
    assert "threads_raised" in tool["input_schema"]["required"]
    assert item["properties"]["kind"]["enum"] == [
        "fact",
        "preference",
        "event",
        "promise",
        "open_loop",
        "relationship",
        "thread",
    ]
    assert item["properties"]["evidence"]["items"]["type"] == "integer"


def test_the_system_prompt_is_the_room_prompt_file_with_its_limits_filled_in() -> None:
    fake = FakeClaude(FakeClaude.json("extract_room_memories.json"))

    claude(fake).extract(group_spell())

    [body] = fake.bodies()
    [system] = body["system"]
    assert system["cache_control"] == {"type": "ephemeral"}
    text = system["text"]
    assert text == extract_room_prompt()
    # every line of the reviewed file is sent as written, placeholders filled
    for rule in ROOM_PROMPT_FILE.splitlines():
        if rule.strip() and "{" not in rule:
            assert rule in text
    assert "{" not in text
    assert text.startswith("You are the memory of one persona")
    assert "1 is purely mundane (brushing teeth), 10 is extremely poignant (a break-up)" in text
    assert "Leave out anything below 3, except promises, open loops, beats of a thread" in text
    assert "at most 24 items" in text and "at most 200 characters" in text
    assert "in one sentence of at most 120 characters" in text
    assert "never by a display name" in text
    assert "Nothing about anyone who is not in <present>" in text
    assert "health (sensitive)" in text


def test_the_request_carries_the_persona_present_ids_date_and_speakers() -> None:
    fake = FakeClaude(FakeClaude.json("extract_room_memories.json"))

    claude(fake).extract(group_spell())

    [body] = fake.bodies()
    [message] = body["messages"]
    assert message["role"] == "user"
    assert message["content"] == (
        "<persona>warren</persona>\n"
        "<room>group</room>\n"
        "<today>2026-11-30</today>\n\n"
        "<present>\nu:17\nu:42\n</present>\n\n"
        "<known>\n- Lives in Shanghai.\n- Promised u:42 to look up the Berkshire letters.\n"
        "</known>\n\n"
        "<threads>\n(none)\n</threads>\n\n"
        "<transcript>\n"
        "[1] u:42: Morning! I finally own a flat in Xuhui, bought it in July.\n"
        "[2] p:warren: Congratulations. I'll send you the 1988 shareholder letter.\n"
        "[3] u:17: Dan has been job-hunting for months, by the way.\n"
        "[4] u:42: True. I have a job interview on Thursday.\n"
        "    Ask me how it went?\n"
        "[5] p:nolan: Nolan's Odyssey opened on 2026-07-17, if you need a break.\n"
        "[6] u:17: I'm vegetarian, so pick a place with options.\n"
        "</transcript>"
    )
    # evidence is by line number: no message id reaches the model
    raw = fake.requests[0].content.decode()
    assert "rmsg_" not in raw


def test_a_private_chat_is_named_as_one() -> None:
    fake = FakeClaude(FakeClaude.json("extract_room_memories.json"))
    private = ExtractionInput(
        transcript=(line(FLAT, f"u:{DAN}", "I own a flat in Xuhui."),),
        profile="",
        known=(),
        today=date(2026, 11, 30),
        seat=RoomSeat(persona="warren", present=(DAN,), group=False),
    )

    claude(fake).extract(private)

    [body] = fake.bodies()
    content = body["messages"][0]["content"]
    assert "<room>private</room>" in content
    assert "<present>\nu:42\n</present>" in content
    assert "<known>\n(none)\n</known>" in content


def test_the_answer_is_read_with_subjects_and_bad_items_are_dropped_not_repaired() -> None:
    # Given an answer of ten items: six well-formed, then a subject by display name, a
    # counterpart on a world item, a counterpart that is no id, evidence naming line 9
    fake = FakeClaude(FakeClaude.json("extract_room_memories.json"))

    # When it is read
    result = claude(fake).extract(group_spell())

    # Then the six come back with their subjects and evidence as message ids; the four
    # others are dropped
    assert result.reports == ()
    assert result.candidates == (
        Candidate(
            text="Owns a flat in Xuhui, bought in July 2026.",
            category="home",
            kind=Kind.FACT,
            importance=6,
            stated_by=StatedBy.USER,
            evidence=(FLAT,),
            valid_from=datetime(2026, 7, 1, tzinfo=UTC),
            subject="u:42",
        ),
        Candidate(
            text="Promised u:42 to send the 1988 shareholder letter.",
            category="general",
            kind=Kind.PROMISE,
            importance=7,
            stated_by=StatedBy.USER,
            evidence=(LETTER,),
            subject="self",
            counterpart="u:42",
        ),
        Candidate(
            text="Is looking for a new job.",
            category="work",
            kind=Kind.FACT,
            importance=6,
            stated_by=StatedBy.INFERRED,
            evidence=(HUNTING,),
            key="job_search",
            subject="u:42",
        ),
        Candidate(
            text="Has a job interview on Thursday 2026-12-03 and asked to be asked how it went.",
            category="work",
            kind=Kind.OPEN_LOOP,
            importance=8,
            stated_by=StatedBy.USER,
            evidence=(INTERVIEW,),  # [4, 4] names one message
            valid_from=datetime(2026, 12, 3, tzinfo=UTC),
            subject="u:42",
        ),
        Candidate(
            text="Nolan's Odyssey opened on 2026-07-17.",
            category="hobbies",
            kind=Kind.EVENT,
            importance=4,
            stated_by=StatedBy.USER,
            evidence=(ODYSSEY,),
            valid_from=datetime(2026, 7, 17, tzinfo=UTC),
            subject="world",
        ),
        Candidate(
            text="Is vegetarian.",
            category="diet",
            kind=Kind.FACT,
            importance=7,
            stated_by=StatedBy.USER,
            evidence=(VEGETARIAN,),
            key="diet",
            subject="u:17",
        ),
    )


def test_the_room_filter_still_judges_what_the_parser_kept() -> None:
    # Given the parsed answer (well-formed, but not all of it may be kept)
    fake = FakeClaude(FakeClaude.json("extract_room_memories.json"))
    spell = group_spell()
    assert spell.seat is not None
    candidates = claude(fake).extract(spell).candidates

    # When the room's write filter runs on it, everyone allowing Warren
    filtered = filter_room_candidates(
        candidates,
        spell.transcript,
        spell.seat,
        allowed=frozenset({DAN, CARA}),
        created_today={},
    )

    # Then Cara's words about Dan, and a world fact only another persona said, are dropped
    assert [(c.text, reason) for c, reason in filtered.dropped] == [
        ("Is looking for a new job.", Dropped.NOT_THE_USERS_WORDS),
        ("Nolan's Odyssey opened on 2026-07-17.", Dropped.NOT_THE_USERS_WORDS),
    ]
    assert [c.subject for c in filtered.kept] == ["u:42", "self", "u:42", "u:17"]


def test_a_room_extraction_of_an_empty_slice_makes_no_call() -> None:
    fake = FakeClaude()
    empty = ExtractionInput(
        transcript=(),
        profile="",
        known=(),
        today=date(2026, 11, 30),
        seat=RoomSeat(persona="warren", present=(DAN,), group=False),
    )

    assert claude(fake).extract(empty) == ExtractionResult()
    assert fake.requests == []


# ---- threads ---------------------------------------------------------------------------------

ASKS, SECOND_ROUND, NOLAN_ASKS, SHRUG, KEYS = (
    "rmsg_01JG0B1",
    "rmsg_01JG0B2",
    "rmsg_01JG0B3",
    "rmsg_01JG0B4",
    "rmsg_01JG0B5",
)


def thread(number: str, whose: str, text: str, heard: date) -> KnownThread:
    return KnownThread(
        number=number,
        text=text,
        status="live",
        last_heard=heard,
        memory_id=f"pmem_01JT0{number}",
        subject=whose,
    )


def spell_with_threads() -> ExtractionInput:
    """Warren asks Dan about Acme (answered); Nolan asks Cara about her stock (shrugged
    off); Cara brings up her flat herself."""
    return ExtractionInput(
        transcript=(
            line(ASKS, "p:warren", "Dan, how did the first round at Acme go?"),
            line(SECOND_ROUND, f"u:{DAN}", "Second round on Friday 2026-12-11! Fingers crossed."),
            line(NOLAN_ASKS, "p:nolan", "Cara, still holding that TSLA for $100?"),
            line(SHRUG, f"u:{CARA}", "Ha, let's talk about something else."),
            line(KEYS, f"u:{CARA}", "We got the keys to the Xuhui flat on Saturday, by the way."),
        ),
        profile="",
        known=(),
        today=date(2026, 12, 7),
        seat=RoomSeat(persona="warren", present=(DAN, CARA), group=True),
        threads=(
            thread(
                "T1",
                f"u:{DAN}",
                "Is job-hunting: first round at Acme on Tuesday 2026-12-01.",
                date(2026, 11, 30),
            ),
            thread(
                "T2",
                f"u:{CARA}",
                "Bought TSLA at $10; holding until it reaches $100.",
                date(2026, 11, 2),
            ),
            thread(
                "T3",
                f"u:{CARA}",
                "Is house-hunting in Xuhui: budget ¥8m, wants a balcony.",
                date(2026, 11, 20),
            ),
        ),
    )


def test_the_room_request_lists_each_thread_with_whose_story_it_is() -> None:
    fake = FakeClaude(FakeClaude.json("extract_room_threads.json"))

    claude(fake).extract(spell_with_threads())

    content = fake.bodies()[0]["messages"][0]["content"]
    assert (
        "<known>\n(none)\n</known>\n\n"
        "<threads>\n"
        "T1 u:42 (live, last heard 2026-11-30): "
        "Is job-hunting: first round at Acme on Tuesday 2026-12-01.\n"
        "T2 u:17 (live, last heard 2026-11-02): "
        "Bought TSLA at $10; holding until it reaches $100.\n"
        "T3 u:17 (live, last heard 2026-11-20): "
        "Is house-hunting in Xuhui: budget ¥8m, wants a balcony.\n"
        "</threads>\n\n"
        "<transcript>\n"
    ) in content
    raw = fake.requests[0].content.decode()
    assert "pmem_" not in raw and "rmsg_" not in raw


def test_a_room_beat_continues_its_persons_thread_and_a_fact_concludes_theirs() -> None:
    # Given an answer with Dan's beat of T1, Cara's flat concluding T3, a second fact of
    # Cara's that names Dan's thread, and a thread the persona would follow about itself
    fake = FakeClaude(FakeClaude.json("extract_room_threads.json"))

    # When it is read
    result = claude(fake).extract(spell_with_threads())

    # Then the beat and the conclusion keep their numbers; the fact naming someone else's
    # thread is kept without it; the thread that is no person's story is dropped
    assert result.candidates == (
        Candidate(
            text="Is job-hunting: second round at Acme on Friday 2026-12-11.",
            category="work",
            kind=Kind.THREAD,
            importance=4,
            stated_by=StatedBy.USER,
            evidence=(SECOND_ROUND,),
            key="job_hunt",
            subject="u:42",
            cadence=Cadence.FAST,
            thread="T1",
        ),
        Candidate(
            text="Owns a flat in Xuhui since December 2026.",
            category="home",
            kind=Kind.FACT,
            importance=8,
            stated_by=StatedBy.USER,
            evidence=(KEYS,),
            key="home",
            valid_from=datetime(2026, 12, 5, tzinfo=UTC),
            subject="u:17",
            concludes="T3",
        ),
        Candidate(
            text="Got the keys to the Xuhui flat on Saturday 2026-12-05.",
            category="home",
            kind=Kind.EVENT,
            importance=7,
            stated_by=StatedBy.USER,
            evidence=(KEYS,),
            valid_from=datetime(2026, 12, 5, tzinfo=UTC),
            subject="u:17",
        ),
    )


def test_only_this_personas_own_line_raises_a_thread() -> None:
    # Given reports of T1 on Warren's line, T2 on Nolan's line and T2 on Cara's own line
    fake = FakeClaude(FakeClaude.json("extract_room_threads.json"))

    # When they are read from Warren's seat
    result = claude(fake).extract(spell_with_threads())

    # Then only Warren's raise is reported: another persona's ask is not his, and a
    # person's line is never a raise
    assert result.reports == (
        ThreadReport(thread="T1", raised_in=ASKS, response=Response.ANSWERED),
    )


def test_the_room_prompt_writes_out_the_thread_rules() -> None:
    text = extract_room_prompt()

    assert "A thread is always about a person present" in text
    assert "Another persona's line is never this persona's raise." in text
    assert '"let\'s talk about something else" after the persona raised it is a deflection' in text
    assert 'not a "self" item and not a thread' in text


@pytest.mark.parametrize(
    ("serve", "kind"),
    [
        (FakeClaude.json("extract_memories.json"), "made 0 record_room_memories calls"),
        (FakeClaude.json("extract_cut_off.json"), "cut off (max_tokens)"),
        (FakeClaude.json("error_overloaded_529.json", 529), "overloaded_error (HTTP 529"),
    ],
    ids=["one-to-one-tool", "cut-off", "overloaded"],
)
def test_a_failed_room_extraction_is_model_unavailable_without_the_slice(
    serve: Serve, kind: str
) -> None:
    fake = FakeClaude(serve)

    with pytest.raises(ModelUnavailable) as raised:
        claude(fake).extract(group_spell())

    assert kind in str(raised.value)
    assert "Xuhui" not in str(raised.value)
    assert raised.value.__cause__ is None
