"""The thread exam (seed 004 §5): does the persona follow Dan's story like a friend — ask
once, with the details, at the right moment — and never nag?

Over the chat API (`/v1/chat`, `/v1/context`, `/v1/memories`) of the real local server,
with the dates injected (the clock moves; nothing sleeps):
- plant a two-beat thread: an interview at Acme on Thursday, then a second round on Friday;
- reopen the chat eight days later: the persona asks once, at the opening, with the
  anchors (Acme, the second round, Friday) — not a generic "how are things?";
- deflect ("eh, let's talk about something else"): no re-ask that session; the next
  session the thread is quiet; the user raising it themselves gets the full context back;
- resolve ("I got the job at Acme!"): one acknowledgement, the thread becomes a plain
  fact, and no later ask;
- the recall check stays as it was: a plain fact said beside the story is still recalled.

`python -m tests.exam.thread_exam` runs it with whatever model the environment configures
(Claude with `ANTHROPIC_API_KEY` set) and prints the counts — with a real model also the
in-character selection probe (reported, never asserted); the test suite runs it with the
offline stand-in and asserts the annoyance numbers.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.local.server import LocalGateway, LocalServer
from chatmemory.local.tokens import LocalTokens
from chatmemory.ports.embedder import Embedder
from tests.gates.service import Api

ROOT = Path(__file__).resolve().parents[2]
DAN = "dan"
#: what names the thread in a reply; what a friend's question must carry (law 5)
THREAD_WORDS = re.compile(r"\b(?:acme|second round|interview)\b", re.IGNORECASE)
ANCHORS = re.compile(r"\bacme\b", re.IGNORECASE)
DETAIL = re.compile(r"\b(?:second round|friday|2026-12-04)\b", re.IGNORECASE)
CONGRATULATES = re.compile(r"\b(?:congratulations|congrats|great news|wonderful)\b", re.I)
START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # a Monday


@dataclass
class ThreadCounts:
    """What the exam saw, turn by turn, and what it makes of it."""

    model: str = ""
    planted: bool = False  # the first beat became a thread
    beats: int = 0  # versions of the thread before it concluded (the arc)
    asked_at_reopen: int = 0  # asks in the first reply after eight quiet days
    asks_per_session: list[int] = field(default_factory=list)
    asks_without_anchors: int = 0  # an ask that does not carry Acme and a detail
    re_asks_after_deflection: int = 0  # the rest of that session and the next one
    context_back: bool = False  # raised by the user: the thread's details in the context
    acknowledged: bool = False  # the reply to "I got the job" congratulates
    asks_after_resolution: int = 0
    became_fact: bool = False  # the thread closed under a plain fact
    recall_kept: bool = False  # a plain fact said beside it is still recalled
    selection: str = "not run (offline)"  # the in-character probe, with a real model

    @property
    def max_asks_per_session(self) -> int:
        return max(self.asks_per_session, default=0)

    def lines(self) -> list[str]:
        return [
            f"model: {self.model}",
            f"planted as a thread: {self.planted} ({self.beats} beats before it concluded)",
            f"asked at the opening eight days later: {self.asked_at_reopen}",
            f"asks per session: {self.asks_per_session} (max {self.max_asks_per_session})",
            f"asks without the anchors (Acme and a detail): {self.asks_without_anchors}",
            f"re-asks per deflection: {self.re_asks_after_deflection}",
            f"raised by the user, the context came back: {self.context_back}",
            f"resolution acknowledged: {self.acknowledged}",
            f"asks after the resolution: {self.asks_after_resolution}",
            f"the thread became a plain fact: {self.became_fact}",
            f"recall check unchanged: {self.recall_kept}",
            f"in-character selection probe: {self.selection}",
        ]


class ChatDriver:
    """Dan, talking to the service over HTTP, one session at a time."""

    def __init__(self, api: Api, clock: ManualClock, background: Callable[[], None]) -> None:
        self._api = api
        self._clock = clock
        self._background = background
        self.conversation: str | None = None

    def session(self) -> None:
        """A new chat: the app opens a new conversation."""
        self.conversation = None

    def say(self, message: str) -> str:
        body: dict[str, Any] = {"message": message}
        if self.conversation is not None:
            body["conversation_id"] = self.conversation
        answer = self._api.call(DAN, "POST", "/v1/chat", body)
        assert answer.status == 200, answer
        self.conversation = answer.body["conversation_id"]
        self._clock.advance(timedelta(minutes=1))
        return str(answer.body["reply"])

    def context(self, message: str) -> dict[str, Any]:
        answer = self._api.call(DAN, "POST", "/v1/context", {"message": message})
        assert answer.status == 200, answer
        return dict(answer.body)

    def memories(self, **query: str) -> list[dict[str, Any]]:
        params = "&".join(f"{k}={v}" for k, v in {"limit": "100", **query}.items())
        answer = self._api.call(DAN, "GET", f"/v1/memories?{params}")
        assert answer.status == 200, answer
        return list(answer.body["memories"])

    def go_quiet(self) -> None:
        """The conversation goes quiet: its write runs (as the worker or a flush would)."""
        self._background()

    def days_later(self, days: int) -> None:
        """Time passes; each night the nightly review runs (as the schedule would)."""
        for _ in range(days):
            self._clock.advance(timedelta(days=1))
            self._background()


def asks(reply: str, message: str) -> bool:
    """The reply raises the thread: it names it while the user's message did not."""
    return bool(THREAD_WORDS.search(reply)) and not THREAD_WORDS.search(message)


