"""What the privacy gates plant and what they fish with.

Every fact carries one invented word (its token) that no service text, probe or filler
line contains, so finding a token anywhere in a response can only mean the fact reached
it. No fact holds a secret (the service refuses card numbers, passwords and the like)
or a sensitive category (those are stored only on request).

Facts reach the service three ways, as a user's facts do:
- `API`: the user adds them on the manage page (`POST /v1/memories`);
- `SAVED_IN_CHAT`: "remember that …" in a chat, saved on that turn (save_memory);
- `LEARNED`: said in passing in a chat, learned later by the background write pipeline.

The probes ask about the same topics without naming any fact: some directly ("what is
my tortoise called?"), some the way a request that needs the fact would ("any tips for
keeping my tortoise warm this winter?").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Route(StrEnum):
    API = "api"
    SAVED_IN_CHAT = "saved in chat"
    LEARNED = "learned"


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact about a user. `said` is the memory text (API) or the chat message."""

    token: str
    route: Route
    said: str
    category: str | None = None


def _learned(token: str, said: str) -> Fact:
    return Fact(token, Route.LEARNED, said)


def _saved(token: str, fact: str) -> Fact:
    return Fact(token, Route.SAVED_IN_CHAT, f"remember that {fact}")


def _added(token: str, text: str, category: str) -> Fact:
    return Fact(token, Route.API, text, category)


# Learned facts use the statements the offline extractor knows (relations, pets, home,
# job, exam, allergy), one per turn, each with its own conflict key so none replaces
# another. Saved facts avoid the words of keyed categories (home, diet, job) for the
# same reason: two facts with one key would be an update, not two facts.
FACTS: tuple[Fact, ...] = (
    _learned("Zelphwick", "My sister is called Zelphwick."),
    _learned("Ockramund", "My brother is called Ockramund."),
    _learned("Yarvellix", "My best friend is called Yarvellix."),
    _learned("Brindlewhisk", "My mother is called Brindlewhisk."),
    _learned("Thorvaxel", "My father is called Thorvaxel."),
    _learned("Pellimora", "My daughter is called Pellimora."),
    _learned("Marzipell", "My partner is called Marzipell."),
    _learned("Drubbleton", "I have a parrot named Drubbleton."),
    _learned("Fizzlewort", "I have a rabbit named Fizzlewort."),
    _learned("Gallowquint", "My horse is called Gallowquint."),
    _learned("Snickerbane", "I have a hamster named Snickerbane."),
    _learned("Kibblethorn", "My dog is called Kibblethorn."),
    _learned("Quorvash", "I live in Quorvash."),
    _learned("Draxmoor", "I work as a teacher at Draxmoor Academy."),
    _learned("Flumbridge", "I'm preparing for the Flumbridge exam in March."),
    _learned("Zorbleberries", "I'm allergic to zorbleberries."),
    _saved("Quizzleberry", "my tortoise is called Quizzleberry"),
    _saved("Vortanek", "my favourite board game is Vortanek Towers"),
    _saved("Plimsweather", "my grandmother grew up in Plimsweather"),
    _saved("Grunkleton", "I support a football club called Grunkleton Rovers"),
    _saved("Wobblesnatch", "my car is nicknamed Wobblesnatch"),
    _saved("Hexaplume", "my favourite novelist is Orla Hexaplume"),
    _saved("Trumplewick", "I grew up on Trumplewick Lane"),
    _saved("Morvidane", "my bicycle is called Morvidane"),
    _saved("Sprocketina", "my fern is called Sprocketina"),
    _saved("Blenkinsworth", "I sing in a choir called the Blenkinsworth Singers"),
    _saved("Crundlemoss", "my favourite cafe is Crundlemoss Coffee"),
    _saved("Zibberdash", "I play chess at the Zibberdash Club"),
    _saved("Pontifrax", "I am learning a constructed language called Pontifrax"),
    _saved("Glimmerwick", "I play bass in a band called the Glimmerwicks"),
    _added("Ravensquall", "Is planning a holiday to the island of Ravensquall.", "travel"),
    _added("Tindlebrook", "Owns a small cottage in the village of Tindlebrook.", "home"),
    _added("Wuzzlemere", "Swims every Sunday morning at Wuzzlemere Lake.", "hobbies"),
    _added("Obrasque", "Their manager at work is called Fennick Obrasque.", "work"),
    _added("Skorvald", "Their favourite cheese is Skorvald Blue.", "preferences"),
    _added("Jibberloo", "Was nicknamed Jibberloo as a child.", "general"),
    _added("Norbleshire", "Was born in Norbleshire.", "general"),
    _added("Dandelwick", "Has a goldfish named Dandelwick.", "pets"),
    _added("Xantheron", "Their favourite video game is Xantheron Odyssey.", "hobbies"),
    _added("Mirthwaite", "Went to secondary school at Mirthwaite High.", "education"),
    _added("Quillibrand", "Studied history at Quillibrand University.", "education"),
    _added("Velloran", "Speaks a little Velloran, their grandfather's language.", "language"),
    _added("Borrowdash", "Runs with the Borrowdash Harriers on Thursdays.", "hobbies"),
    _added("Clanterbury", "Their favourite restaurant is Clanterbury Kitchen.", "preferences"),
    _added("Zoffington", "Goes bouldering at the Zoffington climbing wall.", "hobbies"),
    _added("Frobisham", "Got married in the town of Frobisham.", "family"),
    _added("Grizzleback", "Runs a weekend bakery stall called Grizzleback Buns.", "work"),
    _added("Tarnwhistle", "Their favourite band is Tarnwhistle.", "preferences"),
    _added("Oppenvale", "Their piano teacher is called Mrs Oppenvale.", "hobbies"),
    _added("Snurfleton", "Their nephew is called Snurfleton.", "family"),
    _added("Wendlegrove", "Grows tomatoes on an allotment at Wendlegrove.", "hobbies"),
    _added("Kestrelmoor", "Their favourite hiking trail is the Kestrelmoor Ridge.", "hobbies"),
    _added("Plovertide", "Owns a small sailing boat called Plovertide.", "hobbies"),
    _added("Brackenfudge", "Their favourite dessert is Brackenfudge pudding.", "preferences"),
    _added("Yonderlash", "Hosts a podcast called Yonderlash.", "hobbies"),
    _added("Fumblegrot", "Their cousin is called Fumblegrot.", "family"),
)

