"""The offline stand-in: the local default when no model key is set.

It exists so the whole product runs with no key — and it must never be mistaken for a
real model: every reply says what it is. It is deterministic. It answers from the
context it was given (naming the remembered facts it used), saves "remember that …"
through the same save_memory tool a real model calls, and treats an in-chat correction
("no, I moved to Bengaluru") as an update of the memory it corrects, on that turn.

Threads (seed 004) it follows the way the prompt tells a model to: a reopened chat's
kickoff cue (or a room block's first-speech cue) opens with a reunion and at most the one
question the cue names, quoting its details; news that concludes a thread the prompt shows
is acknowledged once; otherwise it never raises a thread on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from chatmemory.adapters.offline_concerns import Ending
from chatmemory.adapters.offline_extractor import OfflineExtractor
from chatmemory.adapters.offline_threads import concluded_by
from chatmemory.domain.cadence import asks_to_remember_conversation
from chatmemory.domain.extraction import ExtractionInput, ExtractionResult
from chatmemory.domain.persona_block import OPENING_TURN
from chatmemory.domain.prompt import RenderedPrompt, Turn
from chatmemory.domain.restate import third_person
from chatmemory.domain.routing import RouteDecision
from chatmemory.domain.secrets import without_secrets
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.domain.uses import CATEGORY_KEYS, category_by_words
from chatmemory.ports.model import (
    Model,
    ReplyDelta,
    ReplyDone,
    RoutingCase,
    ToolCall,
    ToolRunner,
    ToolSpec,
    Usage,
    UsesRequest,
)

_EXTRACTOR = OfflineExtractor()
LABEL = "[offline stand-in — no model key is set, so this is not Claude]"
SAVE_MEMORY = "save_memory"

_REMEMBER = re.compile(
    r"(?:^|[.!?]\s+|,\s*)(?:please\s+)?(?:remember|don't forget|do not forget|note|keep in mind)"
    r"(?:\s+that)?[,:]?\s+(?P<fact>[^?]+?)[.!]*\s*$",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^\s*(?:no|nope|nah|actually|correction|not anymore|that's (?:not right|wrong|outdated)|"
    r"that is (?:not right|wrong|outdated)|wrong)\b[,.!:;\s-]*(?P<fact>.+?)[.!]*\s*$",
    re.IGNORECASE,
)
_NOT_ANYMORE = re.compile(
    r"\bI(?:'m| am) (?:not|no longer) (?P<what>[^.!?,]+?)(?: any ?more)?[.!]*\s*$", re.IGNORECASE
)
# Where one thing asked to be remembered becomes two: "…, and I …", "… and my …".
_SEPARATE_FACTS = re.compile(r",?\s+and\s+(?=(?:I|I'm|I've|I'd|my)\b)")
_MEMORY_LINE = re.compile(
    r"^(?P<number>\d+)\. (?P<text>.+) \(last mentioned (?P<month>\d{4}-\d{2})(?: · [^)]*)?\)$"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# The blocks that may precede the new message, in the order `render` puts them.
_KICKOFF = re.compile(r"(?:^|\n\n)<kickoff>\n(?P<cue>[^\n]*)\n</kickoff>")
_MEMORIES = re.compile(r"(?:^|\n\n)<memories>\n(?P<body>.*?)\n</memories>", re.DOTALL)
_FIRST_SPEECH = re.compile(r"^When you first speak here: (?P<cue>.+)$", re.MULTILINE)
_ASK_ONE = re.compile(r"ask this one thing, by its details:\s*(?P<state>.+?)\s*$")
_THREAD_LINE = re.compile(r"^- (?P<text>.+?)(?: \(last heard [^()]*\))?$")
_FOLLOWING = "threads you're following:"
_SPEAKER = re.compile(r"^\[[up]:[^\]]+\]\s*", re.MULTILINE)
_ANCHOR = re.compile(r"\d|[$€£¥]|(?<=\s)[A-Z]")
_DAY_SAID = re.compile(r"\d{4}-\d{2}-\d{2}|\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b")
_THEIR = re.compile(r"\b([Tt])heir\b")
GREETING = "Good to see you again!"
CONGRATULATIONS = "Congratulations — that's wonderful news!"
NOTED_ENDING = "Thank you for telling me how it turned out."
_OFFLINE = (
    "I can't write a real answer offline; set ANTHROPIC_API_KEY (or configure Bedrock) "
    "to chat with Claude."
)
_SUMMARY_LINE = re.compile(r"^- The user said(?: (?P<times>\d+) times)?: (?P<clause>.+)$")


def _gist(clause: str) -> str:
    """What a clause says with its numbers masked: "topic 12" and "topic 13" repeat."""
    return re.sub(r"\d+", "#", clause.casefold())


@dataclass(frozen=True, slots=True)
class _Recalled:
    number: str
    text: str
    month: str


@dataclass(frozen=True, slots=True)
class _FinalTurn:
    """The new message, the memories recalled for it, and a reopened chat's kickoff cue."""

    message: str
    recalled: list[_Recalled]
    cue: str = ""


