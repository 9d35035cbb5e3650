"""What a memory is useful for: the situations in which an assistant should recall it.

A memory's words rarely appear in the message that needs it ("Is vegetarian." is needed
by "any ideas for dinner?"). So besides what a memory says, we index what it is for.
The extractor writes specific uses per memory; memories that arrive without them (typed
by the user, saved by the offline model) get the uses of their category from this table.
Each entry describes requests a person makes, never facts about a particular person.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

CATEGORY_USES: Mapping[str, tuple[str, ...]] = {
    "diet": (
        "what should I eat or cook",
        "meal ideas and recipes",
        "choosing a restaurant or ordering food",
        "grocery shopping and snacks",
        "is this food or drink ok for me",
    ),
    "location": (
        "weather and what to wear today",
        "things to do nearby this weekend",
        "local events, shops and services",
        "commute, traffic and getting around town",
        "time zone and local holidays",
    ),
    "work": (
        "career advice and my job",
        "talking to my manager or colleagues",
        "meetings, deadlines and projects at the office",
        "salary, promotion or changing jobs",
        "writing a work email",
    ),
    "education": (
        "study plan and revision schedule",
        "preparing for an exam or test",
        "courses, classes and homework",
        "applying to university or a program",
        "learning a subject faster",
    ),
    "family": (
        "gift ideas for someone in my family",
        "plans and activities with my kids or partner",
        "parenting questions",
        "family events, birthdays and visits",
        "advice about a relative",
    ),
    "pets": (
        "caring for my pet",
        "pet food, walks, grooming and the vet",
        "travelling or moving with an animal",
        "keeping my pet safe, calm or healthy",
    ),
    "health": (
        "is this safe for me to eat, take or do",
        "symptoms, medication and doctors",
        "sleep, stress and wellbeing",
    ),
    "hobbies": (
        "what to do in my free time",
        "gear, practice and getting better at my hobby",
        "gift ideas for me",
        "clubs, events and weekend plans",
    ),
    "language": (
        "translate or explain in a language I speak",
        "learning or practising a language",
        "which language to answer in",
    ),
    "travel": (
        "planning a trip, itinerary and packing",
        "flights, hotels, visas and bookings",
        "things to do at my destination",
    ),
    "preferences": (
        "how to format or phrase an answer for me",
        "recommendations that match my taste",
        "choosing between options",
    ),
    "relationships": (
        "advice about a friend or partner",
        "plans with people I know",
        "gift ideas and messages for someone close",
    ),
    "goals": (
        "planning my next steps",
        "staying motivated and tracking progress",
        "deciding what to prioritise",
    ),
    "finance": (
        "budgeting and saving money",
        "spending, bills and big purchases",
        "investing, loans and taxes",
    ),
    "home": (
        "repairs, furniture and chores at home",
        "moving house or renting",
        "cleaning, garden and household tips",
    ),
    "schedule": (
        "planning my day or week",
        "when am I free or busy",
        "reminders, appointments and timing",
    ),
    "tech": (
        "fixing or setting up my phone, laptop or apps",
        "which device, software or tool to use",
        "troubleshooting my setup",
    ),
}

#: short descriptions used to guess the category of a memory typed without one
CATEGORY_DESCRIPTIONS: Mapping[str, str] = {
    "diet": "food, eating habits, diet, allergies to food, cooking",
    "location": "where the person lives, their city, neighbourhood or country",
    "work": "the person's job, employer, profession, colleagues and career",
    "education": "studies, school, university, exams and courses",
    "family": "spouse, partner, children, parents, siblings and relatives",
    "pets": "pets and animals the person owns",
    "health": "health conditions, diagnoses, medication and treatments",
    "hobbies": "hobbies, sports, fitness, games, music, art and free-time activities",
    "language": "languages the person speaks or is learning",
    "travel": "trips, holidays, travel plans and places visited",
    "preferences": "likes, dislikes and how the person wants answers given",
    "relationships": "friends, dating and the people in the person's life",
    "goals": "ambitions, plans and goals the person is working towards",
    "finance": "money, budget, savings, investments and debts",
    "home": "the person's house or flat, chores and household",
    "schedule": "routines, appointments, working hours and availability",
    "tech": "the devices, computers, phones and software the person uses",
}


#: other names an app may give a category (the API takes free text): each points to the
#: recommended category whose uses fit it. Names that say nothing of the topic ("general",
#: "personal", "misc") are not here: the memory's words choose then.
CATEGORY_ALIASES: Mapping[str, str] = {
    alias: category
    for category, aliases in {
        "diet": "food foods eating nutrition dietary cuisine meal meals cooking recipes",
        "location": "residence hometown city address neighbourhood neighborhood place "
        "geography where region country home_city home_town current_city",
        "work": "job jobs career occupation profession professional employment workplace "
        "business office",
        "education": "school studies study university college academic academics learning "
        "degree course courses",
        "family": "kids children child parents parenting spouse relatives relative "
        "household_members",
        "pets": "pet animal animals dog dogs cat cats",
        "health": "medical medicine medications medication conditions condition wellness "
        "wellbeing mental_health allergies allergy",
        "hobbies": "hobby interests interest leisure sport sports music games gaming "
        "activities pastimes entertainment books reading fitness exercise",
        "language": "languages linguistic",
        "travel": "trips trip vacation vacations holidays holiday journeys",
        "preferences": "likes dislikes taste tastes favorites favourites style",
        "relationships": "relationship friends friend friendship dating social partner "
        "romance people",
        "goals": "goal plans ambitions ambition aspirations aspiration resolutions",
        "finance": "money finances financial budget budgeting investments investing "
        "banking savings",
        "home": "house housing apartment flat property living",
        "schedule": "routine routines calendar availability timetable appointments",
        "tech": "technology devices device gadgets software computers computer electronics",
    }.items()
    for alias in aliases.split()
}


def recommended_category(name: str) -> str | None:
    """The recommended category a free-text category stands for ("food" → diet,
    "work_schedule" → work), or None when its name does not say.

    The first word of a compound name that names a topic decides: "dietary_restrictions"
    is about diet, "pet_care" about pets.
    """
    folded = name.strip().casefold().replace("-", "_").replace(" ", "_")
    if folded in CATEGORY_USES:
        return folded
    if folded in CATEGORY_ALIASES:
        return CATEGORY_ALIASES[folded]
    for word in filter(None, folded.split("_")):
        for form in (word, word.removesuffix("s")):
            if form in CATEGORY_USES:
                return form
            if form in CATEGORY_ALIASES:
                return CATEGORY_ALIASES[form]
    return None


#: what the extractor and save_memory may give per memory (the rule asks for five to
#: seven) and how long each may be: every use is indexed as its own vector
MAX_USES = 7
MIN_USES = 3
USE_CHARS = 80


def clean_uses(given: Sequence[object]) -> tuple[str, ...]:
    """The uses worth indexing: non-empty, each cut to USE_CHARS, at most MAX_USES."""
    cleaned = (str(use).strip()[:USE_CHARS] for use in given)
    return tuple(use for use in cleaned if use)[:MAX_USES]


def uses_for(category: str, given: Sequence[str] = ()) -> tuple[str, ...]:
    """The uses to index: the memory's own if it has any, else its category's."""
    own = tuple(use.strip() for use in given if use and use.strip())
    if own:
        return own
    return tuple(CATEGORY_USES.get(category, ()))


def uses_text(uses: Sequence[str]) -> str:
    """One string to embed for all of a memory's uses."""
    return "; ".join(uses)


