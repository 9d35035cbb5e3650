"""The system prompts of the fast model's calls, read from the prompt files
(chatmemory/prompts/*.txt) with their limits filled in."""

from __future__ import annotations

import functools
from importlib import resources

from chatmemory.domain import rules
from chatmemory.domain.extraction import (
    DEEP_MAX_CANDIDATES,
    IMPORTANCE_FLOOR,
    MAX_CANDIDATES,
)
from chatmemory.domain.room_extraction import ROOM_MAX_CANDIDATES
from chatmemory.domain.sensitive import SENSITIVE_CATEGORIES
from chatmemory.domain.threads import THREAD_TEXT_MAX
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS, MAX_USES, MIN_USES, USE_CHARS


@functools.cache
def extract_prompt(*, deep: bool = False) -> str:
    """The extraction rules (prompts/extract.txt) with the limits, the categories and the
    rule for `uses` and `importance` (prompts/memory_uses_rule.txt, verbatim) filled in.
    A deep read gets the same rules with its larger cap on items."""
    cap = DEEP_MAX_CANDIDATES if deep else MAX_CANDIDATES
    return _filled("extract.txt", cap).replace("{uses_rule}", _uses_rule()).strip()


@functools.cache
def write_uses_prompt() -> str:
    """The rules for writing the uses of memories that came without them
    (prompts/write_uses.txt), with the extractor's rule for `uses` verbatim
    (prompts/memory_uses_rule.txt) and the number of uses asked for filled in: the same
    rule whoever writes them, so typed and learned memories are indexed alike."""
    text = resources.files("chatmemory.prompts").joinpath("write_uses.txt").read_text("utf-8")
    return (
        text.replace("{uses_rule}", _uses_rule())
        .replace("{min_uses}", str(MIN_USES))
        .replace("{max_uses}", str(MAX_USES))
        .replace("{use_chars}", str(USE_CHARS))
        .strip()
    )


def _uses_rule() -> str:
    """The rule for `uses` and `importance` every memory writer follows."""
    prompts = resources.files("chatmemory.prompts")
    return prompts.joinpath("memory_uses_rule.txt").read_text("utf-8").strip()


@functools.cache
def extract_room_prompt() -> str:
    """The extraction rules from a persona's seat in a room (prompts/extract_room.txt),
    with the limits and the categories filled in. The same for every persona and room, so
    it stays cached: who the persona is, and who is there, are in the request."""
    return _filled("extract_room.txt", ROOM_MAX_CANDIDATES).strip()


def _filled(file_name: str, max_candidates: int) -> str:
    """An extraction prompt file with its limits (a thread's text among them) and its list
    of categories filled in."""
    text = resources.files("chatmemory.prompts").joinpath(file_name).read_text("utf-8")
    described = [
        f"  {name}{' (sensitive)' if name in SENSITIVE_CATEGORIES else ''}: {description}"
        for name, description in CATEGORY_DESCRIPTIONS.items()
    ]
    undescribed = [
        f"  {name} (sensitive)"
        for name in sorted(SENSITIVE_CATEGORIES - set(CATEGORY_DESCRIPTIONS))
    ]
    fallback = [f"  {rules.DEFAULT_CATEGORY}: anything that fits no other category"]
    return (
        text.replace("{max_candidates}", str(max_candidates))
        .replace("{max_chars}", str(rules.EXTRACTED_TEXT_MAX))
        .replace("{thread_max_chars}", str(THREAD_TEXT_MAX))
        .replace("{importance_floor}", str(IMPORTANCE_FLOOR))
        .replace("{sensitive_categories}", ", ".join(sorted(SENSITIVE_CATEGORIES)))
        .replace("{categories}", "\n".join(described + undescribed + fallback))
    )


@functools.cache
def route_prompt() -> str:
    """The router's rules (prompts/route.txt)."""
    return resources.files("chatmemory.prompts").joinpath("route.txt").read_text("utf-8").strip()


def fold_prompt(max_tokens: int) -> str:
    """The fold rules (prompts/fold_summary.txt) with the summary's token budget filled in."""
    text = resources.files("chatmemory.prompts").joinpath("fold_summary.txt").read_text("utf-8")
    return (
        text.replace("{max_tokens}", str(max_tokens))
        .replace("{max_words}", str(max_tokens * 3 // 4))
        .strip()
    )
