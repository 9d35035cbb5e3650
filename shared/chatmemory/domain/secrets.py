"""Secrets are never stored: card numbers, passwords and PINs, keys and tokens, ids.

The detector prefers checksums and explicit shapes over guesses, so that ordinary facts
("born in 1987", "my flight is BA2490", a phone number, a street address) are not refused.
Text is first seen the way a reader sees it (`normalise_for_detection`): fullwidth digits,
zero-width splits and soft hyphens hide nothing. Every detector scans every match — one
harmless match ("my password is weak") never hides the next ("… my PIN is 4821").

`find_secrets` returns each secret with its span, so a caller can keep the rest of a
message (`without_secrets`: "my PIN is 4821 and I'm allergic to peanuts" keeps the
allergy) or withhold just the secret in derived text (a conversation summary).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

CARD = "payment card number"
TOKEN = "key or access token"  # noqa: S105 - a kind of secret, not one
CREDENTIAL = "password or other credential"
GOVERNMENT_ID = "government id number"
BANK_ACCOUNT = "bank account number"
#: what a secret's value reads as in every stored copy (messages, room lines, summaries)
WITHHELD = "[secret withheld]"


@dataclass(frozen=True, slots=True)
class FoundSecret:
    """One secret in the normalised text: its kind and where its value is."""

    kind: str
    start: int
    end: int
    value: str


# ---- seeing text as a reader does --------------------------------------------------------

# Format characters (zero-width space/joiners, bidi marks, the BOM, soft hyphen, word
# joiner…) are invisible: "4111\u200b1111…" reads as one number, so they are removed.
_INVISIBLE_CATEGORIES = frozenset({"Cf"})
_EXTRA_INVISIBLE = "\u180e\u3164\u115f\u1160\uffa0"  # Mongolian vowel sep., Hangul fillers


def normalise_for_detection(text: str) -> str:
    """`text` as a reader sees it: NFKC (fullwidth and styled letters and digits become
    plain ones) with every invisible character removed. Spans from `find_secrets` refer to
    this form."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(
        char
        for char in folded
        if unicodedata.category(char) not in _INVISIBLE_CATEGORIES and char not in _EXTRA_INVISIBLE
    )


# ---- payment cards: 13..19 digits from a card network's range that pass Luhn ------------

# Digit groups joined by at most one separator each: spaces, dashes, dots, slashes, "_".
_DIGIT_RUN = re.compile(r"(?<![\w.])\d+(?:[ .\-/_]\d+)*(?![\w])")
_GROUP = re.compile(r"\d+")


def _luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card_like(digits: str) -> bool:
    # Every network's numbers start with 2..6 (Mastercard 2-series, Amex/Diners/JCB 3,
    # Visa 4, Mastercard/Maestro 5, Discover/UnionPay/Maestro 6).
    return (
        13 <= len(digits) <= 19
        and digits[0] in "23456"
        and len(set(digits)) > 1
        and _luhn_valid(digits)
    )


def _cards(text: str) -> Iterator[tuple[int, int]]:
    """Spans of card numbers. A run of digit groups is tried at every group boundary, so a
    card written after another number ("ref 2291 4111 1111 1111 1111") is still found."""
    for run in _DIGIT_RUN.finditer(text):
        groups = list(_GROUP.finditer(run.group()))
        if len(groups) > 1 and any(len(group.group()) < 3 for group in groups[:-1]):
            continue  # cards are written in groups of 3 to 6 digits, not "45 67 89 …"
        if len(groups) == 1:
            if _card_like(groups[0].group()):
                yield run.span()
            continue
        for first in range(len(groups)):
            digits = ""
            for last in range(first, len(groups)):
                digits += groups[last].group()
                if len(digits) > 19:
                    break
                if _card_like(digits):
                    base = run.start()
                    yield base + groups[first].start(), base + groups[last].end()
                    break


# ---- keys, tokens and credentials recognisable by shape ---------------------------------

