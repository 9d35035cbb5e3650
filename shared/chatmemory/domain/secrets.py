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

import base64
import binascii
import itertools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

CARD = "payment card number"
TOKEN = "key or access token"  # noqa: S105 - a kind of secret, not one
CREDENTIAL = "password or other credential"
SECURITY_ANSWER = "security answer"
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
    if text.isascii():  # NFKC leaves ASCII as it is, and nothing in it is invisible
        return text
    folded = unicodedata.normalize("NFKC", text)
    return "".join(
        char
        for char in folded
        if unicodedata.category(char) not in _INVISIBLE_CATEGORIES and char not in _EXTRA_INVISIBLE
    )


# Detectors read letters as a reader does, one character for one (so spans stay those of
# `normalise_for_detection`): a Latin letter without its accent ("contraseña" is
# "contrasena"), and a Cyrillic or Greek lookalike inside a Latin word as the Latin letter
# it passes for ("password" typed with a Cyrillic "a", U+0430). A word wholly in another
# script is left as it is written.
def _latin_base(char: str) -> str:
    base = unicodedata.normalize("NFD", char)[0]
    return base if base.isascii() and base.isalpha() else char


_ACCENTS = {
    code: base for code in range(0xC0, 0x250) if (base := _latin_base(chr(code))) != chr(code)
}
_LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁԛԝһкмтвАВЕКМНОРСТХУІЈЅαοιϲκνρτυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧıɑɡ",
    "aeopcyxijsdqwhkmtbABEKMHOPCTXYIJSaoicknptuxeABEZHIKMNOPTYXiag",
)
_LOOKALIKE_CHAR = re.compile("[" + "".join(chr(code) for code in _LOOKALIKES) + "]")
_LETTERS = re.compile(r"[^\W\d_]+")


def _unmasked(word: re.Match[str]) -> str:
    text = word.group()
    if any(char.isascii() for char in text) and _LOOKALIKE_CHAR.search(text):
        return text.translate(_LOOKALIKES)
    return text


def reader_letters(normalised: str) -> str:
    """`normalised` (from `normalise_for_detection`) as the detectors read it (see above):
    the same length, so a span in one is the same span in the other."""
    if normalised.isascii():
        return normalised
    folded = normalised.translate(_ACCENTS)
    if _LOOKALIKE_CHAR.search(folded) is None:
        return folded
    return _LETTERS.sub(_unmasked, folded)


# ---- payment cards: 13..19 digits from a card network's range that pass Luhn ------------

# Digit groups joined by at most one separator each: spaces, dashes, dots, slashes, "_".
_ANY_DIGIT = re.compile(r"\d")
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


# Every shape above is a run of 14 characters or more, a URL, or a key block's dashes:
# text without any is not read further (most text is ordinary; this runs on every write).
_LONG_RUN = re.compile(r"\S{14,}")


def _tokens(text: str) -> Iterator[tuple[int, int]]:
    if "-----" not in text and "://" not in text and _LONG_RUN.search(text) is None:
        return
    for match in _TOKEN_SHAPES.finditer(text):
        yield match.span("url_password") if match.group("url_password") else match.span()
    for match in _BARE_40.finditer(text):
        if _bare_cloud_secret(match.group()):
            yield match.span()


# ---- secrets written in base64, and random-looking tokens beside a credential's word -------

_BLOB = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{8,}={0,2}(?![\w+/=-])")
_ENCODED_HINT = re.compile(r"[0-9+/=]|[a-z][A-Z]")
_PRINTABLE_EXTRA = frozenset("\n\r\t")


