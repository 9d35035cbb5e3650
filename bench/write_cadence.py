"""Background write work per active user per day, under three cadences: model calls and
tokens (seed 003: "writes stay off the critical path"; issue 14 item 7).

Run:  .venv/bin/python bench/write_cadence.py

Two users live the same scripted day through the real chat service, the real idle timers
(the local job queue, fired by a clock stepped 5 s at a time) and the real write pipeline:
a *cold* user on their first day (no memories) and a *warm* one (40 memories from before).
The day is three conversations: 5 turns at breakfast, 3 at lunch, 8 in the evening, 16
turns in all, with the pauses people leave between messages (30 s to 8 minutes).

Cadences:
- fixed 600 s: every conversation is read once quiet for 10 minutes (the old rule);
- adaptive: a cold profile (< 20 memories) after 2 minutes, a warm one after 10;
- deep: adaptive, plus the user ends the evening with "Please remember all of this."
  (read at once, in deep mode) and the daily sweep runs at 03:00 in deep mode; shown
  once with every timer working (the sweep finds nothing) and once with the lunch
  conversation's timers lost (the sweep reads it, deep).

The chat replies come from a scripted model (~250 tokens each, as seed 002 plans; the chat
turns themselves are not counted: they do not change with the cadence). The write
pipeline runs the real Claude adapter and the real `anthropic` SDK over a mock transport
that records each request and answers it as the offline stand-in would (its extraction of
the same numbered lines; ADD unless a neighbour already says it). What is measured is what
we send and an estimate of what comes back:
- input tokens: estimated on each exact request body (system + messages + tools), and the
  part of it that is the cached prefix (system + tools: the same every call of a tier);
- output tokens: estimated on the JSON answer. Not counted: the deep model's thinking
  (Opus thinks by default; its share of the doubled budget cannot be estimated offline).
All token counts are `domain/tokens.estimate_tokens` estimates, not a tokenizer's.

It ends with the one read a turn adds: the bounded count that tells cold from warm.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic
import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from tokens import ScriptedReplies  # noqa: E402  (bench/tokens.py: the same ~250-token replies)

from chatmemory.adapters.claude import (  # noqa: E402
    DEFAULT_CHAT_MODEL,
    DEFAULT_DEEP_MODEL,
    DEFAULT_FAST_MODEL,
    ClaudeModel,
)
from chatmemory.adapters.clock import ManualClock  # noqa: E402
from chatmemory.adapters.offline_model import OfflineModel  # noqa: E402
from chatmemory.config import Container, Settings  # noqa: E402
from chatmemory.domain.extraction import MAX_CANDIDATES, ExtractionInput, TranscriptLine  # noqa: E402
from chatmemory.domain.ids import normalise_for_identity  # noqa: E402
from chatmemory.domain.tokens import estimate_tokens  # noqa: E402
from chatmemory.services.chat import ChatRequest, ChatResult  # noqa: E402
from chatmemory.services.idle import IdleDelays  # noqa: E402
from chatmemory.services.memories import NewMemory  # noqa: E402

DAY = datetime(2026, 11, 30, tzinfo=UTC)
STEP = timedelta(seconds=5)
_LINE = re.compile(r"^\[(?P<number>\d+)\] (?P<role>user|assistant): (?P<text>.*)$")


@dataclass(frozen=True)
class Session:
    """One conversation: when it starts, and each message with its offset in seconds."""

    name: str
    start: timedelta
    turns: tuple[tuple[int, str], ...]


BREAKFAST = Session(
    "breakfast",
    timedelta(hours=7, minutes=40),
    (
        (
            0,
            "Morning! I'm preparing for the GATE exam in February and I'm vegetarian, so "
            "I need quick breakfasts that keep me going through a long study morning.",
        ),
        (70, "I live in Pune, near the university. Anything I can make in ten minutes?"),
        (
            230,
            "Good ideas. My sister Priya is visiting this weekend, so I'd like something a "
            "bit nicer for Saturday too.",
        ),
        (290, "She doesn't eat onions or garlic. Does that change the list?"),
        (520, "Great, thanks. Can you put Saturday's menu as a short checklist?"),
    ),
)
LUNCH = Session(
    "lunch",
    timedelta(hours=12, minutes=30),
    (
        (
            0,
            "Quick one: I work as a backend engineer at a fintech startup and my evenings "
            "are short. How much revision can I realistically fit on weekdays?",
        ),
        (95, "Ninety minutes after dinner sounds right. Which subjects first?"),
        (400, "I'm weakest at algorithms, strongest at operating systems. Adjust it?"),
    ),
)
EVENING = Session(
    "evening",
    timedelta(hours=21),
    (
        (
            0,
            "I have a cat named Miso who keeps walking on my notes. Any tips for "
            "studying at home with a cat around?",
        ),
        (50, "Ha, true. Back to the plan: how should I pace mock tests?"),
        (140, "I keep postponing them because they make me anxious."),
        (400, "That helps. What should I do on days I'm too tired after work?"),
        (460, "And weekends? I'd like one day mostly free for Priya's visits."),
        (700, "Okay. Can you summarise the whole weekly plan in one table?"),
        (760, "Looks good. One last thing: I'm allergic to peanuts, so skip those snacks."),
        (830, "Thanks, this was really useful."),
    ),
)
REMEMBER = "Please remember all of this."
DAY_OF = (BREAKFAST, LUNCH, EVENING)
SWEEP_AT = timedelta(days=1, hours=3)


@dataclass
class Call:
    tool: str
    model: str
    input_tokens: int
    prefix_tokens: int
    output_tokens: int


@dataclass
class Recorder:
    """The mock Anthropic API: records each request, answers as the offline stand-in."""

    calls: list[Call] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        tool = body["tools"][0]
        text = _user_text(body)
        if tool["name"] == "record_memories":
            deep = tool["input_schema"]["properties"]["memories"]["maxItems"] > MAX_CANDIDATES
            payload = _extraction(text, deep=deep)
        else:
            payload = _routing(text)
        answer = json.dumps(payload)
        self.calls.append(
            Call(
                tool=tool["name"],
                model=body["model"],
                input_tokens=_request_tokens(body),
                prefix_tokens=_prefix_tokens(body),
                output_tokens=estimate_tokens(answer),
            )
        )
        message = {
            "id": f"msg_bench{len(self.calls)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [
                {
                    "type": "tool_use",
                    "id": f"toolu_{len(self.calls)}",
                    "name": tool["name"],
                    "input": payload,
                }
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": estimate_tokens(answer)},
        }
        return httpx2.Response(200, json=message)


def _user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


def _request_tokens(body: dict[str, Any]) -> int:
    """Everything the model reads: system, messages, tools (as bench/pipeline_tokens.py)."""
    return _prefix_tokens(body) + estimate_tokens(_user_text(body))


def _prefix_tokens(body: dict[str, Any]) -> int:
    """The cached prefix: the tools and the system prompt, the same on every call."""
    system = "\n".join(block["text"] for block in body.get("system", []))
    return estimate_tokens(system + "\n" + json.dumps(body.get("tools", [])))


def _extraction(text: str, *, deep: bool) -> dict[str, Any]:
    """What the offline stand-in extracts from the numbered transcript, as a tool answer."""
    today = date.fromisoformat(re.search(r"<today>(.*?)</today>", text).group(1))  # type: ignore[union-attr]
    transcript = text.split("<transcript>\n", 1)[1].rsplit("\n</transcript>", 1)[0]
    lines: list[list[str]] = []
    for raw in transcript.splitlines():
        found = _LINE.match(raw)
        if found:
            lines.append([found["number"], found["role"], found["text"]])
        elif lines:
            lines[-1][2] += "\n" + raw.strip()
    request = ExtractionInput(
        transcript=tuple(TranscriptLine(n, role, content) for n, role, content in lines),
        profile="",
        known=(),
        today=today,
        deep=deep,
    )
    memories = []
    for candidate in OfflineModel().extract(request).candidates:
        uses = list(candidate.uses) or []
        uses += ["planning the week", "what to suggest next time", "a quick recap"][len(uses) :]
        memories.append(
            {
                "text": candidate.text,
                "category": candidate.category,
                **({"key": candidate.key} if candidate.key else {}),
                "kind": candidate.kind.value,
                "importance": candidate.importance,
                "stated_by": candidate.stated_by.value,
                "evidence": [int(e) for e in candidate.evidence],
                "uses": uses[:6],
            }
        )
    return {"memories": memories, "threads_raised": []}


def _routing(text: str) -> dict[str, Any]:
    decisions = []
    for line in text.splitlines():
        if not line.startswith('{"candidate"'):
            continue
        case = json.loads(line)
        said = normalise_for_identity(case["text"])
        same = any(normalise_for_identity(n["text"]) == said for n in case["neighbours"])
        decisions.append({"candidate": case["candidate"], "event": "NONE" if same else "ADD"})
    return {"decisions": decisions}


@dataclass(frozen=True)
class Cadence:
    name: str
    cold_seconds: int
    remember: bool = False
    sweep: bool = False
    lost: frozenset[str] = frozenset()


CADENCES = (
    Cadence("fixed 600 s", cold_seconds=600),
    Cadence("adaptive 120 s / 600 s", cold_seconds=120),
    Cadence("deep: remember + sweep", cold_seconds=120, remember=True, sweep=True),
    Cadence(
        "deep, lunch timer lost",
        cold_seconds=120,
        remember=True,
        sweep=True,
        lost=frozenset({"lunch"}),
    ),
)


def live_a_day(user: str, known: int, cadence: Cadence) -> tuple[list[Call], int]:
    """One user's day under one cadence: the write pipeline's calls, memories at the end."""
    recorder = Recorder()
    client = anthropic.Anthropic(
        api_key="bench",
        http_client=httpx2.Client(transport=httpx2.MockTransport(recorder)),
        max_retries=0,
    )
    claude = ClaudeModel(
        client=client,
        chat_model=DEFAULT_CHAT_MODEL,
        fast_model=DEFAULT_FAST_MODEL,
        deep_model=DEFAULT_DEEP_MODEL,
    )
    with tempfile.TemporaryDirectory() as folder:
        clock = ManualClock(DAY - timedelta(days=1))
        settings = Settings(
            state_dir=Path(folder),
            embedder="hashing",
            idle_seconds=600,
            idle_cold_seconds=cadence.cold_seconds,
        )
        container = Container(settings, clock)
        container.__dict__["model"] = ScriptedReplies()
        for number in range(known):  # what a warm user told the assistant before today
            container.memories.create(
                user, NewMemory(text=f"Has been to city number {number}.", category="travel")
            )
        clock.set(DAY)
        container.pipeline.use_model(claude)
        jobs: Any = container.jobs

        def until(moment: datetime) -> None:
            while clock.now() < moment:
                clock.advance(min(STEP, moment - clock.now()))
                jobs.run_due()

        for session in DAY_OF:
            turns = list(session.turns)
            if cadence.remember and session is EVENING:
                turns.append((turns[-1][0] + 40, REMEMBER))
            conversation = None
            for offset, message in turns:
                until(DAY + session.start + timedelta(seconds=offset))
                if session.name in cadence.lost:
                    jobs.idle_later = lambda *_args, **_kw: None  # the queue lost it
                for event in container.chat.turn(
                    ChatRequest(user_id=user, message=message, conversation_id=conversation)
                ):
                    if isinstance(event, ChatResult):
                        conversation = event.conversation_id
                jobs.__dict__.pop("idle_later", None)
        until(DAY + SWEEP_AT)
        if cadence.sweep:
            container.idle.sweep(deep=True)
        memories = sum(1 for _ in container.stores.memories.iter_memories(user))
    return recorder.calls, memories - known


def count_cost(memories: int, repeats: int = 300) -> tuple[float, float]:
    """(p50, p95) ms of the per-turn count for a user with `memories` memories (SQLite)."""
    with tempfile.TemporaryDirectory() as folder:
        clock = ManualClock(DAY)
        container = Container(Settings(state_dir=Path(folder), embedder="hashing"), clock)
        for number in range(memories):
            container.memories.create(
                "bench-count", NewMemory(text=f"Has been to city number {number}.")
            )
        delays = IdleDelays(container.stores)
        said = clock.now() + timedelta(seconds=1)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            delays.known_by("bench-count", "assistant", said)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), statistics.quantiles(times, n=20)[-1]


def main() -> None:
    users = (
        ("cold (first day, 0 memories)", "bench-cold", 0),
        ("warm (40 memories)", "bench-warm", 40),
    )
    turns = sum(len(s.turns) for s in DAY_OF)
    print("\n## Background write work per active user per day\n")
    print(
        f"one scripted day: {len(DAY_OF)} conversations, {turns} user turns (+1 for "
        f'"{REMEMBER}" under the deep cadences), replies ~250 tokens; all tokens estimated\n'
    )
    print(
        "| user | cadence | extract calls (deep) | route calls | input tokens "
        "(of which cached prefix) | output tokens | fast-tier input | deep-tier input | "
        "memories written |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, user, known in users:
        for cadence in CADENCES:
            calls, written = live_a_day(user, known, cadence)
            extract = [c for c in calls if c.tool == "record_memories"]
            deep = [c for c in calls if c.model == DEFAULT_DEEP_MODEL]
            route = [c for c in calls if c.tool == "route_memories"]
            total_in = sum(c.input_tokens for c in calls)
            prefix = sum(c.prefix_tokens for c in calls)
            out = sum(c.output_tokens for c in calls)
            fast_in = sum(c.input_tokens for c in calls if c.model == DEFAULT_FAST_MODEL)
            deep_in = sum(c.input_tokens for c in deep)
            print(
                f"| {label} | {cadence.name} | {len(extract)} ({len(deep)}) | {len(route)} | "
                f"{total_in:,} ({prefix:,}) | {out:,} | {fast_in:,} | {deep_in:,} | {written} |"
            )
    print("\n## The read a turn adds: telling cold from warm\n")
    print("| memories the user has | count p50 | count p95 |\n|---|---|---|")
    for memories in (0, 19, 500):
        p50, p95 = count_cost(memories)
        print(f"| {memories} | {p50:.2f} ms | {p95:.2f} ms |")


if __name__ == "__main__":
    main()
