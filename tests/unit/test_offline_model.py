"""The offline stand-in: honest about what it is, and it drives the same tools a model would.
It follows a person's story as the prompt asks (seed 004): a reunion opens with at most the
one question its cue names, by its details; a conclusion is acknowledged once; otherwise it
never raises a thread on its own."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from chatmemory.adapters.offline_model import LABEL, OfflineModel
from chatmemory.domain.audience import Visible
from chatmemory.domain.memory import Kind
from chatmemory.domain.persona_block import build_persona_block
from chatmemory.domain.prompt import (
    ContextBlocks,
    RememberedLine,
    RenderedPrompt,
    ThreadLine,
    Turn,
    render,
)
from chatmemory.domain.rooms import Room, RoomKind, RoomMessage
from chatmemory.domain.threads import (
    Cadence,
    ThreadMeta,
    first_since_return,
    return_cue,
    thread_line,
)
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.ports.model import ReplyDelta, ReplyDone, ToolCall, UsesRequest
from chatmemory.services.chat import SAVE_MEMORY
from chatmemory.services.room_service import render_room_turn
from tests.support import builders

RECALLED = (
    RememberedLine("mem_a", "Lives in Pune.", "2026-07-01"),
    RememberedLine("mem_b", "Is vegetarian.", "2026-05-12"),
)
NOW = datetime(2026, 12, 13, 9, tzinfo=UTC)
LAST_SEEN = NOW - timedelta(days=12)
ACME = "Is job-hunting: second round at Acme on Friday 2026-12-11."
TSLA = "Bought TSLA at $10; holding until $100."
ASK_ACME = (
    "Good to see you again! Last time: second round at Acme on Friday 2026-12-11 — how did it go?"
)


def shown(*texts: str) -> tuple[ThreadLine, ...]:
    """Threads as the chat's `<threads>` block shows them, last heard twelve days ago."""
    meta = ThreadMeta(cadence=Cadence.FAST)
    return tuple(
        ThreadLine(
            f"mem_{number}", text, thread_line(text, meta, LAST_SEEN.date(), NOW.date()) or ""
        )
        for number, text in enumerate(texts)
    )


def run(
    message: str,
    *,
    memories: tuple[RememberedLine, ...] = (),
    can_save: bool = True,
    threads: tuple[ThreadLine, ...] = (),
    kickoff: str = "",
) -> tuple[str, list[ToolCall]]:
    blocks = ContextBlocks(
        system="S", note="Call me Al.", memories=memories, threads=threads, kickoff=kickoff
    )
    return reply(render(blocks, message), can_save=can_save)


def reply(prompt: RenderedPrompt, *, can_save: bool = True) -> tuple[str, list[ToolCall]]:
    calls: list[ToolCall] = []

    def tool(call: ToolCall) -> str:
        calls.append(call)
        return "saved — it will be remembered from the next message on"

    events = list(OfflineModel().reply(prompt, [SAVE_MEMORY] if can_save else [], tool))
    done = events[-1]
    assert isinstance(done, ReplyDone)
    assert "".join(e.text for e in events[:-1] if isinstance(e, ReplyDelta)) == done.text
    return done.text, calls


def reunion(thread: str | None = ACME) -> str:
    """The kickoff cue of a chat reopened after twelve quiet days, naming `thread`."""
    cue = return_cue(LAST_SEEN, NOW, thread)
    assert cue is not None
    return cue


def test_every_reply_says_it_is_the_offline_stand_in() -> None:
    for message in ("hello", "remember that I like tea", "no, I moved to Goa"):
        assert run(message)[0].startswith(LABEL)
    assert run("hello", kickoff=reunion())[0].startswith(LABEL)
    assert run("I got the job!", threads=shown(ACME))[0].startswith(LABEL)


def test_it_answers_from_the_context_it_was_given() -> None:
    reply, calls = run("What's a good dinner?", memories=RECALLED)

    assert "Is vegetarian (mentioned 2026-05)" in reply and "Lives in Pune" in reply
    assert "Call me Al." in reply and calls == []