_TOKEN_SHAPES = re.compile(
    r"|".join(
        (
            # Private key blocks (PEM, OpenSSH, PGP), with or without their body.
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[^-]*-----END [A-Z0-9 ]+-----)?",
            r"\bPuTTY-User-Key-File-\d",
            r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[0-9A-Z]{16}\b",  # AWS ids
            r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}",  # Anthropic, OpenAI
            r"\b(?:sk|rk|whsec)_(?:live|test)?_?[A-Za-z0-9]{16,}\b",  # Stripe keys, webhooks
            r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",  # GitHub
            r"\bgithub_pat_[A-Za-z0-9_]{30,}\b",
            r"\bglpat-[A-Za-z0-9_-]{20,}\b",  # GitLab
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
            r"hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
            r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}",
            r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google API key
            r"\bya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access token
            r"\bGOCSPX-[0-9A-Za-z_-]{20,}",  # Google OAuth client secret
            r"\"private_key_id\"\s*:\s*\"[0-9a-f]{40}\"",  # a service account's JSON
            r"\bAccountKey=[A-Za-z0-9+/=]{20,}",  # Azure storage connection string
            r"\b(?:SharedAccessKey|sig)=[A-Za-z0-9%+/=]{20,}",  # Azure SAS / Service Bus
            r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
            r"\bnpm_[A-Za-z0-9]{36}\b",  # npm
            r"\bpypi-AgE[A-Za-z0-9_-]{20,}",  # PyPI
            r"\bhf_[A-Za-z0-9]{30,}\b",  # Hugging Face
            r"\bdop_v1_[a-f0-9]{64}\b",  # DigitalOcean
            r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",  # Shopify
            r"\bSK[0-9a-f]{32}\b",  # Twilio API key
            r"\bkey-[0-9a-f]{32}\b",  # Mailgun
            r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b",  # Telegram bot token
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # a JWT
            r"\b(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{16,}",  # an Authorization header value
            # A password inside a URL or connection string: scheme://user:password@host
            r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]*:(?P<url_password>[^\s@/]{3,})@[\w.-]+",
        )
    )
)

# A bare AWS secret access key: exactly 40 base64 characters mixing cases and digits
# (a 40-character git hash is lowercase hex, so it is not one).
_BARE_40 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _bare_cloud_secret(candidate: str) -> bool:
    return (
        any(c.isupper() for c in candidate)
        and any(c.islower() for c in candidate)
        and any(c.isdigit() for c in candidate)
    )


def _tokens(text: str) -> Iterator[tuple[int, int]]:
    for match in _TOKEN_SHAPES.finditer(text):
        yield match.span("url_password") if match.group("url_password") else match.span()
    for match in _BARE_40.finditer(text):
        if _bare_cloud_secret(match.group()):
            yield match.span()


# ---- credentials stated in words ---------------------------------------------------------

# "name = value" the way config files and .env lines are pasted: aws_secret_access_key=…,
# DB_PASSWORD: …, "client_secret": "…". A plain "Secret: …" in prose is left to the
# phrasing rules below, which know the words that follow one without being one.
_ASSIGNED = re.compile(
    r"(?P<name>[\"']?\b[\w.-]*(?:secret|passw(?:or)?d|pwd|token|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|auth[_-]?token|authorization|credentials?|passphrase)"
    r"[\w.-]*[\"']?)\s*(?P<op>=|:=|=>|:)\s*[\"'`]?(?P<value>[^\s\"'`,;]{4,})",
    re.IGNORECASE,
)

