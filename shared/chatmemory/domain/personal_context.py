"""Does this message need personal context at all? Most don't, and then nothing is recalled.

Seed 002 lists "unwanted recall" and "memory pollution" as failure modes; a similarity
threshold alone trades them badly, because a message can be about a remembered topic
without needing the person ("what are the symptoms of a shellfish allergy?"). So each
turn is first placed between two kinds of request, each described by generic examples:
requests whose best answer depends on who is asking, and requests whose answer is the
same for everyone. The examples describe kinds of requests, never a particular person.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

PERSONAL_REQUESTS: tuple[str, ...] = (
    "what should I cook for dinner tonight",
    "recommend something for me to try",
    "help me plan my week",
    "what gift should I get for my partner",
    "how should I prepare for my exam",
    "is this a good idea for me",
    "what should I wear today",
    "any ideas for this weekend",
    "help me with my budget this month",
    "how do I handle my boss",
    "plan a trip for our family",
    "my dog keeps doing this, what should I do",
    "suggest a workout I can do",
    "write a message to my friend for me",
    "can I eat this",
    "what should I do about my situation",
    "which one should I buy",
    "how do I fix my laptop",
    "give me some advice for my kids",
    "what can we do together this evening",
    "remind me what I told you",
    "how am I doing on my goals",
    "help me decide between these options for me",
    "what's a good plan for tomorrow",
)

IMPERSONAL_REQUESTS: tuple[str, ...] = (
    "what is the capital of France",
    "explain how photosynthesis works",
    "write a python function that sorts a list",
    "translate this sentence into Spanish",
    "what does this word mean",
    "solve this equation for x",
    "tell me a joke",
    "hello, how are you",
    "thanks, that helps a lot",
    "summarize this paragraph",
    "who wrote Hamlet",
    "fix the syntax error in this code",
    "what is the difference between TCP and UDP",
    "convert 5 miles to kilometers",
    "give me a synonym for happy",
    "how many planets are in the solar system",
    "when did the Second World War end",
    "what causes earthquakes",
    "define the term inflation",
    "ok",
    "how does a refrigerator work",
    "proofread this sentence for grammar",
    "what year was the internet invented",
    "explain recursion with an example",
)

# Speaking about oneself is weak evidence on its own ("how do I reverse a list in
# Python?"), so it only nudges the score.
_FIRST_PERSON = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours|us)\b", re.IGNORECASE
)
_NEAREST = 3


def speaks_of_self(text: str) -> bool:
    return bool(_FIRST_PERSON.search(text))


def nearest_mean(similarities: Sequence[float], k: int = _NEAREST) -> float:
    """Mean of the k highest similarities: robust to one odd example."""
    ranked = sorted(similarities, reverse=True)[:k]
    return sum(ranked) / len(ranked) if ranked else 0.0


def personal_context_score(
    personal: Sequence[float],
    impersonal: Sequence[float],
    text: str,
    *,
    self_reference_bonus: float,
) -> float:
    """How much more this message resembles a personal request than an impersonal one.

    `personal` / `impersonal` are the message's similarities to each set of examples.
    """
    score = nearest_mean(personal) - nearest_mean(impersonal)
    return score + (self_reference_bonus if speaks_of_self(text) else 0.0)
