"""Identifiers: deterministic where a write must be idempotent, random where it must be unique."""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import unicodedata
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

# Fixed namespace for chatmemory's uuid5 identities; changing it would re-key every belief.
CHATMEMORY_NAMESPACE = uuid.UUID("5b0c3f0e-8d1a-4c61-9a5e-6f1f3c2d7a40")

_SEPARATOR = "\x1f"  # unit separator: cannot appear in validated ids or keys
_MESSAGE_ID = re.compile(r"^msg_([0-9a-f]{32})_(\d{1,10})$")
_CONVERSATION_ID = re.compile(r"^conv_[0-9a-f]{32}$")


# Invisible characters that change nothing a reader sees (the zero-width joiner stays: it
# binds emoji such as 👩‍🔬 into one picture, so it changes what is said).
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u180e\u200b\u200c\u200e\u200f\u2060\ufeff"))
# Typographic variants people type interchangeably: curly quotes, dashes and the minus sign.
_TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u02bc": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
    }
)
_SENTENCE_END = " .!\u3002\uff01\u2026"


def normalise_for_identity(text: str) -> str:
    """Text folded so only differences that cannot change its meaning vanish.

    Case, spacing, width, curly quotes and how a sentence ends ("Is vegan." = "is vegan")
    name the same belief; every other character counts, because symbols carry meaning:
    "A+" is not "A-", "C++" is not "C#", 🍕 is not 🍣.
    """
    folded = unicodedata.normalize("NFKC", text).translate(_INVISIBLE).casefold()
    folded = " ".join(folded.translate(_TYPOGRAPHY).split())
    return folded.rstrip(_SENTENCE_END) or folded


#: the key of a deployment that names none (tests, a library user): public, so ids made
#: with it can be guessed from a memory's words — every server names its own
UNKEYED = b"chatmemory: no deployment key was given"
#: the shortest deployment key taken (256 bits)
IDENTITY_KEY_MIN_BYTES = 32


@dataclass(frozen=True, slots=True)
class IdentityKey:
    """This deployment's secret for memory ids (issue: an id derived from a memory's words
    under a public namespace gave the words away to anyone who saw the id — a change
    event, an access log — and a dictionary of guesses). Ids stay deterministic within a
    deployment (the same belief lands on the same id, seed 003); they differ between
    deployments, and an export carries its ids, so an import lands them as they were."""

    secret: bytes = field(default=UNKEYED, repr=False)

    def __post_init__(self) -> None:
        if self.secret != UNKEYED and len(self.secret) < IDENTITY_KEY_MIN_BYTES:
            raise ValueError(f"an identity key has at least {IDENTITY_KEY_MIN_BYTES} bytes")

    def memory_id(self, user_id: str, persona: str, key: str, generation: int = 0) -> str:
        """The id a belief always lands on: a keyed hash of user + persona + key (seed
        003's identity). `generation` moves the identity past ids that were deleted or
        became history, so an id is never reused for a different row."""
        parts = [user_id, persona, key]
        if generation:
            parts.append(str(generation))
        digest = hmac.new(self.secret, _SEPARATOR.join(parts).encode("utf-8"), hashlib.sha256)
        return "mem_" + digest.hexdigest()[:32]


def memory_id_for(user_id: str, persona: str, key: str, generation: int = 0) -> str:
    """`IdentityKey().memory_id`: the id under no deployment's key (tests, tools)."""
    return IdentityKey().memory_id(user_id, persona, key, generation)


def belief_identity(category: str, text: str, observed_on: str | None = None) -> str:
    """What makes two writes the same belief (seed 003): its category and its label, the
    text folded by `normalise_for_identity`. An observation (something that happened)
    folds in the day it was observed, so the same sentence on two days stays two
    observations. A key is not part of it: a key names a slot whose value changes
    ("home_city"), and a new value is a correction with an identity of its own."""
    parts = ["belief", category, normalise_for_identity(text)]
    if observed_on is not None:
        parts.append(observed_on)
    return _SEPARATOR.join(parts)


def new_memory_id() -> str:
    return "mem_" + uuid.uuid4().hex


def new_conversation_id() -> str:
    return "conv_" + uuid.uuid4().hex


def is_conversation_id(value: str) -> bool:
    return bool(_CONVERSATION_ID.match(value))


def message_id_for(conversation_id: str, seq: int) -> str:
    """A message id that lets the purge find the conversation and position of a source."""
    return f"msg_{conversation_id.removeprefix('conv_')}_{seq}"


def parse_message_id(message_id: str) -> tuple[str, int] | None:
    """(conversation_id, seq) for our own message ids, None for anything else."""
    match = _MESSAGE_ID.match(message_id)
    if not match:
        return None
    return "conv_" + match.group(1), int(match.group(2))


class _CreationOrder:
    """Nanosecond stamps that never repeat nor go back within the process."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def stamp(self, nanoseconds: int) -> int:
        with self._lock:
            self._last = max(nanoseconds, self._last + 1)
            return self._last


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EVENTS = _CreationOrder()


def new_event_id(at: datetime) -> str:
    """An id for an event at `at` (aware) that sorts in creation order, nanosecond stamp first.

    Events made for the same instant — a correction's supersede and create share the
    caller's `now` — take the next nanosecond each, so they keep the order they were made in.
    """
    since_epoch = at - _EPOCH
    nanoseconds = (since_epoch.days * 86_400 + since_epoch.seconds) * 10**9
    nanoseconds += since_epoch.microseconds * 1000
    return f"evt_{_EVENTS.stamp(nanoseconds):016x}{uuid.uuid4().hex[:16]}"


def new_notice_id() -> str:
    return "ntc_" + uuid.uuid4().hex
