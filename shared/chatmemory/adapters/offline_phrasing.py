"""What the offline stand-in's rules share about how a person says things and how it is
said back: the words for diets and jobs, a hedge, where what was said stops, the key of a
relation, and the statement in the third person.

The standing facts (offline_extractor), the facts with an end date (offline_end_dates) and
the endings (offline_endings) read and write with these same pieces, so an ending names
what it ends in the words, and with the key, of the fact it ends ("Is vegetarian." and
"Is no longer vegetarian.", both keyed `diet`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from chatmemory.domain.restate import third_person

# The diets and the jobs a standing fact names, and an ending names again.
DIETS = (
    "vegetarian|vegan|pescatarian|lactose intolerant|gluten[- ]free|teetotal|keto|celiac|coeliac"
)
JOBS = (
    "(?:senior |junior |lead |staff |principal )?(?:software engineer|engineer|developer|"
    "teacher|doctor|nurse|designer|student|product manager|manager|analyst|data scientist|"
    "lawyer|accountant|researcher|writer|architect|consultant|pharmacist|chef)"
)

# Where what was said about a state or an act stops: punctuation, a conjunction.
CUT: Final = re.compile(
    r"[,;:!?.]|\s+(?i:and|but|so|because|since|after|when|while|though|although|then|until|"
    r"till|before|if|for\s+(?:good|now|a\s+while|ever|years|months|weeks|days)|forever|"
    r"altogether|completely|entirely|any\s?more|any\s+longer)\b"
)
# A statement said with a doubt or a wish is not one the stand-in learns.
HEDGED: Final = re.compile(
    r"(?i)\b(?:if|whether|unless|should|would|could|might|maybe|perhaps|probably|hopefully|"
    r"not\s+sure|unsure|wonder|wondering|hope|wish)\b"
)
_ACRONYM: Final = re.compile(r"\b[A-Z]{2,}\b")


def restated(statement: str) -> str:
    """`third_person`, with the names written in capitals kept as said: "the US" is a
    country, never "us"."""
    kept = _ACRONYM.findall(statement)
    text = third_person(_ACRONYM.sub("\x00", statement))
    for name in kept:
        text = text.replace("\x00", name, 1)
    return text


def relation_key(relation: str) -> str:
    """ "family_fiancee": a key is plain ASCII, whatever the relation's accents."""
    plain = unicodedata.normalize("NFKD", relation).encode("ascii", "ignore").decode()
    return "family_" + re.sub(r"\W+", "_", plain.lower())
