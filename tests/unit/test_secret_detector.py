"""Secrets are refused on every write path; ordinary facts are not.

The table below is the shapes people actually paste or say — cloud keys, private-key
blocks, connection strings, "password is/was …", OTPs and PINs, cards written with dots
or split by invisible characters — each with the part that must be withheld. Every
secret here is an invented example value.
"""

from __future__ import annotations

import pytest

from chatmemory.domain.errors import SecretRefused
from chatmemory.domain.secrets import (
    BANK_ACCOUNT,
    CARD,
    CREDENTIAL,
    GOVERNMENT_ID,
    TOKEN,
    find_secret,
    find_secrets,
    normalise_for_detection,
    repeats_secret,
    without_secrets,
)
from chatmemory.domain.write_filter import check

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

# (text, kind, the value that must be found among the secrets)
SECRETS = [
    # payment cards: any separator, invisible characters, after another number
    ("My card is 4111 1111 1111 1111, expires 04/28", CARD, "4111 1111 1111 1111"),
    ("card 5500-0000-0000-0004", CARD, "5500-0000-0000-0004"),
    ("amex 378282246310005", CARD, "378282246310005"),
    ("my card is 4111.1111.1111.1111", CARD, "4111.1111.1111.1111"),
    ("card 4111\u200b1111\u200b1111\u200b1111", CARD, "4111111111111111"),
    ("card ４１１１ １１１１ １１１１ １１１１", CARD, "4111 1111 1111 1111"),  # noqa: RUF001
    ("ref 2291 4111 1111 1111 1111", CARD, "4111 1111 1111 1111"),
    # passwords and PINs in words, before or after the word
    ("my password is Tr0ub4dor&3", CREDENTIAL, "Tr0ub4dor&3"),
    ("wifi password: hunter2hunter", CREDENTIAL, "hunter2hunter"),
    ("PIN is 4821", CREDENTIAL, "4821"),
    ("my pin number: 4821", CREDENTIAL, "4821"),
    ("mot de passe: soleil123", CREDENTIAL, "soleil123"),
    ("I log in with sunflower123 as my password", CREDENTIAL, "sunflower123"),
    ("hunter2 is my password", CREDENTIAL, "hunter2"),
    ("my old password was bluebird77", CREDENTIAL, "bluebird77"),
    ("Password for my gmail is kiwi2024", CREDENTIAL, "kiwi2024"),
    ("my password is weak, but my PIN is 4821", CREDENTIAL, "4821"),
    ("pass\u00adword is mango2024", CREDENTIAL, "mango2024"),
    ("ｍｙ ｐａｓｓｗｏｒｄ ｉｓ ｓｏｌｅｉｌ９９", CREDENTIAL, "soleil99"),  # noqa: RUF001
    # one-time codes, security codes, combinations
    ("the OTP is 482 910", CREDENTIAL, "482 910"),
    ("verification code 993201", CREDENTIAL, "993201"),
    ("CVV 123", CREDENTIAL, "123"),
    ("the gate code is 1234", CREDENTIAL, "1234"),
    ("my locker combination is 12-34-56", CREDENTIAL, "12-34-56"),
    ("my seed phrase is abandon ability able about", CREDENTIAL, "abandon"),
    # cloud keys and tokens
    (f"aws_secret_access_key={AWS_SECRET}", CREDENTIAL, AWS_SECRET),
    (f"My AWS secret access key is {AWS_SECRET}", TOKEN, AWS_SECRET),
    (AWS_SECRET, TOKEN, AWS_SECRET),
    ("AKIAIOSFODNN7EXAMPLE is my aws key id", TOKEN, "AKIAIOSFODNN7EXAMPLE"),
    ("use key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", TOKEN, "sk-ant-api03-"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", TOKEN, "ghp_"),
    ("sk_live_abcdefghijklmnop1234", TOKEN, "sk_live_"),
    ("xoxb-123456789012-abcdefghijkl", TOKEN, "xoxb-"),
    ("https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX", TOKEN, "hooks.slack"),
    ("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", TOKEN, "hf_"),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", TOKEN, "npm_"),
    ("SG.abcdefghijklmnopqrst.abcdefghijklmnopqrstuvwxyz0123", TOKEN, "SG."),
    ("GOCSPX-abcdefghijklmnopqrstuvwx", TOKEN, "GOCSPX-"),
    ("AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", TOKEN, "AIza"),
    ("123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", TOKEN, ":AA"),
    ("Authorization: Bearer abc.def.ghijklmnopqrstuvwxyz", TOKEN, "Bearer abc"),
    (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl",
        TOKEN,
        "eyJhbGciOiJIUzI1NiJ9.",
    ),
    # private-key blocks
    ("-----BEGIN RSA PRIVATE KEY----- MIIEow", TOKEN, "-----BEGIN RSA PRIVATE KEY-----"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
        TOKEN,
        "b3BlbnNzaC1rZXk",
    ),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----", TOKEN, "PGP PRIVATE KEY BLOCK"),
    # connection strings and config lines with passwords
    ("postgres://admin:s3cretpw@db.example.com:5432/app", TOKEN, "s3cretpw"),
    ("mongodb+srv://alice:Passw0rd!@cluster0.mongodb.net", TOKEN, "Passw0rd!"),
    ("Server=tcp:db.windows.net;Password=Hunter22;", CREDENTIAL, "Hunter22"),
    ("DB_PASSWORD: hunter22", CREDENTIAL, "hunter22"),
    ('"client_secret": "abcd1234efgh5678"', CREDENTIAL, "abcd1234efgh5678"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFy==",
        TOKEN,
        "AccountKey=",
    ),
    # government ids and bank accounts
    ("my SSN is 123-45-6789", GOVERNMENT_ID, "123-45-6789"),
    ("my social security number is 123456789", GOVERNMENT_ID, "123456789"),
    ("NI number AB 12 34 56 C", GOVERNMENT_ID, "AB 12 34 56 C"),
    ("PAN card ABCPE1234F", GOVERNMENT_ID, "ABCPE1234F"),
    ("Aadhaar 2345 6789 0124", GOVERNMENT_ID, "2345 6789 0124"),
    ("passport number X1234567", GOVERNMENT_ID, "X1234567"),
    ("salary goes to DE89 3704 0044 0532 0130 00", BANK_ACCOUNT, "DE89 3704"),
    ("my bank account number is 12345678", BANK_ACCOUNT, "12345678"),
]

ORDINARY = [
    "Is vegetarian.",
    "my flight is BA2490",
    "I was born in 1987",
    "Was born in 1990 and moved to Bengaluru in 2024.",
    "Lives at 221B Baker Street, London NW1 6XE.",
    "I live at 1600 Pennsylvania Avenue NW, Washington, DC 20500",
    "Lives at 12 MG Road, Bengaluru 560001",
    "my PIN code is 560001",  # an Indian postal code
    "zip code is 94110",
    "My area code is 415",
    "Phone is +91 98450 12345.",  # a phone number is personal, not a secret
    "Flight LH 760 lands at 14:35 on 2026-12-03.",
    "Meeting at 10:30 on 2026-12-03 in room 4B",
    "Preparing for GATE 2027; target score 750.",
    "Thinks their password is too weak and wants a password manager.",
    "My password is weak and I need a password manager",
    "Uses a password manager called Bitwarden",
    "I forgot my password yesterday",
    "I need to reset my password",
    "I changed my password last week",
    "The password essentially protects the account",
    "Uses the passcode feature on her phone.",
    "I use a passcode on my phone",
    "The access code feature is neat",
    "Pin the meeting notes please",
    "The secret is that I love cats",
    "Order number 1234567890123 arrived late.",  # 13 digits that fail Luhn
    "Scores: 45 67 89 34 56 78 91",
    "My passport renewal is due 2027-03-01",
    "passport expires 12/03/2027",
    "commit 3f316e7237f08777a15e13696ee919870728d420",  # a git hash is not a key
    "token: 5000",
    "Author=Tolkien",
    "I love C++ and Python 3.11",
    "Bought TSLA at $10, holding until $100.",
    "I am 35 years old and weigh 72 kg",
    "Paid 1,234.56 EUR on 3 March",
    "My ISBN is 978-3-16-148410-0",
]


@pytest.mark.parametrize(("text", "kind", "value"), SECRETS)
def test_secrets_are_recognised_with_the_part_to_withhold(text: str, kind: str, value: str) -> None:
    found = find_secrets(text)

    assert find_secret(text) == kind
    assert any(value in secret.value or secret.value in value for secret in found), found


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_facts_are_not_refused(text: str) -> None:
    assert find_secrets(text) == []
    assert find_secret(text) is None


def test_the_table_covers_at_least_forty_shapes_each_way() -> None:
    assert len(SECRETS) >= 40 and len(ORDINARY) >= 30


def test_a_harmless_match_does_not_hide_the_next_one() -> None:
    found = find_secrets("my password is weak, password: hunter22 and PIN 4821, card 4111")

    assert [secret.value for secret in found] == ["hunter22", "4821"]


def test_invisible_characters_and_fullwidth_digits_hide_nothing() -> None:
    assert normalise_for_detection("4111\u200b1111\u2060") == "41111111"
    assert normalise_for_detection("１２３") == "123"  # noqa: RUF001


def test_a_fact_beside_a_secret_is_kept_without_it() -> None:
    assert without_secrets("my PIN is 4821 and I'm allergic to peanuts") == (
        "I'm allergic to peanuts"
    )
    assert without_secrets("I live in Pune; my wifi password is kiwi2024.") == "I live in Pune"
    assert without_secrets("my password is hunter22") == ""
    assert without_secrets("I live in Pune.") == "I live in Pune."


def test_a_secret_restated_without_its_words_is_still_recognised() -> None:
    secrets = [secret.value for secret in find_secrets("my PIN is 4821")]

    assert repeats_secret("Has PIN 4821.", secrets)
    assert repeats_secret("Their code: 48 21", secrets)
    assert not repeats_secret("Is allergic to peanuts.", secrets)


def test_refusal_names_the_field_and_the_kind_but_not_the_secret() -> None:
    with pytest.raises(SecretRefused) as refused:
        check("text", "my password is Tr0ub4dor&3")

    assert refused.value.field == "text"
    assert "Tr0ub4dor" not in str(refused.value)
    assert "password" in str(refused.value)
