"""The prompt: built from blocks in one fixed, cache-friendly order. Pure.

Order (seed 002): system rules, profile, note, the threads the persona follows (seed 004:
under the facts), summary, recent turns, the return greeting's cue on a reopened chat, the
retrieved memories with their dates, the new message. Stable parts come first so the provider's
prompt cache keeps working: breakpoints after the system rules (never change), after
profile + note + summary (change on a profile rebuild or a fold), and on the last recent
turn (grows until the next fold). The rendered prompt is a pure function of the blocks
and the new message — `/v1/context` returns exactly the blocks a chat turn renders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from chatmemory.domain.tokens import estimate_tokens

# A "<" that starts something tag-like: </memories>, <system>, <|im_start|>, <<SYS>>, <!-- .
_TAG_OPENING = re.compile(r"<(?=[/!?|<]?[A-Za-z|])")
# U+2039 (single left-pointing angle quotation mark): reads the same to a person, opens nothing
_LOOKALIKE = "\u2039"


def neutralise(text: str) -> str:
    """Stored text as it may appear inside a prompt section: nothing in it can close the
    section it sits in or open another (every tag-like "<" becomes U+2039). Idempotent, so
    blocks neutralised once render unchanged."""
    return _TAG_OPENING.sub(_LOOKALIKE, text)


def one_line(text: str) -> str:
    """A stored sentence on one line, neutralised: a memory cannot add lines of its own
    (a fake "2. …" entry or a "SYSTEM:" line) to the list it is rendered in."""
    return neutralise(" ".join(text.split()))


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True, slots=True)
class RememberedLine:
    """A memory as the model sees it: its words and when it was last stated."""

    memory_id: str
    text: str
    date: str  # YYYY-MM-DD, the day it was stated (or last corrected)
    due: str = ""  # its shelf life as a reply can say it: "2 days left", "overdue by a week"

    @property
    def month(self) -> str:
        return self.date[:7]


@dataclass(frozen=True, slots=True)
class ThreadLine:
    """A thread the persona follows, as the model sees it: its current state, and the line
    that adds how long ago it was last heard and what the moment allows (seed 004)."""

    memory_id: str
    text: str
    line: str  # "- <text> (last heard 12 days ago · <annotation>)"


class Block(StrEnum):
    """The block of the prompt a memory's words reached it through."""

    MEMORIES = "memories"  # recalled for this message
    THREADS = "threads"  # a story the persona follows (and the return greeting's cue)
    PROFILE = "profile"  # the always-on digest
    PERSONA_BLOCK = "persona_block"  # a persona's always-in block in a room


@dataclass(frozen=True, slots=True)
class UsedMemory:
    """A memory whose words are in a prompt, and the block that carried them."""

    memory_id: str
    block: Block


@dataclass(frozen=True, slots=True)
class ContextBlocks:
    system: str
    profile: str = ""
    note: str = ""
    summary: str = ""
    recent: tuple[Turn, ...] = ()
    memories: tuple[RememberedLine, ...] = ()
    threads: tuple[ThreadLine, ...] = ()
    # The return greeting: a chat reopened after quiet days opens as a reunion (seed 004 ③).
    kickoff: str = ""
    # The memories the profile's lines say (its `built_from`): not rendered, but used.
    profile_ids: tuple[str, ...] = ()

    def used(self) -> tuple[UsedMemory, ...]:
        """Every memory whose words these blocks put in the prompt, each once, with the
        block that carried it: the recalled ones first (best first), then the threads,
        then the profile. What a person is shown as "memories used"."""
        seen: dict[str, UsedMemory] = {}
        for block, ids in (
            (Block.MEMORIES, [line.memory_id for line in self.memories]),
            (Block.THREADS, [thread.memory_id for thread in self.threads]),
            (Block.PROFILE, list(self.profile_ids) if self.profile else []),
        ):
            for memory_id in ids:
                seen.setdefault(memory_id, UsedMemory(memory_id, block))
        return tuple(seen.values())