# Credential words that a value follows ("my PIN is 4821", "wifi password: soleil").
_LOGIN_NOUNS_RE = (
    r"pass(?:word|wd|code|phrase)s?|pwd|"
    r"mot de passe|contraseña|contrasena|passwort|kennwort|senha|пароль|密码|パスワード|비밀번호"
)
_KEY_NOUNS_RE = (
    r"secret\s+(?:access\s+)?key|secret\s+token|client\s+secret|api[\s_-]?key|"
    r"access[\s_-]?(?:key|token)|auth(?:entication)?[\s_-]?(?:token|key)|bearer token|"
    r"refresh token|private key|recovery (?:key|code)s?|backup codes?|seed phrase|"
    r"recovery phrase|mnemonic(?: phrase)?"
)
# Words whose value is a number. "PIN code 560001" is an Indian postal code, not a PIN.
_NUMERIC_WORDS = (
    r"pin(?!\s*code\s*(?:is\s*|:\s*)?[1-8]\d{5}(?!\d))(?:\s*(?:code|number|no\.?))?|"
    r"cvv2?|cvc2?|csc|security code|otp|one[- ]time (?:code|password|pin)|"
    r"(?:verification|confirmation|login|log-in|sign-in|2fa|mfa|two[- ]factor|"
    r"auth(?:entication)?|sms|access|door|gate|alarm|garage|entry|unlock|lock|locker|safe|"
    r"padlock)\s+(?:code|pin|combination|combo)|combination"
)
_LINK = r"(?:\s*(?:(?:is|was|will be|is now|est|es|ist)\b|=|:|->|это|是|は))?"
# Whose it is: "for my bank", "for his card", "of their wifi" (a possessive, then a name).
_OWNER = (
    r"(?:(?:\s+(?:for|to|of|on)\s+(?:(?:their|the|my|our|his|her|your|its|an|a)\s+)?"
    r"[\w.@-]+){0,2})?"
)
_CREDENTIAL_STATED = re.compile(
    rf"\b(?P<word>{_LOGIN_NOUNS_RE}|{_KEY_NOUNS_RE})\b{_OWNER}(?P<link>{_LINK})\s*"
    rf"[\"'`«“]?(?P<value>[^\s\"'`»”]{{3,}})",
    re.IGNORECASE,
)
_NUMBER_STATED = re.compile(
    rf"\b(?:{_NUMERIC_WORDS})\b{_OWNER}{_LINK}\s*[\"'`#]?(?P<value>\d(?:[ -]?\d){{2,9}})(?!\d)",
    re.IGNORECASE,
)
# The value before the word: "I log in with sunflower123 as my password", "hunter2 is my
# password", "use 4821 as the PIN" — the word ending the clause, so "… is my password
# manager" is about a manager.
_VALUE_FIRST = re.compile(
    r"(?:^|(?<=[\s\"'`(]))[\"'`]?(?P<value>[^\s\"'`]{3,}?)[\"'`]?\s+(?:is|was|as)\s+"
    r"(?:my|the|our|their|his|her|your|a)\s+(?:[\w-]+\s+){0,2}?(?:password|passcode|"
    r"passphrase|pin|pin code|secret)(?=\s*(?:[.,;:!?)]|$|\s+(?:and|but|so|for|on|at|to|"
    r"everywhere|too)\b))",
    re.IGNORECASE,
)
# Words that follow "password is" without being one ("my password is weak"), and the
# small words that start a phrase about a password rather than the password itself.
_NOT_A_VALUE = frozenset(
    """
    weak strong long short secure insecure safe unsafe same different expired expiring
    changed change changing reset resetting forgotten forgot lost stored saved required
    needed wrong correct incorrect invalid new old simple complex complicated hard easy
    the that this these those my your his her our their its a an any some one not never
    always manager managers protected hidden unknown private public too so very really
    still just also again already now in on at of for to from with by and or but if is
    was be been being are were has have had do does did will would should could can may
    might must shall reused reuse shared stolen leaked compromised hacked locked blocked
    case-sensitive sensitive written printed encrypted hashed set sent asked requested
    here there what which who whom whose when where why how all both each every either
    neither no none nothing something anything everything nobody somebody anybody
    everybody field box prompt screen page form policy policies rules rule requirements
    requirement hint hints reminder recovery generator vault strength length complexity
    expiry expiration update updates rotation history it them me you him us about like
    please thanks ok okay yes yeah nope fine good bad great terrible horrible typed
    entered needs need used use using login logins account accounts somewhere gone done
    """.split()  # noqa: SIM905 - a word list reads better as prose
)


