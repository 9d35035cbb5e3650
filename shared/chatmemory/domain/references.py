"""How a person speaks of their own people, pets and home: "my husband" in a question,
"Chris" in the memory it needs.

A memory records a name once ("Is married to Chris.") and then uses it ("Chris collects
jazz vinyl records."); a question uses the relation ("what should I get my husband?"), or
the name where the memory says the relation. A bi-encoder cannot know that Chris is the
husband: the link lives only in this person's own memories. So the memories that name
someone by their relation are read into a small book of references, and a message that
speaks of one of them by relation, by name, or of "here" is read with the other half
added in brackets before it is embedded: "what should I get my husband? (Chris)".

Pure: the texts come in, the book and the reading go out. Only a memory's own words
count, and only where they plainly name the person's relation ("her older sister, Hana",
"a cat named Biscuit", "lives in Denver"); a relation of someone else ("Sam's fiancée,
Alexis", "Theo's best friend is Eli") is not the person's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: the word a message or memory may use → the relation it names. Several words name
#: one relation ("mum", "mom", "mother"); a relation never guesses a gender it lacks.
RELATION_WORDS: Mapping[str, str] = {
    "husband": "spouse",
    "wife": "spouse",
    "spouse": "spouse",
    "hubby": "spouse",
    "partner": "partner",
    "boyfriend": "partner",
    "girlfriend": "partner",
    "fiancé": "partner",
    "fiancée": "partner",
    "fiance": "partner",
    "fiancee": "partner",
    "son": "son",
    "boy": "son",
    "daughter": "daughter",
    "girl": "daughter",
    "mom": "mother",
    "mum": "mother",
    "mother": "mother",
    "mama": "mother",
    "dad": "father",
    "father": "father",
    "papa": "father",
    "sister": "sister",
    "brother": "brother",
    "grandmother": "grandmother",
    "grandma": "grandmother",
    "granny": "grandmother",
    "grandfather": "grandfather",
    "grandpa": "grandfather",
    "grandson": "grandson",
    "granddaughter": "granddaughter",
    "friend": "friend",
    "pal": "friend",
    "buddy": "friend",
    "bestie": "friend",
    "manager": "manager",
    "boss": "manager",
    "product manager": "product manager",
    "pm": "product manager",
    "colleague": "colleague",
    "coworker": "colleague",
    "co-worker": "colleague",
    "neighbor": "neighbor",
    "neighbour": "neighbor",
    "tutor": "tutor",
    "babysitter": "babysitter",
    "nanny": "babysitter",
    "roommate": "roommate",
    "flatmate": "roommate",
    "cat": "cat",
    "kitty": "cat",
    "kitten": "cat",
    "dog": "dog",
    "pup": "dog",
    "puppy": "dog",
}
#: how a message speaks of the relation in its own words ("my partner" for Cian)
_SPOKEN = {"spouse": "partner"}
#: words for the person's children, whichever they are
_CHILDREN = frozenset({"kid", "kids", "child", "children", "boys", "girls"})
#: words for where the person lives
_HERE = re.compile(
    r"\b(?:here|local|locally|nearby|near me|around town|in town|where i live"
    r"|my (?:city|town|area|neighbou?rhood))\b",
    re.IGNORECASE,
)
_ALTERNATION = "|".join(re.escape(w) for w in sorted(RELATION_WORDS, key=len, reverse=True))
_NAME = r"([A-Z][a-zà-ÿ]+(?:-[A-Z][a-zà-ÿ]+)?)"
#: "her older sister, Hana", "his wife Keiko", "a cat named Biscuit"
_RELATION_THEN_NAME = re.compile(
    rf"(?<![\w'])({_ALTERNATION}),?\s(?:(?:is\s)?(?:named|called)\s)?{_NAME}"
)
#: "is married to Chris"
_MARRIED_TO = re.compile(rf"\bmarried to {_NAME}")
#: "Hana is her sister", "Kyle, her manager"
_NAME_THEN_RELATION = re.compile(
    rf"{_NAME}(?:,| is)\s(?:her|his|my|their)\s(?:[a-z-]+\s)?({_ALTERNATION})\b"
)
#: "Lives in Denver, Colorado", "Moved from Delhi to Bengaluru in 2024"
_HOME = re.compile(
    r"^(?:Lives in|Is based in|Moved to|Moved from [^.;]*? to)\s([^.;]*)", re.IGNORECASE
)
#: capitalised words that are not names (a month may be one: "a daughter, June")
_NOT_NAMES = frozenset(
    (
        "The", "A", "An", "Is", "Has", "Her", "His", "Their", "My", "In", "On", "At", "She",
        "He", "They", "And", "But", "Or", "So", "It", "Its", "This", "That", "Who", "When",
        "Where", "Mr", "Mrs", "Ms", "Dr", "What", "Which", "How", "Why", "Can", "Could",
        "Should", "Would", "Will", "Do", "Does", "Did", "Are", "Any", "Some", "Give", "Help",
        "Write", "Make", "Tell", "Find", "Plan", "Suggest", "I",
    )
)  # fmt: skip
#: capitalised words that say when, not who or where
_CALENDAR = frozenset(
    (
        "January", "February", "March", "April", "May", "June", "July", "August", "September",
        "October", "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday",
        "Friday", "Saturday", "Sunday", "Christmas", "Easter",
    )
)  # fmt: skip
_MOST_HOME_WORDS = 4
_WORD = re.compile(r"(?<![\w'])[A-Za-zÀ-ÿ]+(?:[-'][A-Za-zÀ-ÿ]+)*")
#: a relation word is the person's own when one of these comes just before it ("my
#: husband", "the kids", "our dog", "my oldest pal"); "why do cats purr?" is about cats
_OWNED_BY = frozenset({"my", "our", "the"})
_OWNER_REACH = 2


@dataclass(frozen=True, slots=True)
class References:
    """One person's book: relation → the names their memories give it, and home."""

    names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    home: str | None = None

    def __bool__(self) -> bool:
        return bool(self.names) or self.home is not None