@dataclass(frozen=True, slots=True)
class SystemBlock:
    text: str
    cache: bool = False  # a prompt-cache breakpoint after this block


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: str
    content: str
    cache: bool = False


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    system: tuple[SystemBlock, ...]
    messages: tuple[PromptMessage, ...]
    tokens: int = field(default=0)

    def text(self) -> str:
        """Everything the model reads, in order (for token counts and leak checks)."""
        parts = [block.text for block in self.system]
        parts += [f"{m.role}: {m.content}" for m in self.messages]
        return "\n\n".join(parts)


def render_profile_block(profile: str, note: str) -> str:
    parts = []
    if profile:
        parts.append(f"<profile>\nWhat you know about the user:\n{neutralise(profile)}\n</profile>")
    if note:
        parts.append(
            "<user_note>\nWhat the user asked every assistant to remember about them, "
            f"in their words:\n{neutralise(note)}\n</user_note>"
        )
    return "\n\n".join(parts)


THREADS_RULE = (
    "The parts of the user's story you are following: how long since they last mentioned "
    "each, and what the moment allows. Ask about at most one in this whole conversation, "
    "only at a moment that invites it (a greeting, a lull, a related topic), in your own "
    "words and by its details — names, dates and numbers exactly as written here. Leave "
    "alone any marked to leave or to rest, and never ask about two."
)


def render_threads_block(threads: tuple[ThreadLine, ...]) -> str:
    if not threads:
        return ""
    lines = "\n".join(one_line(thread.line) for thread in threads)
    return f"<threads>\n{THREADS_RULE}\n{lines}\n</threads>"


def render_kickoff(kickoff: str) -> str:
    if not kickoff:
        return ""
    return f"<kickoff>\n{one_line(kickoff)}\n</kickoff>"


def render_summary_block(summary: str) -> str:
    if not summary:
        return ""
    return (
        "<conversation_summary>\nEarlier in this conversation:\n"
        f"{neutralise(summary)}\n</conversation_summary>"
    )


def render_memories(lines: tuple[RememberedLine, ...]) -> str:
    if not lines:
        return ""
    rendered = "\n".join(
        f"{number}. {one_line(line.text)} (last mentioned {line.month}"
        + (f" · {line.due})" if line.due else ")")
        for number, line in enumerate(lines, start=1)
    )
    return (
        "<memories>\nThings the user told you before that may matter for this message. "
        "Use them only if they help; they may be out of date, so speak of them as what the "
        'user said then ("last time you mentioned…"), and do not recite them. Each says how '
        'long it is still good for ("2 days left", "overdue by a week"); an overdue one may '
        "need checking with the user. If the user corrects one, save the correction with "
        "`replaces` set to its number.\n"
        f"{rendered}\n</memories>"
    )


def _alternating(turns: list[Turn]) -> list[Turn]:
    """Start with the user and alternate, as the Messages API requires: a window cut
    mid-exchange drops its leading reply; a turn whose reply failed merges with the next."""
    while turns and turns[0].role != "user":
        turns = turns[1:]
    merged: list[Turn] = []
    for turn in turns:
        if merged and merged[-1].role == turn.role:
            merged[-1] = Turn(turn.role, f"{merged[-1].content}\n\n{turn.content}")
        else:
            merged.append(turn)
    return merged


def render(blocks: ContextBlocks, message: str) -> RenderedPrompt:
    """The prompt for one turn, with its cache breakpoints and an estimated token count."""
    system: list[SystemBlock] = [SystemBlock(blocks.system, cache=True)]
    stable = "\n\n".join(
        part
        for part in (
            render_profile_block(blocks.profile, blocks.note),
            render_threads_block(blocks.threads),
            render_summary_block(blocks.summary),
        )
        if part
    )
    if stable:
        system.append(SystemBlock(stable, cache=True))
    before = "\n\n".join(
        part for part in (render_kickoff(blocks.kickoff), render_memories(blocks.memories)) if part
    )
    final = f"{before}\n\n{message}" if before else message
    turns = _alternating([*blocks.recent, Turn("user", final)])
    messages = [
        PromptMessage(turn.role, turn.content, cache=index == len(turns) - 2)
        for index, turn in enumerate(turns)
    ]
    rendered = RenderedPrompt(system=tuple(system), messages=tuple(messages))
    return RenderedPrompt(
        system=rendered.system, messages=rendered.messages, tokens=estimate_tokens(rendered.text())
    )
