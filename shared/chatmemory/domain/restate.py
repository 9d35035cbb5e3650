"""First person in, standalone third-person sentence out: "I'm vegetarian" → "Is vegetarian."

Memories are one standalone sentence about the user (seed 000), readable without the chat.
This covers the common shapes of what people say about themselves; anything else is kept
in their words with the pronouns turned.
"""

from __future__ import annotations

import re

_LEADING = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|and|also|oh|hey|btw|by the way|fyi|just so you know|note)[,:]?\s+)+",
    re.IGNORECASE,
)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "was": "was", "can": "can"}
_PRONOUNS = (
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b", re.I), "them"),
    (re.compile(r"\bI'm\b", re.I), "they're"),
    (re.compile(r"\bI've\b", re.I), "they've"),
    (re.compile(r"\bI'd\b", re.I), "they'd"),
    (re.compile(r"\bI'll\b", re.I), "they'll"),
    (re.compile(r"\bI\b"), "they"),
    (re.compile(r"\bwe\b", re.I), "they"),
    (re.compile(r"\bour\b", re.I), "their"),
    (re.compile(r"\bus\b", re.I), "them"),
)
_SUBJECT_VERB = re.compile(
    r"^(?:i|we)\s*(?P<verb>'m|'ve got|'ve|am|was|were|have got|have|had|do not|don't|"
    r"can't|cannot|can|never|always|really|usually|also|just|still|now)?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)


# Simple pasts that do not end in -ed: the same for everyone ("I broke up" → "Broke up").
# Verbs whose past is their present ("read", "put", "hit") are left to read as present.
_PAST = frozenset(
    """
    went got bought sold took left began made met lost found gave became came ran quit
    grew knew saw spent kept felt broke split did said told wrote drove flew won paid sent
    built chose forgot heard held hurt led meant rode rang rose sang sat slept
    spoke stood swam taught thought threw understood wore woke fell fought caught brought
    struck stuck sank shook stole swore tore wept withdrew
    """.split()  # noqa: SIM905 - a word list reads better as prose
)


def _third_person_verb(verb: str) -> str:
    lowered = verb.lower()
    if lowered.endswith("ed") or lowered in _PAST:
        return lowered  # the past tense is the same for everyone
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered]
    if re.search(r"(s|sh|ch|x|z|o)$", lowered):
        return lowered + "es"
    if re.search(r"[^aeiou]y$", lowered):
        return lowered[:-1] + "ies"
    return lowered + "s"


def _turn_pronouns(text: str) -> str:
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(replacement, text)
    return text


_AUXILIARY = {
    "'m": "is",
    "am": "is",
    "was": "was",
    "were": "was",
    "'ve got": "has",
    "have got": "has",
    "have": "has",
    "'ve": "has",
    "had": "had",
    "don't": "doesn't",
    "do not": "doesn't",
    "can't": "can't",
    "cannot": "can't",
    "can": "can",
}
_ADVERBS = frozenset({"never", "always", "really", "usually", "also", "just", "still", "now"})


def _predicate(verb: str, rest: str) -> str:
    """The third-person predicate for "I <verb> <rest>"."""
    if verb in _AUXILIARY:
        return f"{_AUXILIARY[verb]} {rest}"
    first, _, after = rest.partition(" ")
    if verb in _ADVERBS:
        return f"{verb} {_third_person_verb(first)} {after}"
    return f"{_third_person_verb(first)} {after}"


def third_person(statement: str) -> str:
    """A standalone sentence about the user, without the subject ("Lives in Pune.")."""
    text = _LEADING.sub("", statement.strip()).strip().rstrip(".!?").strip()
    if not text:
        return ""
    match = _SUBJECT_VERB.match(text)
    if match is None or not re.match(r"^(i|we)\b|^i'|^we'", text, re.IGNORECASE):
        sentence = text
    else:
        verb = (match.group("verb") or "").lower().strip()
        sentence = _predicate(verb, match.group("rest").strip())
    sentence = re.sub(r"\s+", " ", _turn_pronouns(sentence)).strip()
    return sentence[:1].upper() + sentence[1:] + "."
