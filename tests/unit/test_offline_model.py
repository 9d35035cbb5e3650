"""The offline stand-in: honest about what it is, and it drives the same tools a model would."""

from __future__ import annotations

from chatmemory.adapters.offline_model import LABEL, OfflineModel
from chatmemory.domain.prompt import ContextBlocks, RememberedLine, Turn, render
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.ports.model import ReplyDelta, ReplyDone, ToolCall
from chatmemory.services.chat import SAVE_MEMORY

RECALLED = (
    RememberedLine("mem_a", "Lives in Pune.", "2026-07-01"),
    RememberedLine("mem_b", "Is vegetarian.", "2026-05-12"),
)


def run(
    message: str, *, memories: tuple[RememberedLine, ...] = (), can_save: bool = True
) -> tuple[str, list[ToolCall]]:
    calls: list[ToolCall] = []

    def tool(call: ToolCall) -> str:
        calls.append(call)
        return "saved — it will be remembered from the next message on"

    prompt = render(ContextBlocks(system="S", note="Call me Al.", memories=memories), message)
    events = list(OfflineModel().reply(prompt, [SAVE_MEMORY] if can_save else [], tool))
    done = events[-1]
    assert isinstance(done, ReplyDone)
    assert "".join(e.text for e in events[:-1] if isinstance(e, ReplyDelta)) == done.text
    return done.text, calls


def test_every_reply_says_it_is_the_offline_stand_in() -> None:
    for message in ("hello", "remember that I like tea", "no, I moved to Goa"):
        assert run(message)[0].startswith(LABEL)


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
