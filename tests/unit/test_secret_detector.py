"""Secrets are refused on every write path; ordinary facts are not."""

from __future__ import annotations

import pytest

from chatmemory.domain.errors import SecretRefused
from chatmemory.domain.secrets import find_secret, refuse_secrets


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("My card is 4111 1111 1111 1111, expires 04/28", "payment card number"),
        ("card 5500-0000-0000-0004", "payment card number"),
        ("amex 378282246310005", "payment card number"),
        ("my password is Tr0ub4dor&3", "password or other credential"),
        ("wifi password: hunter2hunter", "password or other credential"),
        ("PIN is 4821", "password or other credential"),
        ("mot de passe: soleil123", "password or other credential"),
        ("use key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "key or access token"),
        ("AKIAIOSFODNN7EXAMPLE is my aws key id", "key or access token"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "key or access token"),
        ("-----BEGIN RSA PRIVATE KEY----- MIIEow", "key or access token"),
        (
            "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl",
            "key or access token",
        ),
        ("my SSN is 123-45-6789", "government id number"),
        ("NI number QQ 12 34 56 C", None),  # QQ is not a valid NINO prefix
        ("NI number AB 12 34 56 C", "government id number"),
        ("PAN card ABCPE1234F", "government id number"),
        ("Aadhaar 2345 6789 0124", "government id number"),
        ("passport number X1234567", "government id number"),
        ("salary goes to DE89 3704 0044 0532 0130 00", "bank account number"),
    ],
)
def test_secrets_are_recognised(text: str, kind: str | None) -> None:
    assert find_secret(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "Is vegetarian.",
        "Was born in 1990 and moved to Bengaluru in 2024.",
        "Phone is +91 98450 12345.",  # a phone number is personal, not a secret
        "Flight LH 760 lands at 14:35 on 2026-12-03.",
        "Preparing for GATE 2027; target score 750.",
        "Thinks their password is too weak and wants a password manager.",
        "Order number 1234567890123 arrived late.",  # 13 digits that fail Luhn
        "Uses the passcode feature on her phone.",
        "Bought TSLA at $10, holding until $100.",
        "Lives at 221B Baker Street, London NW1 6XE.",
    ],
)
def test_ordinary_facts_are_not_refused(text: str) -> None:
    assert find_secret(text) is None


def test_refusal_names_the_field_and_the_kind_but_not_the_secret() -> None:
    with pytest.raises(SecretRefused) as refused:
        refuse_secrets("text", "my password is Tr0ub4dor&3")

    assert refused.value.field == "text"
    assert "Tr0ub4dor" not in str(refused.value)
    assert "password" in str(refused.value)