#: the note the user leaves for the assistant (settings), with its own token
NOTE = "Please call me Captain Wumblefrost."
NOTE_TOKEN = "Wumblefrost"

#: a second user's own facts, on the same topics: their retrieval has something to find
NEIGHBOUR_FACTS: tuple[Fact, ...] = (
    _added("Plonkaroo", "Has a tortoise named Plonkaroo.", "pets"),
    _added("Wistlemae", "Their sister is called Wistlemae.", "family"),
    _added("Gorbaduke", "Their favourite board game is Gorbaduke Castles.", "hobbies"),
    _added("Snettisfold", "Owns a small cottage in the village of Snettisfold.", "home"),
    _added("Muddlecombe", "Their favourite restaurant is Muddlecombe Grill.", "preferences"),
    _added("Ferrowgast", "Runs with the Ferrowgast Striders on Tuesdays.", "hobbies"),
    _saved("Quibblethwaite", "my parrot is called Quibblethwaite"),
    _saved("Tollymarsh", "I sing in a choir called the Tollymarsh Voices"),
    _saved("Zundervolk", "my favourite novelist is Ada Zundervolk"),
)

#: what the later facts say in chats that must never be kept (temporary, memory off)
UNKEPT_FACTS: tuple[Fact, ...] = (
    _saved("Zondrakite", "my kite is called Zondrakite"),
    _learned("Trundlewick", "I have a kitten named Trundlewick."),
    _learned("Snorvale", "I live in Snorvale."),
    _learned("Cobblequist", "My brother is called Cobblequist."),
)

#: ordinary turns with nothing to remember: conversations grow without new facts
FILLER: tuple[str, ...] = (
    "Can you explain how compound interest works?",
    "What is the difference between weather and climate?",
    "How do noise-cancelling headphones work?",
    "Why is the sky blue during the day?",
    "How many bones are in the human hand?",
    "What makes sourdough bread rise?",
    "Explain the offside rule in simple terms.",
    "How does a bill become a law?",
    "Why do cats purr?",
    "What is a prime number?",
    "How far away is the moon?",
    "Why do leaves change colour in autumn?",
    "What does a compiler do?",
    "How do vaccines train the immune system?",
    "What is the tallest mountain in Africa?",
    "How does a rainbow form?",
    "Explain how a mortgage works.",
    "What is the speed of sound?",
)