def _credential_value(value: str, *, linked: bool) -> bool:
    """Whether the word after (or before) a credential word is the credential itself."""
    core = value.strip(".,;:!?)(]}[{")
    if len(core) < 3 or core.casefold() in _NOT_A_VALUE:
        return False
    # Without "is" or ":", a word of letters only is a phrase about a password ("password
    # reset link", "passcode feature"), not one.
    return linked or not core.isalpha()


def _overlapping(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Every match, including those starting inside an earlier one: "password is weak,
    password: hunter22" must not lose the second to the first."""
    position = 0
    while position < len(text):
        match = pattern.search(text, position)
        if match is None:
            return
        yield match
        position = match.start() + 1


def _config_assignment(match: re.Match[str]) -> bool:
    name = match.group("name")
    # "token: 5000" in prose is not a config line; "DB_PASSWORD: x" and "api.key=x" are.
    return match.group("op") != ":" or bool(re.search(r"[_.\"'-]", name)) or name.isupper()


def _credentials(text: str) -> Iterator[tuple[int, int]]:
    for match in _overlapping(_ASSIGNED, text):
        if _config_assignment(match) and match.group("value").casefold() not in _NOT_A_VALUE:
            yield match.span("value")
    for match in _overlapping(_CREDENTIAL_STATED, text):
        value = match.group("value")
        if _credential_value(value, linked=bool(match.group("link").strip())):
            start = match.start("value")
            yield start, start + len(value.rstrip(".,;:!?)"))
    for match in _overlapping(_NUMBER_STATED, text):
        yield match.span("value")
    for match in _overlapping(_VALUE_FIRST, text):
        if _credential_value(match.group("value"), linked=True):
            yield match.span("value")


# ---- government ids ----------------------------------------------------------------------

_US_SSN = re.compile(r"(?<!\d)(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?!\d)")
_SSN_WORDS = re.compile(
    r"\b(?:ssn|social security(?: number| no\.?)?)\b\D{0,12}(?P<value>\d{9})(?!\d)", re.I
)
_UK_NINO = re.compile(
    r"\b(?![DFIQUV])[A-CEGHJ-PR-TW-Z](?![DFIQUVO])[A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b"
)
_INDIA_PAN = re.compile(r"\b[A-Z]{3}[PCHABGJLFTE][A-Z]\d{4}[A-Z]\b")
_AADHAAR_CANDIDATE = re.compile(r"(?<!\d)[2-9]\d{3}[ -]?\d{4}[ -]?\d{4}(?!\d)")
_IBAN_CANDIDATE = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
_ID_WORDS = re.compile(
    r"\b(?:passport|social security|ssn|national (?:id|insurance)|driver'?s? licen[cs]e|"
    r"tax (?:id|number)|aadhaa?r|id number|id card|personalausweis|dni|nif|medicare|bsn|"
    r"social insurance|sin number|codice fiscale|steuer-?id)\b[^\n]{0,24}?"
    r"(?P<value>[A-Z0-9][A-Z0-9 -]{5,18}[A-Z0-9])",
    re.IGNORECASE,
)
_BANK_ACCOUNT_WORDS = re.compile(
    r"\b(?:bank |checking |savings |current )?(?:account|acct|a/c)\s*(?:number|no\.?|num|#)"
    r"\s*(?:is|was|:)?\s*(?P<value>\d(?:[ -]?\d){5,16})(?!\d)|\brouting (?:number|no\.?)\s*"
    r"(?:is|:)?\s*(?P<routing>\d{9})(?!\d)|\bsort code\s*(?:is|:)?\s*(?P<sort>\d{2}-\d{2}-\d{2})",
    re.IGNORECASE,
)

_DATE = re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b")

# Verhoeff tables: Aadhaar numbers carry a Verhoeff check digit.
_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8),
    (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2),
    (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0),
    (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5),
    (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)


