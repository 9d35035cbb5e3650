"""The system prompts of the fast model's calls, read from the prompt files
(chatmemory/prompts/*.txt) with their limits filled in."""

from __future__ import annotations

import functools
from importlib import resources

from chatmemory.domain import rules
from chatmemory.domain.extraction import IMPORTANCE_FLOOR, MAX_CANDIDATES, SENSITIVE_CATEGORIES
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS


@functools.cache
def extract_prompt() -> str:
    """The extraction rules (prompts/extract.txt) with the limits, the categories and the
    rule for `uses` and `importance` (prompts/memory_uses_rule.txt, verbatim) filled in."""
    prompts = resources.files("chatmemory.prompts")
    text = prompts.joinpath("extract.txt").read_text("utf-8")
    uses_rule = prompts.joinpath("memory_uses_rule.txt").read_text("utf-8").strip()
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
        text.replace("{max_candidates}", str(MAX_CANDIDATES))
        .replace("{max_chars}", str(rules.EXTRACTED_TEXT_MAX))
        .replace("{importance_floor}", str(IMPORTANCE_FLOOR))
        .replace("{sensitive_categories}", ", ".join(sorted(SENSITIVE_CATEGORIES)))
        .replace("{categories}", "\n".join(described + undescribed + fallback))
        .replace("{uses_rule}", uses_rule)
        .strip()
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