#: words that place a statement in a category, for a model that cannot read (offline)
CATEGORY_WORDS: Mapping[str, tuple[str, ...]] = {
    "diet": (
        "vegetarian",
        "vegan",
        "pescatarian",
        "eat",
        "eats",
        "food",
        "meat",
        "allergic",
        "allergy",
        "intolerant",
        "gluten",
        "halal",
        "kosher",
        "diet",
        "cook",
        "drink",
    ),
    "location": (
        "live",
        "lives",
        "living",
        "moved",
        "move",
        "city",
        "town",
        "relocated",
        "country",
        "neighbourhood",
        "neighborhood",
    ),
    "work": (
        "work",
        "works",
        "job",
        "engineer",
        "manager",
        "company",
        "office",
        "boss",
        "colleague",
        "career",
        "employer",
        "startup",
        "salary",
    ),
    "education": (
        "exam",
        "study",
        "studies",
        "studying",
        "university",
        "college",
        "school",
        "course",
        "degree",
        "gate",
        "semester",
        "preparing",
    ),
    "family": (
        "wife",
        "husband",
        "partner",
        "son",
        "daughter",
        "kid",
        "kids",
        "child",
        "children",
        "mother",
        "father",
        "mom",
        "dad",
        "sister",
        "brother",
        "parents",
    ),
    "pets": ("dog", "cat", "puppy", "kitten", "pet", "parrot", "hamster", "rabbit"),
    "health": (
        "doctor",
        "medication",
        "asthma",
        "diabetes",
        "pregnant",
        "injury",
        "therapy",
        "surgery",
        "migraine",
    ),
    "hobbies": (
        "hobby",
        "play",
        "plays",
        "guitar",
        "piano",
        "chess",
        "hiking",
        "running",
        "painting",
        "reading",
        "football",
        "cricket",
        "gaming",
        "photography",
    ),
    "language": ("speak", "speaks", "language", "hindi", "tamil", "spanish", "french", "german"),
    "travel": ("trip", "travel", "travelling", "traveling", "flight", "visiting", "vacation"),
    "preferences": (
        "prefer",
        "prefers",
        "like",
        "likes",
        "love",
        "loves",
        "hate",
        "hates",
        "favourite",
        "favorite",
    ),
    "finance": ("budget", "saving", "savings", "loan", "mortgage", "invest", "debt", "rent"),
}

#: the conflict key of standing facts a newer statement replaces (seed 002: same key)
CATEGORY_KEYS: Mapping[str, str] = {"location": "home_city", "diet": "diet", "work": "job"}


def category_by_words(text: str) -> str | None:
    """The category whose words appear most in `text` (None if none does)."""
    words = set(re.findall(r"[a-z']+", text.casefold()))
    best, hits = None, 0
    for category, markers in CATEGORY_WORDS.items():
        count = sum(1 for marker in markers if marker in words)
        if count > hits:
            best, hits = category, count
    return best