def _verhoeff_valid(digits: str) -> bool:
    check = 0
    for index, char in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[index % 8][int(char)]]
    return check == 0


def _iban_valid(candidate: str) -> bool:
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    numeric = "".join(str(int(char, 36)) for char in rearranged)
    return int(numeric) % 97 == 1


def _government_ids(text: str) -> Iterator[tuple[int, int]]:
    for pattern in (_US_SSN, _UK_NINO, _INDIA_PAN):
        for match in pattern.finditer(text):
            yield match.span()
    for match in _SSN_WORDS.finditer(text):
        yield match.span("value")
    for match in _AADHAAR_CANDIDATE.finditer(text):
        if _verhoeff_valid(re.sub(r"[ -]", "", match.group())):
            yield match.span()
    for match in _overlapping(_ID_WORDS, text):
        value = match.group("value")
        # "passport renewal due 2027-03-01" names a date, not the passport's number.
        if sum(char.isdigit() for char in value) >= 5 and not _DATE.search(value):
            yield match.span("value")


def _bank_accounts(text: str) -> Iterator[tuple[int, int]]:
    for match in _IBAN_CANDIDATE.finditer(text):
        if _iban_valid(match.group()):
            yield match.span()
    for match in _BANK_ACCOUNT_WORDS.finditer(text):
        group = next(g for g in ("value", "routing", "sort") if match.group(g))
        yield match.span(group)


_DETECTORS: tuple[tuple[str, Callable[[str], Iterable[tuple[int, int]]]], ...] = (
    (CARD, _cards),
    (TOKEN, _tokens),
    (CREDENTIAL, _credentials),
    (GOVERNMENT_ID, _government_ids),
    (BANK_ACCOUNT, _bank_accounts),
)


def find_secrets(text: str) -> list[FoundSecret]:
    """Every secret in `text`, in order, with spans in `normalise_for_detection(text)`.

    Overlapping finds are merged into one (a card number that is also an Aadhaar-shaped
    number is one secret, named by the first detector that saw it)."""
    normalised = normalise_for_detection(text)
    # A secret masked already is no secret: "password: [secret withheld]" holds none.
    masks = [(m.start(), m.end()) for m in re.finditer(re.escape(WITHHELD), normalised)]
    spans: list[tuple[int, int, str]] = []
    for kind, detector in _DETECTORS:
        spans.extend(
            (start, end, kind)
            for start, end in detector(normalised)
            if end > start and not any(a <= start < b for a, b in masks)
        )
    spans.sort(key=lambda span: (span[0], -span[1]))
    merged: list[FoundSecret] = []
    for start, end, kind in spans:
        if merged and start < merged[-1].end:
            last = merged[-1]
            if end > last.end:
                merged[-1] = FoundSecret(last.kind, last.start, end, normalised[last.start : end])
            continue
        merged.append(FoundSecret(kind, start, end, normalised[start:end]))
    return merged


def find_secret(text: str) -> str | None:
    """The kind of the first secret `text` seems to hold, or None. Pure and cheap: runs on
    every write."""
    normalised = normalise_for_detection(text)
    if WITHHELD in normalised:  # what was masked already is not counted again
        found = find_secrets(text)
        return found[0].kind if found else None
    for kind, detector in _DETECTORS:
        if next(iter(detector(normalised)), None) is not None:
            return kind
    return None


# ---- masking: every stored copy keeps the sentence, never the secret ------------------------


def _reader_view(text: str) -> tuple[str, list[int]]:
    """`text` normalised one character at a time, with the index in `text` each character
    of the result came from (a fullwidth digit, a ligature or a removed zero-width space
    map back to where they were written)."""
    seen: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        for folded in unicodedata.normalize("NFKC", char):
            if unicodedata.category(folded) in _INVISIBLE_CATEGORIES or folded in _EXTRA_INVISIBLE:
                continue
            seen.append(folded)
            origin.append(index)
    return "".join(seen), origin


