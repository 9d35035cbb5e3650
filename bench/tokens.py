"""Token budget benchmark: what a turn costs at turn 10, 60 and 100 (seed 002's budget).

Run:  .venv/bin/python bench/tokens.py

A scripted 100-turn conversation goes through the real chat service (store, recall,
folding, prompt assembly). Replies come from a scripted model that answers with
~250-token replies, the size seed 002 plans for (the offline model's replies are
shorter and would flatter the numbers); summaries are folded by the offline model.
For each measured turn: the prompt's estimated input tokens, what sending the whole
history would cost instead, and the share of the prompt before the last cache
breakpoint (what Anthropic's prompt cache can serve from the previous turn).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from chatmemory.adapters.clock import ManualClock  # noqa: E402
from chatmemory.adapters.offline_model import OfflineModel  # noqa: E402
from chatmemory.config import Container, Settings  # noqa: E402
from chatmemory.domain.prompt import RenderedPrompt  # noqa: E402
from chatmemory.domain.tokens import estimate_tokens  # noqa: E402
from chatmemory.ports.model import ReplyDelta, ReplyDone, ToolRunner, ToolSpec, Usage  # noqa: E402
from chatmemory.services.chat import ChatRequest, ChatResult  # noqa: E402
from chatmemory.services.context import ContextRequest  # noqa: E402

MEASURED = (10, 60, 100)
USER = "bench-tokens"
TOPICS = (
    "my GATE preparation plan for the next months",
    "which data structures chapters I should revise first",
    "how to keep my evenings free for my daughter's football practice",
    "a vegetarian meal plan that fits a student budget in Bengaluru",
    "how to pace mock tests so I don't burn out before February",
)


class ScriptedReplies(OfflineModel):
    """Answers every turn with a ~250-token reply; folds like the offline model."""

    name = "scripted-250-token-replies"

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        sentence = (
            "Here is a considered answer that weighs your situation, the constraints you "
            "mentioned and a couple of alternatives, with one concrete next step. "
        )
        text = sentence * 9
        yield ReplyDelta(text)
        yield ReplyDone(text=text, usage=Usage(input_tokens=prompt.tokens), stop_reason="end_turn")


def user_message(turn: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    return (
        f"Turn {turn}. I wanted to come back to {topic}. Last time we said I would try the "
        "schedule for a week; it mostly worked, but two evenings slipped because of work. "
        "Could you adjust the plan, keep what worked, and tell me what to drop first?"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        clock = ManualClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
        container = Container(Settings(state_dir=Path(folder), embedder="minilm"), clock)
        container.__dict__["model"] = ScriptedReplies()
        chat, context = container.chat, container.context
        conversation_id = None
        history_tokens = 0
        rows = []
        for turn in range(1, 101):
            message = user_message(turn)
            if turn in MEASURED:
                built = context.build(
                    ContextRequest(user_id=USER, message=message, conversation_id=conversation_id)
                )
                prompt = built.rendered
                last_cached = max((i for i, m in enumerate(prompt.messages) if m.cache), default=-1)
                stable = sum(estimate_tokens(block.text) for block in prompt.system) + sum(
                    estimate_tokens(f"{m.role}: {m.content}")
                    for m in prompt.messages[: last_cached + 1]
                )
                full = (
                    estimate_tokens(built.blocks.system) + history_tokens + estimate_tokens(message)
                )
                rows.append(
                    (turn, prompt.tokens, full, stable / prompt.tokens, len(built.blocks.recent))
                )
            result = None
            for event in chat.turn(
                ChatRequest(user_id=USER, message=message, conversation_id=conversation_id)
            ):
                if isinstance(event, ChatResult):
                    result = event
            assert result is not None
            conversation_id = result.conversation_id
            history_tokens += estimate_tokens(message) + estimate_tokens(result.reply)
            container.jobs.run_pending()  # type: ignore[attr-defined]  # folds, off the request path
            clock.advance(timedelta(minutes=2))
        state = container.stores.conversations.get_conversation(USER, conversation_id or "")
    print("\n## Prompt tokens over a 100-turn conversation\n")
    print(
        "| turn | prompt tokens | full history instead | cache-stable share | verbatim messages |"
    )
    print("|---|---|---|---|---|")
    for turn, prompt_tokens, full, stable_share, recent in rows:
        print(f"| {turn} | {prompt_tokens:,} | {full:,} | {stable_share:.0%} | {recent} |")
    if state:
        print(
            f"\nafter 100 turns: {state.fold_count} folds, summary "
            f"{estimate_tokens(state.summary)} tokens (budget 400), "
            f"covering messages 1-{state.summary_upto_seq}"
        )


if __name__ == "__main__":
    main()
