"""Masking a secret in a stored copy (domain/secrets.py `mask_secrets`): the value goes,
every other character stays as written, whatever shape the secret takes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.secrets import WITHHELD, find_secrets, mask_secrets, secret_values


@pytest.mark.parametrize(
    ("said", "stored"),
    [
        (
            "I live in Pune. My card is 4111 1111 1111 1111",
            f"I live in Pune. My card is {WITHHELD}",
        ),
        ("my password is hunter2 and I like tea", f"my password is {WITHHELD} and I like tea"),
        ("\uff2d\uff39 PIN is \uff14\uff18\uff12\uff11 ok", f"\uff2d\uff39 PIN is {WITHHELD} ok"),
        ("card 4111\u200b1111\u200b1111\u200b1111 here", f"card {WITHHELD} here"),
        ("Café, my PIN is 4821.", f"Café, my PIN is {WITHHELD}."),
        ("Nothing secret in this one.", "Nothing secret in this one."),
    ],
)
def test_the_secret_goes_and_the_sentence_stays(said: str, stored: str) -> None:
    assert mask_secrets(said) == stored


def test_a_decomposed_accent_still_loses_the_secret() -> None:
    masked = mask_secrets("cafe\u0301 pin is 4821 x")
    assert "4821" not in masked and WITHHELD in masked


def test_a_value_said_beside_is_masked_where_it_is_repeated_bare() -> None:
    known = secret_values(["My wifi password is sunflower123."])
    assert mask_secrets("Got it: sunflower123.", known) == f"Got it: {WITHHELD}."


_FILLER = st.text(alphabet=st.characters(whitelist_categories=("L", "Zs")), max_size=30)
_SECRETS = st.sampled_from(
    [
        "4111 1111 1111 1111",
        "5500-0000-0000-0004",
        "my PIN is 4821",
        "password: hunter22",
        "sk-ant-api03-abcdefghijklmnopqrstuvwx",
        "AKIAIOSFODNN7EXAMPLE",
        "123-45-6789",
    ]
)


@given(before=_FILLER, secret=_SECRETS, after=_FILLER)
def test_masking_leaves_no_secret_and_is_idempotent(before: str, secret: str, after: str) -> None:
    masked = mask_secrets(f"{before} {secret} {after}")
    assert find_secrets(masked) == []
    assert mask_secrets(masked) == masked
