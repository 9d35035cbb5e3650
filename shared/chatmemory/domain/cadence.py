"""When the write pipeline reads a conversation: the idle delay, and the request to read it now.

Writes stay off the critical path (seed 003): a conversation is read once it has gone quiet,
and how long "quiet" is depends on how much is already known. A cold profile (a user the
persona knows little about) is read after a short pause, so a new user's first facts land
while they are still around to see them used; a warm one waits longer, so a known user's
turns are batched into fewer, larger reads (fewer model calls per day, more context per
call). A message asking to remember the whole conversation skips the wait and asks for a
deep read: the same pipeline on the stronger model with a larger budget.

Pure and cheap: the count comes from the caller, the request is judged by its words.
"""

from __future__ import annotations

import re
from datetime import timedelta

from chatmemory.domain.extraction import looks_pasted

#: fewer active memories than this and the profile is cold: its next facts matter most
COLD_MEMORIES = 20
#: a cold profile is read after this much quiet, before a new user has likely left
COLD_DELAY = timedelta(seconds=120)
#: a warm profile waits this long, so a known user's turns are read together
WARM_DELAY = timedelta(seconds=600)


def is_cold(active_memories: int) -> bool:
    """Whether a profile of this many active memories is still cold."""
    return active_memories < COLD_MEMORIES


def idle_delay(
    active_memories: int, *, cold: timedelta = COLD_DELAY, warm: timedelta = WARM_DELAY
) -> timedelta:
    """How long a conversation must be quiet before it is read, given what is known.

    The cold delay never exceeds the warm one: a deployment (or a test) that pins the warm
    delay low gets no longer wait for a new user than for a known one.
    """
    return min(cold, warm) if is_cold(active_memories) else warm


# ---- "remember this conversation" ---------------------------------------------------------

# What names the conversation as a whole — not one fact ("remember that I'm vegetarian" is
# the chat's save_memory), not a chore ("remember to buy milk"), not "this" alone.
_THE_CONVERSATION = (
    r"(?:(?:this|our|the|today'?s)\s+(?:whole\s+|entire\s+|full\s+)?"
    r"(?:conversation|convo|chat|discussion|talk|session|exchange)"
    r"|all\s+(?:of\s+)?(?:this|that|it|these)|any\s+of\s+(?:this|it)|this\s+all"
    r"|everything(?:\s+(?:we|i|you)\b[^.?!\n]*|\s+(?:here|above|today))?"
    r"|(?:what|all)\s+(?:we|i)(?:'ve|\s+have)?\s+(?:just\s+)?"
    r"(?:talked\s+about|discussed|said|covered|went\s+(?:over|through)))\b"
)
# The verbs of a request to keep something; "keep" only as "keep … in mind/memory" ("keep
# this chat short" asks for nothing), and "forget" only denied ("don't forget …").
_ASK = re.compile(
    rf"\b(?P<verb>(?:remember|memori[sz]e|save|store|take\s+note\s+of)\s+{_THE_CONVERSATION}"
    rf"|keep\s+{_THE_CONVERSATION}\s+in\s+(?:your\s+)?(?:mind|memory)"
    rf"|(?P<dont_forget>(?:don'?t|do\s+not|never)\s+forget)\s+{_THE_CONVERSATION})",
    re.IGNORECASE,
)
# What may stand before the verb in its clause for it to be a request to the assistant.
_REQUEST_OPENER = re.compile(
    r"(?:please|pls|plz|kindly|just|now|(?:can|could|will|would)\s+you(?:\s+please)?"
    r"|i\s+(?:want|need|would\s+like)\s+you\s+to|i'?d\s+like\s+you\s+to"
    r"|make\s+sure\s+(?:to|you)|be\s+sure\s+to|try\s+to|go\s+ahead\s+and|you\s+(?:should|can))"
    r"(?:\s+please)?",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|hey|oh|so|and|also|alright|great|thanks|thank\s+you|well|now|hi)\b[\s,!]*)+",
    re.IGNORECASE,
)
_DENIED = re.compile(r"\b(?:don'?t|do\s+not|never|not|no\s+need\s+to|needn'?t|won'?t)\b", re.I)
# Double quotes only: an apostrophe ("don't", "it's") would pair up with the next one.
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_CLAUSE_BREAK = re.compile("[,;:\u2014\u2013]|\\s-\\s")  # a comma, a colon, a dash


def asks_to_remember_conversation(message: str) -> bool:
    """Whether the user asks for this whole conversation to be remembered ("remember this
    conversation", "please remember all of this", "save this chat", "don't forget what we
    talked about").

    Not a question about the past ("do you remember …?", "remember our chat about Paris?"),
    a chore ("remember to …"), one fact ("remember that …"), a refusal ("please don't save
    this chat"), the user's own memory ("I'll never forget this conversation"), or words
    quoted or pasted from elsewhere.
    """
    if looks_pasted(message):
        return False
    spoken = _QUOTED.sub(" ", message)
    return any(_asks_in(sentence.group()) for sentence in _SENTENCE.finditer(spoken))


def _asks_in(sentence: str) -> bool:
    question = sentence.rstrip().endswith("?")
    for match in _ASK.finditer(sentence):
        clause = _CLAUSE_BREAK.split(sentence[: match.start()])[-1]
        before = _FILLER.sub("", clause.strip()).strip()
        if match.group("dont_forget") is None and _DENIED.search(before):
            continue  # "please don't remember this conversation"
        if not before:
            if question:
                continue  # "Remember our chat about Paris?" asks about the past
            return True
        if _REQUEST_OPENER.fullmatch(before):
            return True
    return False