def named_in(text: str) -> tuple[tuple[str, str], ...]:
    """(relation, name) pairs a memory's words plainly give for the person's own people."""
    text = _plain(text)
    found: list[tuple[str, str]] = []
    for match in _RELATION_THEN_NAME.finditer(text):
        word, name = match.group(1), match.group(2)
        if word[0].isupper() or _someone_elses(text, match.start(1)):
            continue  # "Brother laser printer"; "Sam's fiancée, Alexis"
        found.append((RELATION_WORDS[word.lower()], name))
    found += [("spouse", m.group(1)) for m in _MARRIED_TO.finditer(text)]
    for match in _NAME_THEN_RELATION.finditer(text):
        found.append((RELATION_WORDS[match.group(2).lower()], match.group(1)))
    return tuple((relation, name) for relation, name in found if name not in _NOT_NAMES)


def home_in(text: str) -> str | None:
    """Where the person lives, when a memory says so in its first words."""
    match = _HOME.match(text.strip())
    if match is None:
        return None
    words = [
        w
        for w in re.findall(r"\b[A-ZÀ-Þ][\wÀ-ÿ-]+", match.group(1))
        if w not in _NOT_NAMES and w not in _CALENDAR and not w.isupper()
    ]
    return " ".join(dict.fromkeys(words[:_MOST_HOME_WORDS])) or None


@dataclass(frozen=True, slots=True)
class Noted:
    """What one memory adds to the book: the people it names by relation, the home it
    gives. Kept per memory so a deleted memory takes its names with it."""

    names: tuple[tuple[str, str], ...] = ()
    home: str | None = None


def noted_in(text: str) -> Noted:
    """What a memory's words add to its person's book."""
    return Noted(named_in(text), home_in(text))


def book(noted: Iterable[Noted]) -> References:
    """The book of a person's memories, newest first: the first home given wins."""
    names: dict[str, list[str]] = {}
    home: str | None = None
    for entry in noted:
        for relation, name in entry.names:
            if name not in names.setdefault(relation, []):
                names[relation].append(name)
        if home is None:
            home = entry.home
    # Names in a fixed order: the same memories always read the same message the same way.
    return References({r: tuple(sorted(n)) for r, n in sorted(names.items())}, home)


def read_with(message: str, references: References) -> str:
    """The message with what the person's book adds in brackets, or as it was."""
    if not references:
        return message
    plain = _plain(message)
    said = plain.lower()
    added: list[str] = []
    words = _WORD.findall(plain)
    lowered = [w.lower().removesuffix("'s") for w in words]
    for at, (word, following) in enumerate(zip(lowered, [*lowered[1:], ""], strict=True)):
        relation = RELATION_WORDS.get(f"{word} {following}") or RELATION_WORDS.get(word)
        if relation is None and word.endswith("s"):
            relation = RELATION_WORDS.get(word[:-1])
        if relation is None and word not in _CHILDREN:
            continue
        if not (_OWNED_BY & set(lowered[max(0, at - _OWNER_REACH) : at]) or _as_a_name(words[at])):
            continue
        if relation is not None:
            added += references.names.get(relation, ())
        else:
            added += references.names.get("son", ()) + references.names.get("daughter", ())
    by_name = {n: r for r, names in references.names.items() for n in names}
    for word in words:
        if word in by_name:
            added.append(f"my {_SPOKEN.get(by_name[word], by_name[word])}")
    if references.home and _HERE.search(plain):
        added.append(references.home)
    fresh = [a for a in dict.fromkeys(added) if a.lower() not in said]
    return f"{message} ({', '.join(fresh)})" if fresh else message


def may_refer(message: str) -> bool:
    """Whether the message could name anyone or anywhere in a book: the cheap test before
    the book is read at all (a relation word, "here", or a capitalised word that may be a
    name)."""
    plain = _plain(message)
    if _HERE.search(plain):
        return True
    for word in _WORD.findall(plain):
        low = word.lower().removesuffix("'s")
        if low in RELATION_WORDS or low in _CHILDREN or low[:-1] in RELATION_WORDS:
            return True
        if word[0].isupper() and word not in _NOT_NAMES and word not in _CALENDAR:
            return True
    return False


def _as_a_name(word: str) -> bool:
    """A kin word used as a name: "Grandma wants to help", "Mom says"."""
    return word[0].isupper() and word.lower() in RELATION_WORDS and not word.endswith("s")


def _someone_elses(text: str, at: int) -> bool:
    """Whether the relation at `at` belongs to someone named just before it ("Sam's")."""
    before = text[:at].split()
    for word in reversed(before[-3:]):
        if word.endswith("'s"):
            return True
        if word.lower() in {"her", "his", "my", "their", "our", "a", "an", "the"}:
            return False
    return False


def _plain(text: str) -> str:
    """Typographic apostrophes as plain ones, so "son\u2019s" reads as "son's"."""
    return text.replace("\u2019", "'")
