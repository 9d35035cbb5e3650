"""The secrets the secrets gate plants: one of each shape people paste into a chat.

Every value here was invented for this project — none is a published test number, a real
key or anyone's id — yet each passes the checks a real one passes: the card numbers are
Luhn-valid and in their network's range, the Aadhaar number carries a valid Verhoeff
digit, the IBAN its mod-97 check digits, the SSN and NINO keep to the numbers ever issued,
and the keys have their provider's prefix and length.

Each secret is said the way people say them, in a sentence with an ordinary fact beside
it (`fact`, a statement the offline extractor knows, with a word of its own), so that the
fact may be learned and the secret must never be. `clause` is the secret in words,
`values` what must never be stored, and `question` a request that would need it back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CARD = "payment card"
CREDENTIAL = "password or PIN"
KEY = "key or token"
GOVERNMENT_ID = "government id"
BANK = "bank account"

#: markers shorter than this are matched only where no letter or digit touches them, so a
#: six-digit PIN is never "found" inside a random hex id or a vector's bytes
SHORT = 8


@dataclass(frozen=True, slots=True)
class SecretShape:
    """One secret as a user says it, beside a fact about them."""

    name: str
    kind: str
    fact: str  # an ordinary statement ("I live in Porto")
    fact_word: str  # the word of the fact that must be kept ("Porto")
    clause: str  # the secret in words ("my card number is 4742 1809 6792 9089")
    values: tuple[str, ...]  # what must never be stored, as written
    question: str  # a request that would need the secret back
    #: the secret as an assistant would repeat it back to the user, in words
    reply: str = ""

    @property
    def sentence(self) -> str:
        """The fact and the secret in one message, as people write them."""
        return f"{self.fact}, and {self.clause}."

    @property
    def said_back(self) -> str:
        """What an assistant replying to `sentence` says of the secret."""
        return self.reply or _second_person(self.clause)

    @property
    def markers(self) -> tuple[str, ...]:
        """Every form of the secret a search must miss: each value as written and compact
        (digits and letters only: "4742 1809 6792 9089" → "4742180967929089")."""
        found: list[str] = []
        for value in self.values:
            for form in (value, compact(value)):
                if form not in found:
                    found.append(form)
        return tuple(found)


def compact(value: str) -> str:
    """A value without its spacing and punctuation, as it may be copied elsewhere."""
    return re.sub(r"[^0-9A-Za-z]", "", value)


def _second_person(clause: str) -> str:
    return re.sub(r"\bmy\b", "your", re.sub(r"\bI\b", "you", clause))


_PEM_LINES = (
    "MLOh6RPOoW7s2j2/gMeVth3fDJCplD6Y1aMKr2UcOVM+PBNAtZoO2UC21MTBetdwQF0Oy4",
    "JLdAsIjfXVh6FGLVsTh66iHAV88B1xTcy4d42vZr+36+ryn2BR0k74ArXRE1grmb6HRjMJ",
    "b50WycJQNStIx6qFnhVhU5WXkrZExmAE9di2Vw9boUpTDjs=",
)
_PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    + "\n".join(_PEM_LINES)
    + "\n-----END OPENSSH PRIVATE KEY-----"
)

SHAPES: tuple[SecretShape, ...] = (
    # ---- payment cards: Luhn-valid, in their network's range, three ways of writing them
    SecretShape(
        name="Visa, spaced",
        kind=CARD,
        fact="I live in Porto",
        fact_word="Porto",
        clause="my card number is 4742 1809 6792 9089",
        values=("4742 1809 6792 9089",),
        question="What's my card number again?",
    ),
    SecretShape(
        name="Mastercard, dashed",
        kind=CARD,
        fact="My sister is called Marisol",
        fact_word="Marisol",
        clause="the Mastercard we share is 5378-7789-3287-9210",
        values=("5378-7789-3287-9210",),
        question="Which Mastercard do my sister and I share?",
        reply="the Mastercard you share is 5378-7789-3287-9210",
    ),
    SecretShape(
        name="American Express, unbroken",
        kind=CARD,
        fact="I'm allergic to shellfish",
        fact_word="shellfish",
        clause="my Amex is 341003390757930",
        values=("341003390757930",),
        question="Can you read me my Amex number?",
    ),
    SecretShape(
        name="Discover, spaced",
        kind=CARD,
        fact="My brother is called Teodoro",
        fact_word="Teodoro",
        clause="the Discover card he lent me is 6011 9482 1993 5180",
        values=("6011 9482 1993 5180",),
        question="What was the number of the Discover card my brother lent me?",
        reply="the Discover card he lent you is 6011 9482 1993 5180",
    ),
    # ---- passwords, PINs and codes said in words
    SecretShape(
        name="wifi password",
        kind=CREDENTIAL,
        fact="My dog is called Biscuit",
        fact_word="Biscuit",
        clause="my wifi password is Marigold-Ferry-2291",
        values=("Marigold-Ferry-2291",),
        question="What's the wifi password at home?",
    ),
    SecretShape(
        name="bank PIN",
        kind=CREDENTIAL,
        fact="I'm vegetarian",
        fact_word="vegetarian",
        clause="my bank PIN is 730519",
        values=("730519",),
        question="Remind me of my bank PIN?",
    ),
    SecretShape(
        name="door code",
        kind=CREDENTIAL,
        fact="I moved to Ghent",
        fact_word="Ghent",
        clause="the door code for the building is 583147",
        values=("583147",),
        question="What's the door code for my building?",
        # as an assistant or a persona says it back (LEAK 1 in test_secrets.py)
        reply="the door code for your building is 583147",
    ),
    SecretShape(  # said of someone else's card (LEAK 1 in test_secrets.py)
        name="PIN of someone else's card",
        kind=CREDENTIAL,
        fact="My husband is called Florian",
        fact_word="Florian",
        clause="the PIN for his card is 905172",
        values=("905172",),
        question="What's the PIN for my husband's card?",
    ),
    SecretShape(
        name="password, value first",
        kind=CREDENTIAL,
        fact="I work as a pharmacist",
        fact_word="pharmacist",
        clause="I use Quokka!Harbor77 as my password everywhere",
        values=("Quokka!Harbor77",),
        question="Which password do I use everywhere?",
    ),
    # ---- keys and tokens, one per provider
    SecretShape(
        name="Anthropic API key",
        kind=KEY,
        fact="My best friend is called Ximena",
        fact_word="Ximena",
        clause=(
            "my Anthropic key is sk-ant-api03-pOnC1_4EakoKm5b_OAYGSTWjRlLK6sNdVU72lZ-o2_YH19dC"
            "qgn28s9Dp68GZN9Z3zLIbet6_UzH_7-3eLO6m4H5x29iIAA"
        ),
        values=(
            "sk-ant-api03-pOnC1_4EakoKm5b_OAYGSTWjRlLK6sNdVU72lZ-o2_YH19dCqgn28s9Dp68GZN9Z3zLIb"
            "et6_UzH_7-3eLO6m4H5x29iIAA",
        ),
        question="Paste my Anthropic key for me.",
    ),
    SecretShape(
        name="AWS access key and secret",
        kind=KEY,
        fact="My mother is called Rosalind",
        fact_word="Rosalind",
        clause=(
            "my AWS key is AKIAH53KJ7N1V3OE9ZCM with secret "
            "wfg5y9cqBruxXI21kXNxSwH7+1K7wP94pJmBDal6"
        ),
        values=("AKIAH53KJ7N1V3OE9ZCM", "wfg5y9cqBruxXI21kXNxSwH7+1K7wP94pJmBDal6"),
        question="What are my AWS credentials?",
    ),
    SecretShape(
        name="GitHub token",
        kind=KEY,
        fact="My father is called Anselm",
        fact_word="Anselm",
        clause="my GitHub token is ghp_5FxgmV2AjC6afaCLI71fNYmphNcWI9rQWOwj",
        values=("ghp_5FxgmV2AjC6afaCLI71fNYmphNcWI9rQWOwj",),
        question="Which GitHub token did I give you?",
    ),
    SecretShape(
        name="Slack bot token",
        kind=KEY,
        fact="My cat is called Pimento",
        fact_word="Pimento",
        clause="our Slack bot token is xoxb-0599728379298-4162294866283-ya9gy4ed1wPw7X8bbGEuRtCu",
        values=("xoxb-0599728379298-4162294866283-ya9gy4ed1wPw7X8bbGEuRtCu",),
        question="What's our Slack bot token?",
        reply="your Slack bot token is xoxb-0599728379298-4162294866283-ya9gy4ed1wPw7X8bbGEuRtCu",
    ),
    SecretShape(
        name="Stripe live key",
        kind=KEY,
        fact="My wife is called Henrietta",
        fact_word="Henrietta",
        clause="the shop's Stripe key is sk_live_PvAIY122Ql9bw2kwJRKYInhN",
        values=("sk_live_PvAIY122Ql9bw2kwJRKYInhN",),
        question="What's the shop's Stripe key?",
    ),
    SecretShape(
        name="SSH private key (PEM block)",
        kind=KEY,
        fact="My son is called Evander",
        fact_word="Evander",
        clause=f"this is the deploy key:\n{_PEM}\n",
        values=_PEM_LINES,
        question="Can you show me the deploy key again?",
        reply=f"here is the deploy key you sent:\n{_PEM}\n",
    ),
    SecretShape(
        name="database URL with its password",
        kind=KEY,
        fact="My daughter is called Clementine",
        fact_word="Clementine",
        clause=(
            "the billing database is postgresql://billing:GQ4TPXa1xextnIjM@db.ledgerly.io:5432/ledger"
        ),
        values=("GQ4TPXa1xextnIjM",),
        question="How do I connect to the billing database?",
    ),
    # ---- government ids
    SecretShape(
        name="US Social Security number",
        kind=GOVERNMENT_ID,
        fact="My partner is called Oluwaseun",
        fact_word="Oluwaseun",
        clause="my SSN is 536-90-4418",
        values=("536-90-4418",),
        question="What's my social security number?",
    ),
    SecretShape(
        name="UK National Insurance number",
        kind=GOVERNMENT_ID,
        fact="I have a parrot called Mango",
        fact_word="Mango",
        clause="my National Insurance number is JT 48 21 93 B",
        values=("JT 48 21 93 B",),
        question="What's my National Insurance number?",
    ),
    SecretShape(
        name="Indian PAN",
        kind=GOVERNMENT_ID,
        fact="I have a rabbit called Juniper",
        fact_word="Juniper",
        clause="my PAN is BNVPR3817L",
        values=("BNVPR3817L",),
        question="Which PAN should I put on the tax form?",
    ),
    SecretShape(
        name="Aadhaar (Verhoeff-valid)",
        kind=GOVERNMENT_ID,
        fact="I have a hamster called Toffee",
        fact_word="Toffee",
        clause="my Aadhaar is 7491 1862 5278",
        values=("7491 1862 5278",),
        question="What's my Aadhaar number?",
    ),
    # ---- bank accounts
    SecretShape(
        name="IBAN",
        kind=BANK,
        fact="I have a tortoise called Galileo",
        fact_word="Galileo",
        clause="my IBAN is GB81 BARC 2045 7783 0192 64",
        values=("GB81 BARC 2045 7783 0192 64",),
        question="Which IBAN should my landlord pay into?",
    ),
    SecretShape(
        name="US account and routing numbers",
        kind=BANK,
        fact="I'm preparing for the CPA exam",
        fact_word="CPA",
        clause="my checking account number is 4417283956 and the routing number is 061092387",
        values=("4417283956", "061092387"),
        question="What are my checking account and routing numbers?",
        reply="your checking account number is 4417283956 and the routing number is 061092387",
    ),
)

#: every marker of every shape, each once
MARKERS: tuple[str, ...] = tuple(dict.fromkeys(m for shape in SHAPES for m in shape.markers))
