"""Secrets are never stored: card numbers, passwords, keys and tokens, government ids.

The detector prefers checksums and explicit shapes over guesses, so that ordinary facts
("born in 1990", "my flight is LH 760", a phone number) are not refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from chatmemory.domain.errors import SecretRefused

# ---- payment cards: 13..19 digits (spaces or dashes allowed) that pass Luhn ------------

_CARD_CANDIDATE = re.compile(r"(?<![\w])(?:\d[ -]?){12,18}\d(?![\w])")


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


def _has_card_number(text: str) -> bool:
    for match in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"[ -]", "", match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn_valid(digits):
            return True
    return False


# ---- passwords, PINs and other credentials stated in words ------------------------------

_CREDENTIAL_WORDS = (
    r"pass(?:word|wd|code|phrase)|pwd|pin(?:\s*code)?|passcode|otp|one[- ]time code|"
    r"security code|cvv|cvc|secret(?:\s*key)?|api[\s_-]?key|access[\s_-]?key|"
    r"auth(?:entication)?[\s_-]?token|bearer token|private key|"
    r"mot de passe|contraseña|passwort|пароль|密码|パスワード"
)
_CREDENTIAL_STATED = re.compile(
    rf"\b(?:{_CREDENTIAL_WORDS})\b\s*(?P<link>is|was|=|:|->|est|es|ist|это)?\s*"
    rf"[\"'`]?(?P<value>\S{{3,}})",
    re.IGNORECASE,
)
# Words that commonly follow "password is" without being one ("my password is weak").
_NOT_A_VALUE = frozenset(
    {
        "weak",
        "strong",
        "long",
        "short",
        "secure",
        "insecure",
        "safe",
        "same",
        "different",
        "expired",
        "changed",
        "reset",
        "forgotten",
        "lost",
        "stored",
        "saved",
        "required",
        "needed",
        "wrong",
        "correct",
        "incorrect",
        "new",
        "old",
        "simple",
        "complex",
        "hard",
        "easy",
        "the",
        "that",
        "this",
        "my",
        "your",
        "a",
        "an",
        "not",
        "never",
        "always",
        "manager",
        "managers",
        "protected",
        "hidden",
        "unknown",
        "private",
        "public",
        "too",
    }
)


def _has_stated_credential(text: str) -> bool:
    for match in _CREDENTIAL_STATED.finditer(text):
        value = match.group("value").strip("\"'`.,;:!?)(")
        if len(value) < 3 or value.casefold() in _NOT_A_VALUE:
            continue
        # "password: soleil" states one; "passcode feature" does not, unless it looks coded.
        if match.group("link") or not value.isalpha():
            return True
    return False


# ---- keys and tokens recognisable by shape ----------------------------------------------

_TOKEN_SHAPES = re.compile(
    r"|".join(
        (
            r"-----BEGIN (?:[A-Z ]+ )?PRIVATE KEY-----",
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
            r"\bsk-(?:ant-|proj-|live_|test_)?[A-Za-z0-9_-]{16,}\b",  # Anthropic / OpenAI / Stripe
            r"\b(?:rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b",  # Stripe
            r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",  # GitHub
            r"\bgithub_pat_[A-Za-z0-9_]{30,}\b",
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b",  # Slack
            r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google API key
            r"\bglpat-[A-Za-z0-9_-]{20,}\b",  # GitLab
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # a JWT
        )
    )
)


def _has_token(text: str) -> bool:
    return bool(_TOKEN_SHAPES.search(text))


# ---- government ids ----------------------------------------------------------------------

_US_SSN = re.compile(r"(?<!\d)(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?!\d)")
_UK_NINO = re.compile(
    r"\b(?![DFIQUV])[A-CEGHJ-PR-TW-Z](?![DFIQUVO])[A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b"
)
_INDIA_PAN = re.compile(r"\b[A-Z]{3}[PCHABGJLFTE][A-Z]\d{4}[A-Z]\b")
_AADHAAR_CANDIDATE = re.compile(r"(?<!\d)[2-9]\d{3}[ -]?\d{4}[ -]?\d{4}(?!\d)")
_IBAN_CANDIDATE = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
_ID_WORDS = re.compile(
    r"\b(?:passport|social security|ssn|national (?:id|insurance)|driver'?s? licen[cs]e|"
    r"tax (?:id|number)|aadhaa?r|id number|personalausweis|dni|nif)\b[^\n]{0,24}?"
    r"(?P<value>[A-Z0-9][A-Z0-9 -]{5,18}[A-Z0-9])",
    re.IGNORECASE,
)

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


def _has_government_id(text: str) -> bool:
    if _US_SSN.search(text) or _UK_NINO.search(text) or _INDIA_PAN.search(text):
        return True
    for match in _AADHAAR_CANDIDATE.finditer(text):
        if _verhoeff_valid(re.sub(r"[ -]", "", match.group())):
            return True
    if _ID_WORDS.search(text):
        for match in _ID_WORDS.finditer(text):
            if sum(char.isdigit() for char in match.group("value")) >= 5:
                return True
    return False


def _has_bank_account(text: str) -> bool:
    return any(_iban_valid(match.group()) for match in _IBAN_CANDIDATE.finditer(text))


_DETECTORS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("payment card number", _has_card_number),
    ("key or access token", _has_token),
    ("password or other credential", _has_stated_credential),
    ("government id number", _has_government_id),
    ("bank account number", _has_bank_account),
)


def find_secret(text: str) -> str | None:
    """The kind of secret `text` seems to hold, or None. Pure and cheap: runs on every write."""
    for kind, detector in _DETECTORS:
        if detector(text):
            return kind
    return None


def refuse_secrets(field: str, text: str) -> None:
    """Raise SecretRefused if `text` holds a secret; every write path calls this first."""
    kind = find_secret(text)
    if kind is not None:
        raise SecretRefused(field, kind)