class OfflineModel(Model):
    name = "offline"
    offline = True

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        turn = _read_final_turn(prompt.messages[-1].content)
        can_save = any(tool.name == SAVE_MEMORY for tool in tools)
        concluded = concluded_by(_spoken(turn.message), _shown_threads(prompt))
        text = self._compose(
            turn.message, turn.recalled, prompt, can_save, run_tool, concluded=concluded
        )
        opening = _reunion(turn.cue or _first_speech_cue(prompt), ask=concluded is None)
        if opening:
            text = f"{LABEL} {opening}{text.removeprefix(LABEL)}"
        for chunk in re.findall(r"\S+\s*", text):
            yield ReplyDelta(chunk)
        usage = Usage(input_tokens=prompt.tokens, output_tokens=estimate_tokens(text))
        yield ReplyDone(text=text, usage=usage, stop_reason="end_turn")

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        """Fold what the user said into one line each; repeats (same words, other numbers)
        collapse into one counted line; the oldest lines are compressed to stay in budget."""
        said: dict[str, tuple[str, int]] = {}
        for line in summary.splitlines():
            match = _SUMMARY_LINE.match(line.strip())
            if match:
                clause = match["clause"]
                said[_gist(clause)] = (clause, int(match["times"] or 1))
        for turn in turns:
            if turn.role != "user":
                continue
            sentences = _SENTENCE.split(turn.content.strip())
            # The first sentence that says something ("Turn 4." or "Hi!" says nothing).
            first = next((s for s in sentences if len(s.split()) > 4), sentences[0])
            words = first.split()
            clause = " ".join(words[:25]) + ("…" if len(words) > 25 else "")
            key = _gist(clause)
            previous, times = said.pop(key, (clause, 0))
            said[key] = (previous, times + 1)  # moves to the end: most recently said
        lines = [
            f"- The user said{f' {times} times' if times > 1 else ''}: {clause}"
            for clause, times in said.values()
        ]
        return _fit(lines, max_tokens)

    def extract(self, request: ExtractionInput) -> ExtractionResult:
        """Deterministic rules for the common statements (see offline_extractor)."""
        return _EXTRACTOR.extract(request)

    def route(self, cases: Sequence[RoutingCase]) -> list[RouteDecision]:
        return [_EXTRACTOR.route(case.candidate, case.neighbours) for case in cases]

    def write_uses(self, items: Sequence[UsesRequest]) -> list[tuple[str, ...]]:
        """Nothing for any item: uses name the requests a fact changes, which takes
        reading its meaning. Words alone only find its category, whose uses the memory
        already has, so it keeps them (and no uses job is ever queued for this model)."""
        return [() for _ in items]

    # ---- the reply ----------------------------------------------------------------------

    def _compose(
        self,
        message: str,
        recalled: list[_Recalled],
        prompt: RenderedPrompt,
        can_save: bool,
        run_tool: ToolRunner,
        *,
        concluded: Ending | None = None,
    ) -> str:
        correction = _correction(message)
        if correction and can_save:
            return self._save(correction, recalled, run_tool, corrected=True)
        if can_save and asks_to_remember_conversation(message):
            # No fact to save: the whole conversation is read at once, in the background.
            return f"{LABEL} Noted — I'll remember this conversation. {_OFFLINE}"
        remembered = _REMEMBER.search(message)
        if remembered and can_save:
            # "… that I live in Lisbon now and I work as a carpenter": two facts, two saves.
            said = [part for part in _SEPARATE_FACTS.split(remembered.group("fact")) if part]
            replies = [self._save(part, recalled, run_tool, corrected=False) for part in said]
            return _one_reply(replies)
        if concluded is not None:
            # Once, in a line, and nothing quoted: the story is theirs to tell.
            return f"{LABEL} {CONGRATULATIONS if concluded.good else NOTED_ENDING} {_OFFLINE}"
        parts = [LABEL, f'You said: "{_shorten(message, 30)}".']
        if recalled:
            used = "; ".join(f"{r.text.rstrip('.')} (mentioned {r.month})" for r in recalled)
            parts.append(f"From what you told me before, I'm taking into account: {used}.")
        note = _section(prompt, "user_note")
        if note:
            parts.append(f"Your note for me: {_shorten(note, 25)}")
        if remembered and not can_save:
            parts.append("Memory is off for this chat, so I won't keep that.")
        parts.append(_OFFLINE)
        return " ".join(parts)

    def _save(
        self, statement: str, recalled: list[_Recalled], run_tool: ToolRunner, *, corrected: bool
    ) -> str:
        # A secret said beside a fact is left out, as a careful model would: the fact stays.
        clean = without_secrets(statement)
        text = third_person(clean or statement)
        category = category_by_words(text) or "general"
        arguments: dict[str, object] = {"text": text, "category": category, "importance": 7}
        if category in CATEGORY_KEYS:
            arguments["key"] = CATEGORY_KEYS[category]
        replaced = next((r for r in recalled if category_by_words(r.text) == category), None)
        if corrected and replaced is not None:
            arguments["replaces"] = replaced.number
        result = run_tool(ToolCall(SAVE_MEMORY, arguments))
        if not result.lower().startswith("saved"):
            return f"{LABEL} I couldn't keep that: {result}"
        left_out = (
            " I left out the part that looked like a secret: those are never stored."
            if clean != statement
            else ""
        )
        if corrected:
            previous = f" (instead of: {replaced.text})" if replaced else ""
            return f"{LABEL} Thanks for correcting me — I've updated it: {text}{previous}{left_out}"
        return f"{LABEL} Noted — I'll remember: {text}{left_out}"