def secret_values(texts: Iterable[str]) -> tuple[str, ...]:
    """The value of every secret these texts hold (what `known` takes in `mask_secrets`)."""
    return tuple(dict.fromkeys(found.value for text in texts for found in find_secrets(text)))


def mask_secrets(text: str, known: Iterable[str] = ()) -> str:
    """`text` with the value of every secret in it replaced by WITHHELD and every other
    character as it was written: "my card is 4111 1111 1111 1111, I live in Pune" is kept
    as "my card is [secret withheld], I live in Pune". Idempotent.

    `known`: secret values said beside it (a reply repeating the password its question
    gave, "Got it: sunflower123", holds no word that marks it as one), masked wherever
    they appear. Spans are found where `find_secrets` finds them (the reader's view);
    where that view cannot be mapped back character by character (a composed accent),
    the masked reader's view is returned instead: the secret is never kept for a glyph."""
    masked = _mask_found(text)
    for value in known:
        if len(value) >= _KNOWN_MIN and value in masked:
            masked = masked.replace(value, WITHHELD)
    return masked


# A known value shorter than this ("123") is too common to mask wherever it appears.
_KNOWN_MIN = 4


def _mask_found(text: str) -> str:
    found = find_secrets(text)
    if not found:
        return text
    view, origin = _reader_view(text)
    normalised = normalise_for_detection(text)
    if view == normalised:
        masked, source = text, [(origin[s.start], origin[s.end - 1] + 1) for s in found]
    else:
        masked, source = normalised, [(s.start, s.end) for s in found]
    for start, end in reversed(source):  # from the end, so earlier spans stay where they are
        masked = masked[:start] + WITHHELD + masked[end:]
    return masked


def holds_withheld(text: str) -> bool:
    """Whether `text` carries a masked secret: nothing learned from it may keep the mark."""
    return WITHHELD in text


# ---- keeping what is not a secret ----------------------------------------------------------

# Clause boundaries: sentence ends, commas and semicolons, and the conjunctions that join
# two statements ("my PIN is 4821 and I'm allergic to peanuts").
_CLAUSE_BREAK = re.compile(
    r"(?:[.;!?]+|,)\s+|\s+(?:and|but|also|plus|while|whereas|though|although)\s+|\s*[\n;]\s*",
    re.IGNORECASE,
)


def without_secrets(text: str) -> str:
    """`text` without the clauses that hold a secret: the facts beside a secret are kept,
    the secret never. "" when nothing but the secret was said."""
    normalised = normalise_for_detection(text)
    found = find_secrets(normalised)
    if not found:
        return text
    kept: list[str] = []
    start = 0
    breaks = [*_CLAUSE_BREAK.finditer(normalised), None]
    for boundary in breaks:
        end = boundary.start() if boundary is not None else len(normalised)
        if not any(secret.start < end and secret.end > start for secret in found):
            clause = normalised[start:end].strip(" ,;")
            if clause:
                kept.append(clause)
        if boundary is not None:
            start = boundary.end()
    joined = ", ".join(kept)
    return joined[:1].upper() + joined[1:] if joined and joined[0].islower() else joined


def repeats_secret(text: str, secrets: Iterable[str]) -> bool:
    """Whether `text` restates any of these secret values, even without the words that gave
    it away ("Has PIN 4821" from "my PIN is 4821"), or with other spacing."""
    normalised = normalise_for_detection(text)
    compact = _compact(normalised)
    for value in secrets:
        value_compact = _compact(normalise_for_detection(value))
        if value in normalised or (len(value_compact) >= 4 and value_compact in compact):
            return True
    return False


def _compact(text: str) -> str:
    return "".join(char for char in text.casefold() if char.isalnum())