def _decoded(blob: str) -> str | None:
    """The text a base64 blob (standard or URL-safe) decodes to, if it is text at all."""
    core = blob.rstrip("=")
    if len(core) % 4 == 1 or not _ENCODED_HINT.search(blob):
        return None
    padded = core.replace("-", "+").replace("_", "/") + "=" * (-len(core) % 4)
    try:
        text = base64.b64decode(padded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    if len(text.strip()) < 4 or not all(c.isprintable() or c in _PRINTABLE_EXTRA for c in text):
        return None
    return text


def _encoded(text: str) -> Iterator[tuple[int, int, str]]:
    """Blobs that decode to something holding a secret ("cGFzc3dvcmQ6IGh1bnRlcjI=" is
    "password: hunter2"), with the kind of what they hold."""
    for match in _BLOB.finditer(text):
        decoded = _decoded(match.group())
        kind = _first_kind(normalise_for_detection(decoded), encoded=False) if decoded else None
        if kind is not None:
            yield match.start(), match.end(), kind


_BESIDE_CREDENTIAL = re.compile(
    r"p[a@4][s$5][s$5](?:w[o0]rd|wd|phrase)|\bpwd?\b|secret|token|api[\s_-]?key|apikey|"
    r"access[\s_-]?key|private[\s_-]?key|credentials?|\bcreds\b|\bauth\b|\blog-?in\b|"
    r"\bkey\s*(?:is|=|:)|\bcle\b|\bclave\b|schlussel|\bchave\b|密钥|密码|令牌",
    re.IGNORECASE,
)
_LONG_TOKEN = re.compile(r"(?<![\w+/=.~-])[A-Za-z0-9+/=_.~-]{16,}(?![\w+/=.~-])")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")


def _random_looking(token: str) -> bool:
    """A token no one would type as a word: hex of 32 and more, or letters of both cases
    and digits switching often ("Zm9vYmFyYmF6cXV4MTIz", not "ProjectAlpha2024Beta")."""
    if _HEX.fullmatch(token):
        return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
    # Signs between words ("Marigold-Ferry-2291") are not switches: a passphrase of words
    # is a credential by its word ("password is …"), never random-looking by itself.
    classes = [0 if c.isupper() else 1 if c.islower() else 2 for c in token if c.isalnum()]
    if not {0, 1, 2} <= set(classes):
        return False
    switches = sum(1 for a, b in itertools.pairwise(classes) if a != b)
    return switches / len(token) >= 0.3


def _tokens_beside_credentials(text: str) -> Iterator[tuple[int, int]]:
    for match in _LONG_TOKEN.finditer(text):
        token = match.group().rstrip(".~-")  # a sentence's full stop is not the token's
        if not _random_looking(token.strip("=.~-")):
            continue
        before = text[max(0, match.start() - 48) : match.start()]
        after = text[match.end() : match.end() + 24]
        if _BESIDE_CREDENTIAL.search(before) or _BESIDE_CREDENTIAL.search(after):
            yield match.start(), match.start() + len(token)


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

# Credential words that a value follows ("my PIN is 4821", "wifi password: soleil"), in
# the languages people write them in. Detectors read the reader's letters (`reader_letters`:
# accents and lookalike letters folded, one character for one), so "contraseña" is matched
# as "contrasena" and a Cyrillic "a" (U+0430) in "password" hides nothing; "p@ssword",
# "pw" and "pwd" are the same word.
_LOGIN_NOUNS_RE = (
    r"p[a@4][s$5][s$5](?:w[o0]rd|wd|c[o0]de|phrase)s?|pwd|pw|p/w|pword|passwort|kennwort|"
    r"mot de passe|mdp|contrasena|senha|wachtwoord|haslo|parola d'ordine|пароль|पासवर्ड"
)
# Written without spaces between words, so never between word boundaries.
_CJK_LOGIN = r"密码|密碼|口令|パスワード|암호|비밀번호"
_KEY_NOUNS_RE = (
    r"secret\s+(?:access\s+)?key|secret\s+token|client\s+secret|api[\s_-]?key|"
    r"access[\s_-]?(?:key|token)|auth(?:entication)?[\s_-]?(?:token|key)|bearer token|"
    r"refresh token|private key|recovery (?:key|code)s?|backup codes?|seed phrase|"
    r"recovery phrase|mnemonic(?: phrase)?|cle (?:secrete|privee|d'api|api)|"
    r"clave (?:secreta|privada|de api)|chave (?:secreta|privada|de api)|"
    r"(?:geheimer|privater) schlussel|api-schlussel"
)
# "clave" is a password and also "the key to" something: its value must hold a digit or
# a sign ("mi clave es gato99"), never a word ("la clave es practicar").
_WEAK_NOUNS_RE = r"clave"
# Words whose value is a number. "PIN code 560001" is an Indian postal code, not a PIN.
_NUMERIC_WORDS = (
    r"pin(?!\s*code\s*(?:is\s*|:\s*)?[1-8]\d{5}(?!\d))(?:\s*(?:code|number|no\.?))?|"
    r"cvv2?|cvc2?|csc|security code|otp|one[- ]time (?:code|password|pin)|"
    r"(?:verification|confirmation|login|log-in|sign-in|2fa|mfa|two[- ]factor|"
    r"auth(?:entication)?|sms|access|door|gate|alarm|garage|entry|unlock|lock|locker|safe|"
    r"padlock|keypad|key ?safe|key ?box|lock ?box|intercom|buzzer|bike lock|"
    r"(?:front|back|main|apartment|flat|building|house) door)\s+(?:code|pin|combination|combo)|"
    r"combination|"
    # "Front door: 4821", "keypad = 4821#", "the door opens with 4821"
    r"(?:(?:front|back|main|building|apartment|flat|house|garage|entry|entrance)\s+door|"
    r"keypad|lock ?box|key ?safe|padlock)(?=\s*[:=])|"
    r"(?:door|gate|lock|safe|padlock|locker)\s+(?:opens|unlocks)\s+with|"
    # "the code for the front door", "the code to get into my flat"
    r"code\s+(?:for|to|of|on)\s+(?:(?:get(?:ting)?\s+in(?:to)?|open(?:ing)?|unlock(?:ing)?|"
    r"enter(?:ing)?)\s+)?(?:the|my|our|his|her|their|your)\s+(?:[\w-]+\s+)?(?:door|gate|"
    r"building|flat|apartment|house|garage|alarm|safe|locker|lockbox|keypad|padlock|bike|"
    r"shed|office)|"
    # French, Spanish, Portuguese, German, Hindi
    r"code (?:pin|secret|d'acces|confidentiel)|digicode|code (?:de|du) (?:la |l')?(?:porte|"
    r"portail|immeuble|alarme|coffre|cadenas|garage|carte)|"
    r"codigo (?:pin|secreto|de acceso|de acesso|de seguridad|de seguranca|de verificacion|"
    r"de verificacao)|codigo (?:de|del|da|do) (?:la |el |a |o )?(?:puerta|porton|portao|"
    r"portal|alarma|alarme|caja fuerte|cofre|garaje|garagem|edificio|predio|candado|cadeado)|"
    r"clave|turcode|torcode|zugangscode|alarmcode|tresorcode|geheimzahl|pin-?(?:code|nummer)|"
    r"पिन(?!\s*कोड\s*(?:है\s*|:\s*)?[1-8]\d{5}(?!\d))(?:\s*(?:कोड|नंबर))?|ओटीपी|"
    r"(?:दरवाज\S{0,2}|गेट|ताले|लॉकर|अलार्म)\s+का\s+कोड"
)
_CJK_NUMERIC = r"验证码|驗證碼|门禁码|门禁密码|开门密码|取件码|暗証番号"
_LINK = (
    r"(?:\s*(?:(?:is|was|will be|is now|are|est|etait|sera|es|era|ist|war|lautet|e|hai|tha)\b|"
    r"=|:|->|это|是|为|為|は|는|है|था))?"
)
# Whose it is: "for my bank", "for his card", "of their wifi", "do banco", "du wifi".
_OWNER = (
    r"(?:(?:\s+(?:for|to|of|on|de|del|do|da|du|des|pour|para|fur|von|vom|zum|zur|ka|ki|ke|"
    r"का|की|के)\s+(?:(?:their|the|my|our|his|her|your|its|an|a|la|le|les|el|mi|ma|mon|meu|"
    r"minha|o|mein|meine|meinem|meiner|der|die|das|dem|mera|meri|mere|मेरा|मेरी|मेरे)\s+)?"
    r"(?:l')?[\w.@-]+|\s+(?:meiner|meines|deiner|deines|seiner|seines|ihrer|ihres|unserer)\s+"
    r"[\w.@-]+){0,2})?"
)
# "my password in base64 is …": the value is the password, however it is written down.
_ENCODED = (
    r"(?:\s+(?:in|as|en|em|auf|como)\s+(?:base-?64|b64|hex|hexadecimal|binary|encoded\s+form))?"
)
_CREDENTIAL_STATED = re.compile(
    rf"(?:\b(?:(?P<word>{_LOGIN_NOUNS_RE}|{_KEY_NOUNS_RE})|(?P<weak>{_WEAK_NOUNS_RE}))\b|"
    rf"(?:{_CJK_LOGIN})){_OWNER}{_ENCODED}(?P<link>{_LINK})\s*"
    rf"[\"'`«“]?(?P<value>[^\s\"'`»”]{{3,}})",
    re.IGNORECASE,
)
_NUMBER_STATED = re.compile(
    rf"(?:\b(?:{_NUMERIC_WORDS})\b|(?:{_CJK_NUMERIC})){_OWNER}{_LINK}\s*[\"'`#]?"
    rf"(?P<value>\d(?:[ -]?\d){{2,9}})(?!\d)",
    re.IGNORECASE,
)
# The value before the word: "I log in with sunflower123 as my password", "hunter2 is my
# password", "use 4821 as the PIN" — the word ending the clause, so "… is my password
# manager" is about a manager.
_VALUE_FIRST = re.compile(
    r"(?:^|(?<=[\s\"'`(]))[\"'`]?(?P<value>[^\s\"'`]{3,}?)[\"'`]?\s+(?:is|was|as)\s+"
    r"(?:my|the|our|their|his|her|your|a)\s+(?:[\w-]+\s+){0,2}?(?:p[a@4][s$5][s$5](?:w[o0]rd|"
    r"c[o0]de|phrase)|pw|pwd|pin|pin code|secret)(?=\s*(?:[.,;:!?)]|$|\s+(?:and|but|so|for|"
    r"on|at|to|everywhere|too)\b))",
    re.IGNORECASE,
)
# A login written as "user / password" after the word for it: "Login for the bank:
# alice / hunter2", "creds: bob@example.com/Tr0ub4dor", "user: alice pass: hunter2".
_LOGIN_PAIR = re.compile(
    r"(?:\b(?:log(?:-|\s)?ins?|logon|sign(?:-|\s)?in|credentials?|creds|user\s*(?:name)?\s*"
    r"(?:and|&|/|\+)\s*pass(?:word)?|identifiants?|credenciales|credenciais|zugangsdaten|"
    r"anmeldedaten|acceso|acesso|लॉगिन)\b|(?:登录|登入|账号|帳號))"
    r"[^:\n=]{0,40}?[:=]\s*(?P<user>[\w.@+-]{2,64})\s*(?:/|\|)\s*(?P<value>[^\s,;]{3,})|"
    r"\buser(?:name)?\s*[:=]\s*(?P<user2>[\w.@+-]{2,64})\s*[,;]?\s*(?:pass|pw|pwd)\s*[:=]\s*"
    r"(?P<value2>[^\s,;]{3,})",
    re.IGNORECASE,
)
_TIME_OF_DAY = re.compile(r"\d{1,2}(?:[:.h]\d{2})?\s*(?:am|pm|h)?", re.IGNORECASE)
# The answer to a security question is a password by another name: "the answer to my
# security question is Rex", "my mother's maiden name is Fernandes", "memorable word".
_SECURITY_WORDS = (
    r"answer\s+to\s+(?:my|the|our|his|her|their|your)\s+(?:[\w-]+\s+){0,2}?security\s+"
    r"questions?|security\s+(?:question\s+)?answers?|secret\s+answer|"
    r"memorable\s+(?:word|phrase|answer|name|place|date|information|info)|"
    r"(?:mother|mum|mom|mam|mama|mommy|mummy)'?s\s+maiden\s+name|"
    r"maiden\s+name\s+of\s+(?:my|his|her|your)\s+mother|"
    r"reponse\s+(?:a|de)\s+(?:ma|la)\s+question\s+(?:secrete|de\s+securite)|reponse\s+secrete|"
    r"nom\s+de\s+jeune\s+fille\s+de\s+(?:ma|ta|sa)\s+mere|mot\s+memorable|"
    r"respuesta\s+(?:a|de)\s+(?:mi|la)\s+pregunta\s+(?:secreta|de\s+seguridad)|"
    r"respuesta\s+secreta|apellido\s+de\s+soltera\s+de\s+(?:mi|tu|su)\s+(?:madre|mama)|"
    r"antwort\s+auf\s+(?:meine|die)\s+sicherheitsfrage|sicherheitsantwort|geheimantwort|"
    r"(?:madchenname|geburtsname)\s+(?:meiner|deiner|seiner|ihrer)\s+mutter|"
    r"resposta\s+(?:a|da|de|para)\s+(?:minha\s+|a\s+)?pergunta\s+(?:secreta|de\s+seguranca)|"
    r"resposta\s+secreta|nome\s+de\s+solteira\s+da\s+(?:minha|sua|tua)\s+mae|"
    r"security\s+question\s+ka\s+(?:answer|jawab)|(?:maa|mummy|mom)\s+ka\s+maiden\s+name|"
    r"सुरक्षा\s+प्रश्न\s+का\s+(?:उत्तर|जवाब)"
)
# A word every security phrase above holds: text without one is not read further.
_SECURITY_HINTS = (
    "answer",
    "maiden",
    "memorable",
    "reponse",
    "respuesta",
    "antwort",
    "resposta",
    "madchen",
    "geburtsname",
    "jeune fille",
    "soltera",
    "solteira",
    "jawab",
    "सुरक्षा",
    "答案",
    "娘家",
    "旧姓",
)
_CJK_SECURITY = r"密保(?:问题)?的?答案|安全问题的?答案|母亲的娘家姓|母親の旧姓|秘密の質問の答え"
_SECURITY_STATED = re.compile(
    rf"(?:\b(?:{_SECURITY_WORDS})(?!\w)|(?:{_CJK_SECURITY})){_OWNER}(?P<link>{_LINK})\s*"
    rf"[\"'`«“]?(?P<value>[^\s\"'`»”.,;!?。]{{2,}}(?:\s+(?-i:[A-Z])[^\s\"'`»”.,;!?]*){{0,3}})"
    rf"(?P<after>\s+(?:hai|है|tha|था)\b)?",
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
    yesterday today tomorrow again later soon question questions answer answers name
    """.split()  # noqa: SIM905 - a word list reads better as prose
) | frozenset(
    # the same small words in French, Spanish, German, Portuguese and Hinglish, as the
    # detectors read them (accents folded)
    """
    trop tres faible fort forte court longue complique securise oublie perdu nouveau
    nouvelle ancien ancienne le la les un une mon ma mes ton ta tes son sa ses dans sur pas
    encore toujours deja aussi expire demasiado muy debil fuerte corto corta largo larga
    facil dificil seguro segura olvide perdi cambie nuevo nueva viejo vieja el los las mi
    mis tu tus su sus en de del ya aun siempre tambien caduco zu sehr schwach stark kurz
    einfach sicher vergessen verloren geandert neu der die das ein eine mein meine dein
    deine nicht noch schon immer auch abgelaufen muito fraca fraco curto longo esqueci
    mudei novo antiga antigo os as um uma meu minha seu sua nao ja ainda sempre expirou
    bahut kamzor yaad bhool nahi kya
    """.split()  # noqa: SIM905
)


def _lettered(word: str) -> bool:
    """Letters only, counting the marks written on them (Hindi's vowel signs: "बहुत")."""
    return all(char.isalpha() or unicodedata.category(char)[0] == "M" for char in word)


def _credential_value(value: str, *, linked: bool) -> bool:
    """Whether the word after (or before) a credential word is the credential itself."""
    core = value.strip(".,;:!?)(]}[{")
    if len(core) < 3 or core.casefold() in _NOT_A_VALUE:
        return False
    # Without "is" or ":", a word of letters only is a phrase about a password ("password
    # reset link", "passcode feature"), not one.
    return linked or not _lettered(core)


def _linked(link: str) -> bool:
    # Portuguese "é" reads as "e" ("and" in Portuguese and Italian) once accents are
    # folded: after it only a value with a digit or a sign counts.
    return link.strip().casefold() not in ("", "e")


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


def _login_value(user: str, value: str) -> bool:
    """Whether "user / value" after a login word is a username and its password, not two
    options ("Login options: Google / Apple") or two times ("9am / 5pm")."""
    core = value.strip(".,;:!?)(]}[{")
    if len(core) < 3 or core.casefold() in _NOT_A_VALUE or _TIME_OF_DAY.fullmatch(core):
        return False
    if "." in user and "@" not in user:  # "example.com/account" is a page, not a login
        return False
    return not _lettered(core) or any(char == "@" or char.isdigit() for char in user)


def _credentials(text: str) -> Iterator[tuple[int, int]]:
    assigned = "=" in text or ":" in text
    for match in _overlapping(_ASSIGNED, text) if assigned else ():
        if _config_assignment(match) and match.group("value").casefold() not in _NOT_A_VALUE:
            yield match.span("value")
    for match in _overlapping(_CREDENTIAL_STATED, text):
        value = match.group("value")
        linked = _linked(match.group("link")) and not match.group("weak")
        if _credential_value(value, linked=linked):
            start = match.start("value")
            yield start, start + len(value.rstrip(".,;:!?)"))
    for match in _overlapping(_NUMBER_STATED, text) if _ANY_DIGIT.search(text) else ():
        yield match.span("value")
    for match in _overlapping(_VALUE_FIRST, text):
        if _credential_value(match.group("value"), linked=True):
            yield match.span("value")
    for match in _LOGIN_PAIR.finditer(text) if assigned else ():
        group = "value" if match.group("value") else "value2"
        user = match.group("user") or match.group("user2")
        if _login_value(user, match.group(group)):
            start = match.start(group)
            yield start, start + len(match.group(group).rstrip(".,;:!?)"))


def _security_answers(text: str) -> Iterator[tuple[int, int]]:
    lowered = text.casefold()
    if not any(word in lowered for word in _SECURITY_HINTS):
        return
    for match in _overlapping(_SECURITY_STATED, text):
        core = match.group("value").strip(".,;:!?)(]}[{")
        first = core.split()[0].casefold() if core.split() else ""
        # Said with "is" or ":" ("… is Rex"), or Hindi's closing "hai" ("… Rex hai").
        stated = bool(match.group("link").strip()) or bool(match.group("after"))
        if stated and len(core) >= 2 and first not in _NOT_A_VALUE:
            yield match.span("value")


# ---- numbers spelled out in words: "four one one one …", "my PIN is four eight two one" ----

# Digit names as people read numbers aloud (English, French, Spanish, German, Portuguese,
# romanised Hindi), accents folded as the detectors see them. A run of them means nothing
# alone: it is a card when 13..19 of them pass Luhn, a code when a code's word precedes it.
_DIGIT_NAMES = {
    "0": "zero oh nought nil cero null shunya",
    "1": "one un uno eins um ek",
    "2": "two deux dos zwei zwo dois duas do",
    "3": "three trois tres drei teen",
    "4": "four quatre cuatro vier quatro char chaar",
    "5": "five cinq cinco funf paanch panch",
    "6": "six seis sechs chhe chhah",
    "7": "seven sept siete sieben sete saat",
    "8": "eight huit ocho acht oito aath",
    "9": "nine neuf nueve neun nove nau",
}
_DIGIT_OF = {name: digit for digit, names in _DIGIT_NAMES.items() for name in names.split()}
_TIMES = {"double": 2, "triple": 3}
_SPOKEN = re.compile(r"\w+")
# What may stand between two digits read aloud: "four one", "four-one", "four, one".
_BETWEEN_DIGITS = re.compile(r"[\s,.-]*")
# A code's word just before a spelled run: "door code four eight two one".
_SPELLED_CONTEXT = re.compile(
    rf"(?:\b(?:{_NUMERIC_WORDS}|{_LOGIN_NOUNS_RE})\b|(?:{_CJK_NUMERIC}|{_CJK_LOGIN}))"
    rf"{_OWNER}{_LINK}\s*[\"'`#]?\s*$",
    re.IGNORECASE,
)


def _spelled_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, digits) of every run of three or more digits read aloud in a row,
    named in words at least once (plain digit groups are the card detector's); "double
    four" is "44"."""
    start = end = 0
    digits = ""
    named = False
    times = 1
    for word in _SPOKEN.finditer(text):
        spoken = word.group().casefold()
        digit = _DIGIT_OF.get(spoken) or (spoken if spoken.isdigit() and len(spoken) < 5 else None)
        going = (digits or times > 1) and _BETWEEN_DIGITS.fullmatch(text, end, word.start())
        if not going and (digit is not None or spoken in _TIMES):
            if named and len(digits) >= 3:
                yield start, end, digits
            start, digits, named, times = word.start(), "", False, 1
        if spoken in _TIMES:
            times, end = _TIMES[spoken], word.end()
        elif digit is not None:
            digits += digit * times
            named = named or not spoken.isdigit()
            times, end = 1, word.end()
        else:
            if named and len(digits) >= 3:
                yield start, end, digits
            digits, named, times = "", False, 1
    if named and len(digits) >= 3:
        yield start, end, digits


def _spelled_card(digits: str) -> bool:
    return any(
        _card_like(digits[start : start + length])
        for start in range(len(digits) - 12)
        for length in range(13, 20)
        if start + length <= len(digits)
    )


def _spelled_numbers(text: str) -> Iterator[tuple[int, int, str]]:
    for start, end, digits in _spelled_runs(text):
        if len(digits) >= 13 and _spelled_card(digits):
            yield start, end, CARD
        elif _SPELLED_CONTEXT.search(text, max(0, start - 80), start):
            yield start, end, CREDENTIAL


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
    if _ANY_DIGIT.search(text) is None:  # every id here holds digits
        return
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
    if _ANY_DIGIT.search(text) is None:  # every account number holds digits
        return
    for match in _IBAN_CANDIDATE.finditer(text):
        if _iban_valid(match.group()):
            yield match.span()
    for match in _BANK_ACCOUNT_WORDS.finditer(text):
        group = next(g for g in ("value", "routing", "sort") if match.group(g))
        yield match.span(group)


Detector = Callable[[str], Iterable[tuple[int, int, str]]]


def _of_kind(kind: str, detector: Callable[[str], Iterable[tuple[int, int]]]) -> Detector:
    def detect(text: str) -> Iterator[tuple[int, int, str]]:
        for start, end in detector(text):
            yield start, end, kind

    return detect


# In the order a kind is named when two detectors see the same value.
_DETECTORS: tuple[Detector, ...] = (
    _of_kind(CARD, _cards),
    _spelled_numbers,
    _of_kind(TOKEN, _tokens),
    _of_kind(CREDENTIAL, _credentials),
    _of_kind(TOKEN, _tokens_beside_credentials),
    _of_kind(SECURITY_ANSWER, _security_answers),
    _of_kind(GOVERNMENT_ID, _government_ids),
    _of_kind(BANK_ACCOUNT, _bank_accounts),
)


def _scan(normalised: str, *, encoded: bool = True) -> Iterator[tuple[int, int, str]]:
    """Every find of every detector, lazily, in `_DETECTORS` order (then blobs that
    decode to a secret), with spans in `normalised`."""
    seen = reader_letters(normalised)
    found = itertools.chain(*(detector(seen) for detector in _DETECTORS))
    for start, end, kind in itertools.chain(found, _encoded(seen) if encoded else ()):
        # A sentence's full stop or comma after a value is not part of it: the value is
        # what a reply repeating it bare is masked by ("Okay, hunter22 it is.").
        yield start, start + len(seen[start:end].rstrip(".,;:")), kind


def _first_kind(
    normalised: str, *, encoded: bool = True, kinds: Collection[str] | None = None
) -> str | None:
    for start, end, kind in _scan(normalised, encoded=encoded):
        if end > start and (kinds is None or kind in kinds):
            return kind
    return None


def find_secrets(text: str) -> list[FoundSecret]:
    """Every secret in `text`, in order, with spans in `normalise_for_detection(text)`.

    Overlapping finds are merged into one (a card number that is also an Aadhaar-shaped
    number is one secret, named by the first detector that saw it)."""
    normalised = normalise_for_detection(text)
    # A secret masked already is no secret: "password: [secret withheld]" holds none.
    masks = [(m.start(), m.end()) for m in re.finditer(re.escape(WITHHELD), normalised)]
    spans = [
        (start, end, kind)
        for start, end, kind in _scan(normalised)
        if end > start and not any(a <= start < b for a, b in masks)
    ]
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


def find_secret(text: str, kinds: Collection[str] | None = None) -> str | None:
    """The kind of the first secret `text` seems to hold, or None; with `kinds`, only a
    secret of those kinds counts. Pure and cheap: runs on every write."""
    normalised = normalise_for_detection(text)
    if WITHHELD in normalised:  # what was masked already is not counted again
        found = [s.kind for s in find_secrets(text) if kinds is None or s.kind in kinds]
        return found[0] if found else None
    return _first_kind(normalised, kinds=kinds)


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