def test_remember_that_calls_save_memory_with_a_standalone_sentence() -> None:
    reply, [call] = run("Please remember that I'm preparing for GATE in February")

    assert call == ToolCall(
        "save_memory",
        {"text": "Is preparing for GATE in February.", "category": "education", "importance": 7},
    )
    assert "Is preparing for GATE in February." in reply


def test_a_correction_names_the_memory_it_replaces_by_number() -> None:
    _, [call] = run("no, I moved to Bengaluru", memories=RECALLED)

    assert call.arguments["text"] == "Moved to Bengaluru."
    assert call.arguments["replaces"] == "1" and call.arguments["key"] == "home_city"


def test_nothing_is_saved_when_the_tool_is_not_offered() -> None:
    reply, calls = run("remember that I'm vegetarian", can_save=False)

    assert calls == [] and "won't keep" in reply


def test_summaries_fold_repeats_and_stay_in_budget() -> None:
    turns = [Turn("user", "I moved to Bengaluru and I'm preparing for GATE.")] + [
        Turn("user", f"Let's plan study topic {n} in detail.") for n in range(200)
    ]

    summary = OfflineModel().summarize("", turns, max_tokens=400)

    assert estimate_tokens(summary) <= 400
    assert "Bengaluru" in summary and "200 times" in summary


# ---- threads: the reunion -------------------------------------------------------------------


def test_a_reopened_chat_opens_with_a_reunion_and_one_question_by_its_details() -> None:
    # Given a chat reopened after twelve days, the cue naming the ripe job hunt
    # When the user says hello
    text, _ = run("Hello!", kickoff=reunion(), threads=shown(ACME))

    # Then the reply greets them and asks exactly one question, quoting its anchors
    assert text.startswith(f"{LABEL} {ASK_ACME}")
    assert text.count("?") == 1


def test_a_reunion_with_nothing_ripe_greets_and_asks_nothing() -> None:
    text, _ = run("Hello!", kickoff=reunion(None), threads=shown(ACME))

    assert text.startswith(f"{LABEL} Good to see you again!")
    assert "?" not in text and "Acme" not in text


def test_without_a_kickoff_it_never_raises_a_thread_on_its_own() -> None:
    text, _ = run("Hello!", threads=shown(ACME, TSLA))

    assert "Acme" not in text and "TSLA" not in text and "?" not in text


def test_the_kickoff_and_the_memories_before_the_message_are_both_read() -> None:
    # Given a reopened chat whose message comes after both the kickoff and the memories
    text, _ = run("What's for dinner", kickoff=reunion(), memories=RECALLED)

    # Then the cue opens the reply, the memories are used, and the message is only itself
    assert text.startswith(f"{LABEL} {ASK_ACME}")
    assert "Is vegetarian (mentioned 2026-05)" in text
    assert 'You said: "What\'s for dinner".' in text


def test_the_question_speaks_of_their_details_as_theirs() -> None:
    text, _ = run("Hi", kickoff=reunion("Has their driving test on Friday 2026-12-11."))

    assert "Last time: has your driving test on Friday 2026-12-11 — how did it go?" in text


# ---- threads: a conclusion ------------------------------------------------------------------


def test_news_that_concludes_a_shown_thread_is_acknowledged_once_quoting_nothing() -> None:
    # Given the job hunt shown to the persona
    # When the user says they got the job
    text, calls = run("I got the job!", threads=shown(ACME))

    # Then the reply congratulates them, once, and quotes nothing else
    assert text.count("Congratulations") == 1
    assert "Acme" not in text and "You said" not in text and calls == []


def test_a_conclusion_on_reopening_is_acknowledged_instead_of_asked_about() -> None:
    text, _ = run("I got it!", kickoff=reunion(), threads=shown(ACME))

    assert "Good to see you again!" in text and "Congratulations" in text
    assert "?" not in text and "Acme" not in text


