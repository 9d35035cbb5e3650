"""The offline stand-in: the local default when no model key is set.

It exists so the whole product runs with no key — and it must never be mistaken for a
real model: every reply says what it is. It is deterministic. It answers from the
context it was given (naming the remembered facts it used), saves "remember that …"
through the same save_memory tool a real model calls, and treats an in-chat correction
("no, I moved to Bengaluru") as an update of the memory it corrects, on that turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from chatmemory.adapters.offline_extractor import OfflineExtractor
from chatmemory.domain.extraction import Candidate, ExtractionInput
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
_MEMORY_LINE = re.compile(
    r"^(?P<number>\d+)\. (?P<text>.+) \(last mentioned (?P<month>\d{4}-\d{2})\)$"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SUMMARY_LINE = re.compile(r"^- The user said(?: (?P<times>\d+) times)?: (?P<clause>.+)$")


def _gist(clause: str) -> str:
    """What a clause says with its numbers masked: "topic 12" and "topic 13" repeat."""
    return re.sub(r"\d+", "#", clause.casefold())


@dataclass(frozen=True, slots=True)
class _Recalled:
    number: str
    text: str
    month: str


class OfflineModel(Model):
    name = "offline"
    offline = True

    def reply(
        self, prompt: RenderedPrompt, tools: Sequence[ToolSpec], run_tool: ToolRunner
    ) -> Iterator[ReplyDelta | ReplyDone]:
        message, recalled = _read_final_turn(prompt.messages[-1].content)
        can_save = any(tool.name == SAVE_MEMORY for tool in tools)
        text = self._compose(message, recalled, prompt, can_save, run_tool)
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

    def extract(self, request: ExtractionInput) -> list[Candidate]:
        """Deterministic rules for the common statements (see offline_extractor)."""
        return _EXTRACTOR.extract(request)

    def route(self, cases: Sequence[RoutingCase]) -> list[RouteDecision]:
        return [_EXTRACTOR.route(case.candidate, case.neighbours) for case in cases]

    # ---- the reply ----------------------------------------------------------------------

    def _compose(
        self,
        message: str,
        recalled: list[_Recalled],
        prompt: RenderedPrompt,
        can_save: bool,
        run_tool: ToolRunner,
    ) -> str:
        correction = _correction(message)
        if correction and can_save:
            return self._save(correction, recalled, run_tool, corrected=True)
        remembered = _REMEMBER.search(message)
        if remembered and can_save:
            return self._save(remembered.group("fact"), recalled, run_tool, corrected=False)
        parts = [LABEL, f'You said: "{_shorten(message, 30)}".']
        if recalled:
            used = "; ".join(f"{r.text.rstrip('.')} (mentioned {r.month})" for r in recalled)
            parts.append(f"From what you told me before, I'm taking into account: {used}.")
        note = _section(prompt, "user_note")
        if note:
            parts.append(f"Your note for me: {_shorten(note, 25)}")
        if remembered and not can_save:
            parts.append("Memory is off for this chat, so I won't keep that.")
        parts.append(
            "I can't write a real answer offline; set ANTHROPIC_API_KEY (or configure Bedrock) "
            "to chat with Claude."
        )
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


def _read_final_turn(content: str) -> tuple[str, list[_Recalled]]:
    """The new message, and the numbered memories the prompt put in front of it."""
    if "</memories>" not in content:
        return content.strip(), []
    block, _, message = content.partition("</memories>")
    recalled = []
    for line in block.splitlines():
        match = _MEMORY_LINE.match(line.strip())
        if match:
            recalled.append(_Recalled(match["number"], match["text"], match["month"]))
    return message.strip(), recalled


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
