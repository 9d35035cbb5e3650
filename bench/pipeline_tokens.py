"""Background memory work per idle session: model calls and input tokens (seed 002's budget:
the extractor reads ~4,300 tokens and writes ~150; at most 2 calls per idle session).

Run:  .venv/bin/python bench/pipeline_tokens.py

A scripted session (10 turns of ~350 tokens, as seed 002 plans) goes through the real
chat service; when it goes quiet, the real write pipeline runs with the real Claude
adapter and the real `anthropic` SDK — over a mock transport that records every request
and answers with a tool call shaped like the API's (no key, no network). What is
measured is what *we* send: the number of calls and each request's input tokens,
estimated on the exact request body (system + messages + tools).
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic
import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from chatmemory.adapters.claude import ClaudeModel  # noqa: E402
from chatmemory.adapters.clock import ManualClock  # noqa: E402
from chatmemory.adapters.offline_model import OfflineModel  # noqa: E402
from chatmemory.config import Container, Settings  # noqa: E402
from chatmemory.domain.tokens import estimate_tokens  # noqa: E402
from chatmemory.services.chat import ChatRequest, ChatResult  # noqa: E402

USER = "bench-pipeline"
SESSION = [
    "Hi! Quick context: I'm vegetarian, I just moved to Bengaluru from Pune and I'm preparing "
    "for the GATE exam in February. I work as a backend engineer at a fintech startup, so my "
    "evenings are short. Could you help me plan the next month of study around that?",
    "Thanks. Weekends are better for long sessions; weekdays I can do about ninety minutes "
    "after dinner. I'm weakest at algorithms and strongest at operating systems, and I keep "
    "postponing mock tests because they make me anxious. How would you structure the weeks?",
    "That looks good. One more thing: my sister Priya is visiting on the 14th, so that "
    "weekend is out. Also I prefer plans as short checklists rather than long paragraphs. "
    "Can you rewrite the first two weeks as checklists with that weekend blocked?",
    "Great. For the algorithms part, which topics come up most often in the exam, and in what "
    "order should I revise them so that each one builds on the previous? Keep it concrete.",
    "Perfect, and what should I do on the days I'm too tired after work? I don't want to "
    "lose the streak but I also don't want to burn out before February.",
]


class Recorder:
    """The mock Anthropic API: records each request body, answers with a tool call."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        text = _user_text(body)
        self.requests.append(body)
        name = body["tool_choice"]["name"] if "tool_choice" in body else "record_memories"
        if name == "record_memories":
            numbered = [m for m in text.splitlines() if m.startswith("[")]
            first_user = next(
                int(line[1 : line.index("]")]) for line in numbered if "] user:" in line
            )
            payload: dict[str, Any] = {
                "memories": [
                    {
                        "text": "Is vegetarian.",
                        "category": "diet",
                        "key": "diet",
                        "kind": "fact",
                        "importance": 7,
                        "stated_by": "user",
                        "evidence": [first_user],
                        "uses": [
                            "what should I cook tonight",
                            "choosing a restaurant",
                            "a meal plan for the week",
                        ],
                    },
                    {
                        "text": "Lives in Bengaluru, moved from Pune.",
                        "category": "location",
                        "key": "home_city",
                        "kind": "fact",
                        "importance": 7,
                        "stated_by": "user",
                        "evidence": [first_user],
                        "uses": [
                            "weather and what to wear",
                            "things to do this weekend",
                            "commute and getting around",
                        ],
                    },
                    {
                        "text": "Is preparing for the GATE exam in February 2027.",
                        "category": "education",
                        "key": "exam",
                        "kind": "fact",
                        "importance": 8,
                        "stated_by": "user",
                        "evidence": [first_user],
                        "uses": [
                            "a study plan for the week",
                            "planning evenings and weekends",
                            "dealing with exam stress",
                        ],
                    },
                    {
                        "text": "Prefers plans as short checklists.",
                        "category": "preferences",
                        "kind": "preference",
                        "importance": 5,
                        "stated_by": "user",
                        "evidence": [first_user + 4],
                        "uses": [
                            "how to format a plan",
                            "writing a schedule",
                            "summaries of steps",
                        ],
                    },
                ]
            }
        else:
            cases = sum(1 for line in text.splitlines() if line.lstrip().startswith('{"candidate"'))
            payload = {
                "decisions": [{"candidate": n, "event": "ADD"} for n in range(1, max(cases, 4) + 1)]
            }
        message = {
            "id": f"msg_bench{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [
                {
                    "type": "tool_use",
                    "id": f"toolu_bench{len(self.requests)}",
                    "name": name,
                    "input": payload,
                }
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": estimate_tokens(json.dumps(payload))},
        }
        return httpx2.Response(200, json=message)


def _user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


def request_tokens(body: dict[str, Any]) -> int:
    """Input tokens of one request: everything the model reads (system, messages, tools)."""
    parts = [block["text"] for block in body.get("system", []) if isinstance(block, dict)]
    for message in body["messages"]:
        content = message["content"]
        parts += [content] if isinstance(content, str) else [b.get("text", "") for b in content]
    parts.append(json.dumps(body.get("tools", [])))
    return estimate_tokens("\n".join(parts))


def main() -> None:
    recorder = Recorder()
    client = anthropic.Anthropic(
        api_key="bench",
        http_client=httpx2.Client(transport=httpx2.MockTransport(recorder)),
        max_retries=0,
    )
    claude = ClaudeModel(
        client=client, chat_model="claude-sonnet-5-5", fast_model="claude-haiku-5-5"
    )
    with tempfile.TemporaryDirectory() as folder:
        clock = ManualClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
        container = Container(Settings(state_dir=Path(folder), embedder="minilm"), clock)
        container.__dict__["model"] = OfflineModel()  # the chat turns themselves are not measured
        conversation = None
        for message in SESSION:
            for event in container.chat.turn(
                ChatRequest(user_id=USER, message=message, conversation_id=conversation)
            ):
                if isinstance(event, ChatResult):
                    conversation = event.conversation_id
            clock.advance(timedelta(minutes=2))
        container.pipeline.use_model(claude)
        clock.advance(timedelta(minutes=11))
        container.jobs.run_due()  # type: ignore[attr-defined]  # the idle timer fires
        memories = list(container.stores.memories.iter_memories(USER))
    calls = [(body["tool_choice"]["name"], request_tokens(body)) for body in recorder.requests]
    transcript = sum(estimate_tokens(m) for m in SESSION)
    print("\n## Background memory work per idle session\n")
    print(
        f"scripted session: {len(SESSION)} user turns (~{transcript} tokens of user text, plus replies)\n"
    )
    print("| call | model tier | input tokens (estimated, whole request) |\n|---|---|---|")
    for name, tokens in calls:
        print(f"| {name} | fast (Haiku) | {tokens:,} |")
    print(
        f"\n{len(calls)} model calls, {sum(t for _, t in calls):,} input tokens; {len(memories)} memories written"
    )


if __name__ == "__main__":
    main()