def run_exam(chat: ChatDriver, counts: ThreadCounts) -> ThreadCounts:
    """The exam's story; `counts` comes back filled in."""

    def session(*messages: str) -> list[tuple[str, str]]:
        chat.session()
        turns = [(message, chat.say(message)) for message in messages]
        counts.asks_per_session.append(sum(asks(reply, said) for said, reply in turns))
        for said, reply in turns:
            if asks(reply, said) and not (ANCHORS.search(reply) and DETAIL.search(reply)):
                counts.asks_without_anchors += 1
        chat.go_quiet()
        return turns

    # Monday: the first beat, and a plain fact beside it
    session("I have a job interview at Acme on Thursday.", "Remember that I am vegetarian.")
    counts.planted = bool(chat.memories(kind="thread"))

    # Thursday evening: the second beat
    chat.days_later(3)
    session("The interview at Acme went well. I have a second round on Friday!")

    # Eight days after the second round: reopened — one ask at the opening, with anchors
    chat.days_later(8)
    opening = session(
        "Hi! Long week.",
        "eh, let's talk about something else",
        "Any good book recommendations?",
    )
    counts.asked_at_reopen = int(asks(opening[0][1], opening[0][0]))
    counts.re_asks_after_deflection = sum(asks(reply, said) for said, reply in opening[2:])

    # Four days later: the thread is quiet, until Dan brings it up himself
    chat.days_later(4)
    quiet = session("Morning! What a week.")
    counts.re_asks_after_deflection += sum(asks(reply, said) for said, reply in quiet)
    raised = chat.context("No news from Acme yet, by the way.")
    seen = " ".join(
        [line["text"] for line in raised["blocks"]["threads"]]
        + [line["text"] for line in raised["blocks"]["memories"]]
    )
    counts.context_back = bool(ANCHORS.search(seen) and DETAIL.search(seen))

    # Two days later: resolved — one acknowledgement, and the thread becomes a plain fact
    chat.days_later(2)
    resolved = session("I got the job at Acme!")
    counts.acknowledged = bool(CONGRATULATES.search(resolved[0][1]))
    closed = [m for m in chat.memories(kind="thread", status="all") if m["status"] == "closed"]
    facts = {m["memory_id"]: m for m in chat.memories(kind="fact")}
    counts.became_fact = any(m["closed_by"] in facts for m in closed)
    counts.beats = len(chat.memories(kind="thread", status="all"))

    # Twelve days later, twice: never asked about again
    for _ in range(2):
        chat.days_later(12)
        later = session("Hello again!", "What should I cook tonight?")
        counts.asks_after_resolution += sum(asks(reply, said) for said, reply in later)

    dinner = chat.context("Can you give me some dinner ideas?")
    counts.recall_kept = any(
        "vegetarian" in line["text"].lower() for line in dinner["blocks"]["memories"]
    )
    return counts


# ---- the world the exam runs in --------------------------------------------------------