def _one_reply(replies: Sequence[str]) -> str:
    """Several saves' replies as one: the label once, each note after it."""
    notes = [reply.removeprefix(LABEL).strip() for reply in replies]
    return " ".join([LABEL, *notes])


def _read_final_turn(content: str) -> _FinalTurn:
    """The new message, and what the prompt put in front of it: a reopened chat's kickoff
    cue, then the numbered memories."""
    end, cue = 0, ""
    kickoff = _KICKOFF.search(content)
    if kickoff:
        cue, end = kickoff["cue"].strip(), kickoff.end()
    recalled = []
    memories = _MEMORIES.search(content, end)
    if memories:
        end = memories.end()
        for line in memories["body"].splitlines():
            match = _MEMORY_LINE.match(line.strip())
            if match:
                recalled.append(_Recalled(match["number"], match["text"], match["month"]))
    return _FinalTurn(content[end:].strip(), recalled, cue)


def _first_speech_cue(prompt: RenderedPrompt) -> str:
    """A room block's cue, while the turn says it is the persona's opening since the
    person came back; "" once it has spoken (the service marks the opening turn)."""
    if not prompt.messages or OPENING_TURN not in prompt.messages[-1].content:
        return ""
    for block in prompt.system:
        match = _FIRST_SPEECH.search(block.text)
        if match:
            return match["cue"].strip()
    return ""


def _reunion(cue: str, *, ask: bool) -> str:
    """The opening a cue asks for: a greeting, then at most the one question it names, by
    that thread's details as written ("Last time: second round at Acme on Friday
    2026-12-11 — how did it go?")."""
    if not cue:
        return ""
    named = _ASK_ONE.search(cue)
    if not ask or named is None:
        return GREETING
    state = _as_said(named["state"])
    question = "how did it go?" if _DAY_SAID.search(state) else "how is it going?"
    return f"{GREETING} Last time: {state} — {question}"


def _as_said(state: str) -> str:
    """A thread's state as a friend would say it back: without a heading that holds no
    detail ("Is job-hunting: "), "their" as "your", the details untouched."""
    text = state.strip().rstrip(".")
    head, colon, rest = text.partition(": ")
    if colon and rest and not _ANCHOR.search(head):
        text = rest
    text = _THEIR.sub(lambda match: "Your" if match[1] == "T" else "your", text)
    first = text.split(" ", 1)[0]
    if first[1:].islower() or len(first) == 1:
        text = text[:1].lower() + text[1:]
    return text


def _shown_threads(prompt: RenderedPrompt) -> list[str]:
    """The threads the prompt shows the persona: the chat's `<threads>` block, or a room
    block's "threads you're following" lines; each as its state, without its notes."""
    lines = _section(prompt, "threads").splitlines()
    for block in prompt.system:
        following = False
        for line in block.text.splitlines():
            if line == _FOLLOWING:
                following = True
            elif following and line.startswith("- "):
                lines.append(line)
            else:
                following = False
    return [match["text"] for line in lines if (match := _THREAD_LINE.match(line.strip()))]


def _spoken(message: str) -> str:
    """A room's turn without its speaker tags ("[u:dan] "): the words as said."""
    return _SPEAKER.sub("", message)


def _correction(message: str) -> str | None:
    """What the user now says is true, if the message corrects something."""
    stopped = _NOT_ANYMORE.search(message)
    if stopped:
        return f"I'm no longer {stopped.group('what').strip()}"
    match = _CORRECTION.match(message)
    if match and re.search(r"\b(i|i'm|my|we)\b", match.group("fact"), re.IGNORECASE):
        return match.group("fact")
    return None


def _section(prompt: RenderedPrompt, tag: str) -> str:
    for block in prompt.system:
        match = re.search(rf"<{tag}>\n[^\n]*\n(?P<body>.*?)\n</{tag}>", block.text, re.DOTALL)
        if match:
            return match.group("body").strip()
    return ""


def _shorten(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _fit(lines: list[str], max_tokens: int) -> str:
    """Within budget by compressing the oldest lines first (keeping their key words), and
    dropping the very oldest only if compression is not enough."""
    budget = max(1, max_tokens)
    compressed = list(lines)
    index = 0
    while estimate_tokens("\n".join(compressed)) > budget and index < len(compressed):
        body = re.sub(r"^- The user said(?: \d+ times)?: ", "", compressed[index]).removeprefix(
            "- "
        )
        keywords = [w for w in body.split() if len(w) > 3 or w[:1].isupper()][:10]
        compressed[index] = "- " + " ".join(keywords)
        index += 1
    while estimate_tokens("\n".join(compressed)) > budget and len(compressed) > 1:
        compressed.pop(0)
    return "\n".join(compressed)