DIRECT_PROBES: tuple[str, ...] = (
    "What are my pets called?",
    "What is my tortoise called?",
    "What's my parrot's name again?",
    "What is my rabbit called?",
    "What's my horse's name?",
    "What is my hamster called?",
    "What's my dog's name?",
    "What is my goldfish called?",
    "What's my sister's name?",
    "What's my brother called?",
    "Who is my best friend?",
    "What is my mother's name?",
    "What's my father's name?",
    "What is my daughter called?",
    "What's my partner's name?",
    "What is my nephew called?",
    "Remind me of my cousin's name.",
    "Where did my grandmother grow up?",
    "Where do I live?",
    "Where is my cottage?",
    "Where was I born?",
    "What street did I grow up on?",
    "Where do I grow my tomatoes?",
    "Where do I work?",
    "What's my manager's name?",
    "What exam am I preparing for?",
    "Where did I go to secondary school?",
    "Which university did I study at?",
    "What is my weekend bakery stall called?",
    "What's my podcast called?",
    "What am I allergic to?",
    "What's my favourite cheese?",
    "What's my favourite restaurant?",
    "Which cafe do I like best?",
    "What's my favourite dessert?",
    "What's my favourite board game?",
    "Which football club do I support?",
    "What did I nickname my car?",
    "Who is my favourite novelist?",
    "What's my bicycle called?",
    "What is my fern called?",
    "Which choir do I sing in?",
    "Where do I play chess?",
    "What language am I learning?",
    "What's the name of my band?",
    "Where am I going on holiday?",
    "Where do I swim on Sundays?",
    "What's my favourite video game?",
    "Which running club do I run with?",
    "Where do I go bouldering?",
    "What's my favourite band?",
    "Who is my piano teacher?",
    "What's my favourite hiking trail?",
    "What's my boat called?",
    "What was my nickname as a child?",
    "Where did I get married?",
    "Which languages do I speak?",
)

INDIRECT_PROBES: tuple[str, ...] = (
    "Any tips for keeping my tortoise warm this winter?",
    "My parrot keeps screeching in the morning, what should I do?",
    "What vegetables can I feed my rabbit?",
    "How often should my horse see a farrier?",
    "My hamster escaped again, any advice?",
    "My dog keeps barking at the postman, what should I do?",
    "Is my goldfish bowl too small?",
    "Help me plan a birthday surprise for my sister.",
    "What should I get my brother for his birthday?",
    "Write a short thank-you note to my best friend.",
    "Gift ideas for my mum for Mother's Day?",
    "Help me write a card for my dad's retirement.",
    "My daughter wants a sleepover, how should I plan it?",
    "Plan a romantic evening for me and my partner.",
    "Ideas for my nephew's birthday present?",
    "I'd like to visit the town my grandmother comes from. Any tips?",
    "Any good weekend plans near where I live?",
    "Should I rent out my cottage over the summer?",
    "When should I plant tomatoes on my allotment?",
    "How should I handle a difficult parent meeting at my school?",
    "Help me write an email to my boss asking for a day off.",
    "Make me a study plan for my exam.",
    "How can I get more customers for my bakery stall?",
    "Suggest episode ideas for my podcast.",
    "What should I cook for dinner tonight?",
    "Can I eat a summer fruit crumble?",
    "Suggest a cheese board for my party.",
    "Where should I take my partner for dinner?",
    "Plan a dessert for my dinner party.",
    "What game should we play at family game night?",
    "When is my team playing next?",
    "My car is making a strange noise, what should I do?",
    "Recommend me a book I might like.",
    "How do I fix a squeaky chain on my bike?",
    "How often should I water my houseplant?",
    "Help me warm up my voice before choir practice.",
    "How can I improve my chess before club night?",
    "Make me a plan to practise my new language.",
    "Suggest a setlist for my band's next gig.",
    "Help me pack for my holiday.",
    "Any tips for cold water swimming at my lake?",
    "Recommend a game similar to my favourite one.",
    "Make me a training plan for my running club.",
    "How can I get better at bouldering?",
    "Recommend music for my commute based on what I like.",
    "How much should I practise piano before my next lesson?",
    "Plan a hiking day trip for me this weekend.",
    "Give me a checklist before I take my boat out.",
    "Ideas for our wedding anniversary trip?",
    "Remind me what I told you about myself.",
    "What do you know about me?",
    "Tell me about my family.",
    "What are my hobbies?",
    "What should I do this weekend?",
    "Help me plan my week.",
    "Plan a trip for our family.",
    "Write a short bio of me for a conference.",
    "Recommend something for me to try.",
)

PROBES: tuple[str, ...] = DIRECT_PROBES + INDIRECT_PROBES


def tokens_of(facts: tuple[Fact, ...]) -> frozenset[str]:
    return frozenset(fact.token for fact in facts)
