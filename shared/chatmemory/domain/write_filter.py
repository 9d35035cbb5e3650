"""The one write filter every path applies before text is stored where a model will read it.

Stored text reaches every later prompt (memories, the profile, the note), so two things are
never stored, whichever door they come through — the API, the chat's save_memory tool, the
background pipeline or an import: secrets (see `secrets`), and text shaped like an
instruction to the model. The second is judged by shape, not topic: "prefers answers in
Spanish" is a preference to keep; "ignore previous instructions", a fake `SYSTEM:` line or
a tag that closes a prompt section is an attempt to steer every later turn.

Pure and cheap: it runs on every write.
"""

from __future__ import annotations

import re

from chatmemory.domain.errors import InstructionRefused, SecretRefused
from chatmemory.domain.secrets import (
    find_secret,
    holds_withheld,
    mask_secrets,
    normalise_for_detection,
)

_ROLE = r"(?:system|developer|assistant|human|user|admin(?:istrator)?|root|operator)"
_RULES = (
    r"(?:instructions?|prompts?|rules?|guidelines?|directives?|polic(?:y|ies)|restrictions?|"
    r"guardrails?|programming|constraints?)"
)
_SECTION_TAGS = (
    r"(?:system|memories|memory|profile|user_note|note|conversation_summary|summary|context|"
    r"instructions?|assistant|user|human|tool(?:_use|_result)?|function(?:_call)?|im_start|"
    r"im_end|endoftext|document|search_results?)"
)

#: a secret already masked in what was said: the mark is not a fact about anyone
MASKED_SECRET = "secret that was withheld"  # noqa: S105 - a kind of secret, not one

# (what the shape is, how it reads) — each one a way stored text could steer later turns.
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "it tries to override the assistant's rules",
        re.compile(
            rf"\b(?:ignore|disregard|forget|override|bypass|overrule|drop)\b(?:\W+\w+){{0,4}}?"
            rf"\W+(?:previous|prior|above|earlier|preceding|all|any|your|these|those|system|"
            rf"safety|original|initial)\b(?:\W+\w+){{0,2}}?\W+{_RULES}\b",
            re.IGNORECASE,
        ),
    ),
    (
        "it holds prompt markup",
        re.compile(
            rf"<\s*/?\s*{_SECTION_TAGS}\b[^<>]{{0,60}}>|<\|[^|<>]{{1,40}}\|>|\[/?\s*INST\s*\]|"
            rf"<<\s*/?\s*SYS\s*>>|^\s*#{{1,6}}\s*(?:system|instructions?|new rules)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    (
        "it speaks as the system",
        re.compile(
            rf"(?:^|[.!?;]\s+|\n)\s*\[?{_ROLE}\]?\s*(?:prompt|message|note|override|mode)?\s*:\s*\S",
            re.IGNORECASE,
        ),
    ),
    (
        "it claims authority over the assistant",
        re.compile(
            r"\b(?:i\s*am|i'm|im|this is|speaking as)\s+(?:the|your)\s+(?:system\s+)?"
            r"(?:admin(?:istrator)?|developer|creator|owner|operator|root|sysadmin|superuser|"
            r"system)\b(?!\s+(?:of|at|for|in|on|to)\b)|\b(?:admin|root|developer|god|debug)\s+"
            r"(?:mode|access|override|privileges?)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "it asks for other people's data or the hidden prompt",
        re.compile(
            r"\b(?:reveal|show|print|dump|leak|expose|output|list|repeat|share|give)\b"
            r"(?:\W+\w+){0,4}?\W+(?:(?:your|the)\s+(?:system\s+)?(?:prompt|instructions)|"
            r"system\s+prompt|other\s+users?|another\s+user|every(?:one|body)'?s?\s+"
            r"(?:data|memories|messages|details)|all\s+(?:users|accounts)|other\s+(?:people|"
            r"accounts?)'?s?\s+(?:data|memories|messages|details))",
            re.IGNORECASE,
        ),
    ),
    (
        "it tries to change what the assistant is",
        re.compile(
            r"\byou\s+(?:are|'re)\s+now\s+(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|"
            r"free|dan|evil|in\b)|\bdo\s+anything\s+now\b|\bjailbreak(?:ing)?\b|"
            r"\bpretend\s+(?:to\s+be|you\s+are)\s+(?:an?\s+)?(?:unrestricted|unfiltered|"
            r"different|another|evil)|\byou\s+(?:must|will|shall)\s+(?:now\s+)?(?:obey|comply|"
            r"reveal|disregard|ignore)\b|\bnew\s+(?:system\s+)?instructions?\s*:",
            re.IGNORECASE,
        ),
    ),
)


def instruction_shape(text: str) -> str | None:
    """Why `text` reads as an instruction to the model rather than something about a
    person, or None. Seen through the same normalisation as secrets (zero-width splits
    and fullwidth letters do not hide a shape)."""
    normalised = normalise_for_detection(text)
    for shape, pattern in _SHAPES:
        if pattern.search(normalised):
            return shape
    return None


def refusal(field: str, text: str) -> SecretRefused | InstructionRefused | None:
    """The refusal a write of `text` earns, or None if it may be stored."""
    secret = find_secret(text) or (MASKED_SECRET if holds_withheld(text) else None)
    if secret is not None:
        return SecretRefused(field, secret)
    shape = instruction_shape(text)
    if shape is not None:
        return InstructionRefused(field, shape)
    return None


def check(field: str, text: str) -> None:
    """Raise the refusal `text` earns (SecretRefused, InstructionRefused); every path that
    stores text a model will read calls this first, so nothing partial is written."""
    refused = refusal(field, text)
    if refused is not None:
        raise refused


def redact_secrets(text: str) -> str:
    """Derived text (a conversation summary) with every secret replaced by a marker: the
    gist of what was said is kept, a password or card number never is."""
    return mask_secrets(text)
