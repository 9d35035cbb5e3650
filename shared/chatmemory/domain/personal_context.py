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
from dataclasses import dataclass

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

#: Nouns a person puts after "my" or "our" for their own life: places, people, animals,
#: work, studies, health, money, plans, belongings and routines. "Which station is
#: closest to my place?" reads like trivia to the examples, but only its asker's place
#: answers it. Not here: nouns that usually name something pasted into the message
#: (code, a sentence, a list) and words that say nothing (thing, question, idea).
LIFE_NOUNS: frozenset[str] = frozenset(
    """
    home house apartment place room bedroom kitchen bathroom garage basement yard
    backyard garden balcony lawn neighborhood hometown commute landlord roommate lease
    rent mortgage deposit furniture couch bed mattress closet fridge oven dishwasher
    boiler thermostat roof shower renovation neighbor family wife husband partner spouse
    boyfriend girlfriend fiance fiancee ex mom mum mother dad father parent son daughter
    child children kid baby toddler teenager brother sister sibling grandma grandpa
    grandmother grandfather grandparent grandchild aunt uncle cousin niece nephew in-
    laws mother-in-law friend relationship marriage household nanny babysitter dog cat
    puppy kitten pet hamster rabbit parrot bird fish aquarium horse turtle chicken vet
    job boss manager coworker colleague team client customer employer company business
    startup shop salary paycheck raise promotion interview career shift internship
    workload deadline meeting office supervisor mentor pension retirement school teacher
    professor tutor classmate course degree major thesis dissertation exam homework
    semester finals grade gpa scholarship tuition university college dorm kindergarten
    daycare advisor graduation knee back shoulder neck hip ankle wrist elbow foot feet
    tooth teeth skin hair eye stomach gut heart cholesterol weight allergy asthma
    migraine pain injury sleep insomnia anxiety depression mood therapist therapy doctor
    dentist physio medication meds prescription insulin diabetes pregnancy period
    symptom condition diagnosis surgery recovery acne glasses braces fitness workout
    checkup health body intolerance diet breakfast lunch dinner meal pantry leftover
    sourdough bread grill coffee grocery budget savings finances bank account debt loan
    bill tax income investment spending subscription insurance wallet trip vacation
    holiday honeymoon flight itinerary passport visa luggage suitcase hotel booking
    layover league club game gym coach trainer practice training run marathon race bike
    bicycle guitar piano band choir hobby camera plant houseplant yoga hike sneaker shoe
    racket season lesson schedule calendar routine morning weekend week alarm bedtime
    plan appointment errand chore habit goal phone laptop computer tablet printer router
    wifi tv monitor headphone smartwatch watch car motorcycle license stroller setup
    birthday anniversary wedding party reunion funeral date clothes outfit jacket
    skincare haircut lawyer accountant contractor mechanic church
    """.split()  # noqa: SIM905 - a reviewed word list reads best as prose
)
# "my place", "our new place", "my weekly game": a life noun within three words of the
# possessive.
_POSSESSIVE = re.compile(r"\b(?:my|our)((?:\s+[\w'-]+){1,3})", re.IGNORECASE)
# "my bibliography file", "our warehouse's dialect": any word after the possessive.
_ANY_POSSESSIVE = re.compile(r"\b(?:my|our)\s+[\w'-]+", re.IGNORECASE)
#: what naming one's own life adds to the gate's score: enough to open the gate for any
#: message the examples do not call plainly impersonal
OWN_LIFE_BONUS = 0.25


def speaks_of_self(text: str) -> bool:
    return bool(_FIRST_PERSON.search(text))


def names_own_life(text: str) -> bool:
    """Whether the message refers to the asker's own place, people, work, body, plans or
    things ("my commute", "our anniversary", "my weekly game")."""
    for match in _POSSESSIVE.finditer(text):
        if any(_life_noun(word) for word in match.group(1).split()):
            return True
    return False


def _life_noun(word: str) -> bool:
    folded = word.casefold().strip("'\u2019")
    folded = folded.removesuffix("'s").removesuffix("\u2019s")
    if folded in LIFE_NOUNS:
        return True
    for suffix, ending in (("ies", "y"), ("es", ""), ("s", "")):
        if folded.endswith(suffix) and folded[: -len(suffix)] + ending in LIFE_NOUNS:
            return True
    return False


def names_own_things(text: str) -> bool:
    """Whether the message says "my" or "our" of anything ("my bibliography file", "our
    warehouse's dialect"): weaker than naming one's own life, since it also covers what
    is pasted into the message ("my regex"), so it weighs less."""
    return bool(_ANY_POSSESSIVE.search(text))


def nearest_mean(similarities: Sequence[float], k: int = _NEAREST) -> float:
    """Mean of the k highest similarities: robust to one odd example."""
    ranked = sorted(similarities, reverse=True)[:k]
    return sum(ranked) / len(ranked) if ranked else 0.0


@dataclass(frozen=True, slots=True)
class GateReading:
    """What the gate reads off one message: how much nearer the personal examples are than
    the impersonal ones, and how the message speaks of its asker."""

    resemblance: float
    own_life: bool
    own_things: bool
    self_reference: bool

    def score(
        self, *, self_reference_bonus: float, own_life_bonus: float, own_things_bonus: float
    ) -> float:
        """The gate's score: the resemblance lifted by each way of speaking of oneself
        (naming one's own life counts instead of merely saying "my")."""
        lift = self_reference_bonus if self.self_reference else 0.0
        if self.own_life:
            lift += own_life_bonus
        elif self.own_things:
            lift += own_things_bonus
        return self.resemblance + lift


def read_message(personal: Sequence[float], impersonal: Sequence[float], text: str) -> GateReading:
    """`personal` / `impersonal` are the message's similarities to each set of examples."""
    return GateReading(
        resemblance=nearest_mean(personal) - nearest_mean(impersonal),
        own_life=names_own_life(text),
        own_things=names_own_things(text),
        self_reference=speaks_of_self(text),
    )


def personal_context_score(
    personal: Sequence[float],
    impersonal: Sequence[float],
    text: str,
    *,
    self_reference_bonus: float,
    own_life_bonus: float = OWN_LIFE_BONUS,
    own_things_bonus: float = 0.0,
) -> float:
    """How much more this message resembles a personal request than an impersonal one,
    lifted by how it speaks of its asker.

    `personal` / `impersonal` are the message's similarities to each set of examples.
    """
    return read_message(personal, impersonal, text).score(
        self_reference_bonus=self_reference_bonus,
        own_life_bonus=own_life_bonus,
        own_things_bonus=own_things_bonus,
    )