def test_a_sale_is_acknowledged_without_congratulations() -> None:
    text, _ = run("I sold my TSLA shares last week.", threads=shown(TSLA))

    assert "Thank you for telling me how it turned out." in text
    assert "Congratulations" not in text


def test_words_of_a_conclusion_with_no_thread_shown_get_the_plain_reply() -> None:
    text, _ = run("I got the job!")

    assert 'You said: "I got the job!"' in text and "Congratulations" not in text


# ---- threads: a room's first speech ---------------------------------------------------------


def room_prompt(lines: Sequence[tuple[str, str]], *, cue: str | None) -> RenderedPrompt:
    """Warren's turn in Dan's private chat: his block holds Dan's job hunt (and `cue`, the
    return greeting), then the room's lines."""
    thread = builders.memory(
        "dan",
        ACME,
        LAST_SEEN,
        persona="warren",
        witnessed=("dan",),
        kind=Kind.THREAD,
        key="job_hunt",
        meta=ThreadMeta(cadence=Cadence.FAST).to_meta(),
    )
    block = build_persona_block(
        "warren", frozenset({"dan"}), [Visible(thread, confidence=True)], notes={}, now=NOW, cue=cue
    )
    room = Room(
        room_id="room_dan",
        kind=RoomKind.PRIVATE,
        created_at=NOW,
        personas=frozenset({"warren"}),
        members=frozenset({"dan"}),
    )
    recent = [
        RoomMessage(room_id="room_dan", seq=seq, speaker=speaker, text=words, created_at=NOW)
        for seq, (speaker, words) in enumerate(lines, start=1)
    ]
    # The service marks the persona's opening turn, as RoomService.preview decides it.
    opening = cue is not None and first_since_return(
        [(m.speaker, m.created_at) for m in recent], "p:warren"
    )
    return render_room_turn("warren", room, block, recent, opening=opening)


def test_a_persona_first_speaking_in_a_room_opens_with_its_blocks_cue() -> None:
    # Given Warren's block ending with the return greeting's cue, and Dan saying hello
    prompt = room_prompt([("u:dan", "Hello Warren")], cue=reunion())
    assert "When you first speak here: " in prompt.system[1].text

    # When Warren first speaks
    text, _ = reply(prompt, can_save=False)

    # Then he greets Dan and asks the one thing, by its details
    assert text.startswith(f"{LABEL} {ASK_ACME}")
    assert text.count("?") == 1


def test_once_the_persona_has_spoken_the_cue_is_not_followed_again() -> None:
    lines = [("u:dan", "Hello Warren"), ("p:warren", "Hello Dan."), ("u:dan", "Busy week.")]

    text, _ = reply(room_prompt(lines, cue=reunion()), can_save=False)

    assert "Good to see you again" not in text and "Acme" not in text


def test_without_a_cue_a_room_persona_raises_no_thread() -> None:
    text, _ = reply(room_prompt([("u:dan", "Hello Warren")], cue=None), can_save=False)

    assert "Acme" not in text and "?" not in text


def test_in_a_room_news_that_concludes_a_thread_in_the_block_is_acknowledged() -> None:
    text, _ = reply(room_prompt([("u:dan", "I got the job!")], cue=None), can_save=False)

    assert "Congratulations" in text and "Acme" not in text


def test_the_thread_lines_have_the_shape_the_reply_reads() -> None:
    # The reply reads thread lines as the domain renders them; a guard on that seam.
    [line] = shown(ACME)

    assert line.line.startswith(f"- {ACME} (last heard 12 days ago")


def test_it_writes_no_uses_so_a_memory_keeps_its_categorys() -> None:
    # It cannot read what a fact changes; its category's uses beat a guess from words
    requests = [UsesRequest("Is vegetarian.", "diet"), UsesRequest("Likes it.", "general")]

    assert OfflineModel().write_uses(requests) == [(), ()]
    assert OfflineModel().offline  # so no uses job is ever queued for it
