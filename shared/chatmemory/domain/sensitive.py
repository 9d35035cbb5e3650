"""Sensitive memories: used only when directly relevant (seed 002, "Unwanted recall"). Pure.

Health, religion, sexuality, politics and the like are stored only when the person asked
(the write filter, `extraction.code_rule`), and even then they never ride in a block that
is in every prompt — the profile, a persona's always-in block, the threads the persona
follows and the return greeting's cue. They reach a prompt only through per-turn recall,
when the message itself calls for them: "Has diabetes." helps with a dinner question and
has no business beside "What is the capital of France?".

A memory is sensitive by its category (a free-text category is read as the recommended
one it stands for: "medical" is health) or, whatever its label, by words no ordinary fact
uses (a diagnosis, a faith, an orientation, a party, a record, a debt). Erring towards
sensitive costs little: the memory is still recalled when a message needs it.
"""

from __future__ import annotations

import re
from typing import Final

from chatmemory.domain.memory import Memory
from chatmemory.domain.uses import recommended_category

#: stored only when the person asked, and used only when directly relevant
SENSITIVE_CATEGORIES: Final = frozenset(
    {"health", "religion", "politics", "sexuality", "ethnicity", "criminal", "biometrics", "union"}
)

# Names a free-text category may use for a sensitive one (recommended_category knows the
# everyday topics; these are the sensitive ones it does not).
_CATEGORY_NAMES: Final = {
    "medical": "health",
    "medicine": "health",
    "mental_health": "health",
    "illness": "health",
    "condition": "health",
    "conditions": "health",
    "diagnosis": "health",
    "faith": "religion",
    "beliefs": "religion",
    "spirituality": "religion",
    "political": "politics",
    "political_views": "politics",
    "orientation": "sexuality",
    "sexual_orientation": "sexuality",
    "gender_identity": "sexuality",
    "lgbtq": "sexuality",
    "race": "ethnicity",
    "ethnic_origin": "ethnicity",
    "crime": "criminal",
    "criminal_record": "criminal",
    "legal_record": "criminal",
    "trade_union": "union",
}

# Words that make a sentence sensitive whatever category it was filed under. Each list is
# of words an ordinary fact does not use; pregnancy is family (seed 004's threads), an
# allergy is diet — both stay in the always-on blocks.
_WORDS: Final = {
    "health": (
        r"diabet\w*|asthma\w*|cancer|tumou?r|chemo\w*|leukemia|hiv|aids|hepatitis|"
        r"epilep\w*|seizures?|depress(?:ion|ed)|anxiety|panic attacks?|bipolar|"
        r"schizophreni\w*|ptsd|ocd|adhd|autism|autistic|dyslexi\w*|eating disorder|"
        r"anorexi\w*|bulimi\w*|disorder|diagnosed|diagnosis|illness|chronic pain|"
        r"chronic illness|disease|syndrome|sclerosis|arthritis|migraines?|insulin|"
        r"medication|meds|antidepressants?|in therapy|goes to therapy|"
        r"sees an? (?:therapist|psychiatrist|psychologist|counsell?or)|rehab|addict\w*|"
        r"alcoholi\w*|sobriety|surgery|miscarriage|ivf|infertil\w*|disabilit\w*|"
        r"dementia|alzheimer\w*|heart attack|blood pressure|hypertension|cholesterol|"
        r"thyroid|stds?|stis?"
    ),
    "religion": (
        r"religio\w*|muslim|islam\w*|christian\w*|catholic\w*|protestant\w*|evangelical|"
        r"mormon|jewish|judaism|hindu\w*|buddhis\w*|sikh\w*|atheis\w*|agnostic|"
        r"church|mosque|synagogue|gurdwara|prays|praying|bible|quran|koran|torah|"
        r"spiritual\w*"
    ),
    "sexuality": (
        r"gay|lesbian|bisexual|queer|homosexual|heterosexual|asexual|pansexual|"
        r"transgender|non-?binary|genderqueer|sexual orientation|sexuality|coming out|"
        r"came out|lgbt\w*"
    ),
    "politics": (
        r"politic\w*|democrats?|republicans?|(?:labou?r|conservative|liberal|green|"
        r"communist|socialist) party|liberal democrats?|tor(?:y|ies)|socialis[mt]s?|"
        r"communis[mt]s?|libertarian\w*|votes? for|voted for|voters?|left-wing|"
        r"right-wing|activist"
    ),
    "criminal": (
        r"arrested|convicted|conviction|in prison|in jail|went to prison|went to jail|"
        r"served time|criminal record|felony|felon|on probation|on parole|charged with|"
        r"sentenced|court case|lawsuit"
    ),
    "ethnicity": (
        r"ethnicity|ethnic origin|immigration status|undocumented|asylum|refugee status|"
        r"is a refugee|as a refugee"
    ),
    "finances": (
        r"debts?|in debt|bankrupt\w*|insolven\w*|salary|income|earns|credit score|"
        r"overdraft|payday loans?|net worth|owes"
    ),
}
_SENSITIVE_WORDS: Final = re.compile(
    r"\b(?:" + "|".join(f"(?:{words})" for words in _WORDS.values()) + r")\b", re.IGNORECASE
)


def sensitive_category(category: str) -> str | None:
    """The sensitive category a free-text category stands for, or None."""
    folded = category.strip().casefold().replace("-", "_").replace(" ", "_")
    named = _CATEGORY_NAMES.get(folded) or recommended_category(folded) or folded
    return named if named in SENSITIVE_CATEGORIES else None


def reads_sensitive(text: str) -> bool:
    """Whether a sentence speaks of a sensitive matter, whatever it was filed under."""
    return _SENSITIVE_WORDS.search(text) is not None


def is_sensitive(memory: Memory) -> bool:
    """Used only when directly relevant: never in an always-on block, only recalled."""
    return sensitive_category(memory.category) is not None or reads_sensitive(memory.text)