@dataclass
class ExamWorld:
    """The local server on a free port, its container and a hand-driven clock."""

    api: Api
    clock: ManualClock
    container: Container
    server: LocalServer

    def background(self) -> None:
        """What the dev server's worker, `chatmemory flush` and the nightly schedule do."""
        jobs = self.container.jobs_run_here
        if jobs is not None:
            jobs.run_pending()
        self.clock.advance(timedelta(seconds=self.container.settings.idle_seconds + 1))
        if jobs is not None:
            jobs.run_due()
            jobs.run_pending()
        self.container.idle.sweep(now_or_never=True)
        self.container.room_writes.sweep(now_or_never=True)
        if jobs is not None:
            jobs.run_pending()
        self.container.threads.review()

    def stop(self) -> None:
        self.server.stop()
        use_container(None)


def open_world(
    settings: Settings, clock: ManualClock, secret: str, embedder: Embedder | None = None
) -> ExamWorld:
    """`embedder`: one already loaded (the test run shares one MiniLM model)."""
    container = Container(settings, clock)
    if embedder is not None:
        container._embedder = embedder  # what the container would have built
    tokens = LocalTokens(secret)
    use_container(container)
    server = LocalServer("127.0.0.1", 0, LocalGateway(ROOT, tokens))
    server.start()
    api = Api(server.url, tokens.issue, tokens.issue_app)
    return ExamWorld(api=api, clock=clock, container=container, server=server)


def main() -> int:
    """Run the exam on a fresh local state folder with the configured model."""
    with tempfile.TemporaryDirectory() as state_dir:
        settings = replace(Settings.from_env(), state_dir=Path(state_dir), project_root=ROOT)
        world = open_world(settings, ManualClock(START), "thread-exam-local-secret-0123456789")
        try:
            counts = ThreadCounts(model=world.container.model.name)
            run_exam(ChatDriver(world.api, world.clock, world.background), counts)
            if not world.container.model.offline:
                counts.selection = selection_probe(world)
        finally:
            world.stop()
    for line in counts.lines():
        print(line)
    passed = (
        counts.planted
        and counts.max_asks_per_session <= 1
        and counts.re_asks_after_deflection == 0
        and counts.asks_without_anchors == 0
        and counts.asks_after_resolution == 0
    )
    return 0 if passed else 1


# ---- the in-character selection probe (reported, never asserted) -------------------------

IN_CHARACTER = (
    "I'm choosing between two vintage jukeboxes for the bar, the Wurlitzer 1015 or a Seeburg."
)
OUT_OF_CHARACTER = "My wife and I are expecting a baby in March."


def selection_probe(world: ExamWorld) -> str:
    """A strongly drawn persona (Steve Jobs) hears two threads in a private room — a
    jukebox verdict, a pregnancy — and meets the person again eight days later: which
    does its opening raise? Acting on the first and leaving the second is caring in
    character (seed 004 §5); the count is printed, never asserted."""
    app = "\x00app"
    api, room = world.api, "jobs-and-dan"

    def call(method: str, path: str, body: Any = None) -> Any:
        answer = api.call(app, method, path, body)
        assert answer.status in (200, 201), answer
        return answer.body

    call(
        "POST",
        "/v1/rooms",
        {"room_id": room, "kind": "private", "personas": ["steve-jobs"], "members": [DAN]},
    )
    for line in (IN_CHARACTER, OUT_OF_CHARACTER):
        call(
            "POST",
            f"/v1/rooms/{room}/messages",
            {"messages": [{"speaker": f"u:{DAN}", "text": line}]},
        )
        call("POST", f"/v1/rooms/{room}/turn", {"persona": "steve-jobs"})
    world.background()
    for _ in range(8):
        world.clock.advance(timedelta(days=1))
        world.background()
    call(
        "POST",
        f"/v1/rooms/{room}/messages",
        {"messages": [{"speaker": f"u:{DAN}", "text": "Hey, it's me again."}]},
    )
    opening = call("POST", f"/v1/rooms/{room}/turn", {"persona": "steve-jobs"})["message"]["text"]
    jukebox = bool(re.search(r"jukebox|wurlitzer|seeburg", opening, re.I))
    baby = bool(re.search(r"baby|expecting|pregnan|march", opening, re.I))
    in_character = jukebox and not baby
    return f"jukebox raised: {jukebox}, pregnancy raised: {baby} (in character: {in_character})"


if __name__ == "__main__":
    sys.exit(main())
