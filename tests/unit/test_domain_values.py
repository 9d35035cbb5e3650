"""Ids, times and packed vectors: the small rules everything else leans on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain import vectors
from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.ids import (
    memory_id_for,
    message_id_for,
    new_conversation_id,
    normalise_for_identity,
    parse_message_id,
)
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.time import (
    EARLIEST_WORLD,
    LATEST,
    from_storage,
    parse_instant,
    to_api,
    to_storage,
)

NOW = datetime(2026, 11, 30, 9, 15, tzinfo=UTC)


def test_the_same_belief_always_lands_on_the_same_id() -> None:
    first = memory_id_for("alice", "assistant", "diet:vegetarian")
    again = memory_id_for("alice", "assistant", "diet:vegetarian")

    assert first == again
    assert first != memory_id_for("bob", "assistant", "diet:vegetarian")
    assert first != memory_id_for("alice", "warren", "diet:vegetarian")
    assert first != memory_id_for("alice", "assistant", "diet:vegetarian", generation=1)


def test_identity_ignores_case_spacing_width_and_how_the_sentence_ends() -> None:
    assert normalise_for_identity("  I’m   VEGETARIAN!! ") == normalise_for_identity(  # noqa: RUF001
        "i'm vegetarian"
    )
    assert normalise_for_identity("Ｉｓ vegan.") == normalise_for_identity("is vegan")  # noqa: RUF001


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Blood type is A+.", "Blood type is A-."),
        ("Codes in C++.", "Codes in C#."),
        ("🍕", "🍣"),
        ("Favourite: 🍕🍕", "Favourite: 🍕"),
        ("Is 5'11\".", "Is 5'1\"."),
        ("Rates it 4/5.", "Rates it 4.5."),
        ("Is vegan?", "Is vegan."),
    ],
)
def test_identity_keeps_every_symbol_that_can_change_the_meaning(one: str, other: str) -> None:
    assert normalise_for_identity(one) != normalise_for_identity(other)


def test_message_ids_lead_back_to_their_conversation() -> None:
    conversation_id = new_conversation_id()

    assert parse_message_id(message_id_for(conversation_id, 17)) == (conversation_id, 17)
    assert parse_message_id("mem_123") is None


@given(
    st.datetimes(
        timezones=st.just(UTC),
        min_value=EARLIEST_WORLD.replace(tzinfo=None),
        max_value=(LATEST - timedelta(microseconds=2)).replace(tzinfo=None),
    )
)
def test_storage_strings_sort_like_the_instants_they_hold(instant: datetime) -> None:
    later = instant + timedelta(microseconds=1)

    assert from_storage(to_storage(instant)) == instant
    assert to_storage(instant) < to_storage(later)


def test_api_timestamps_are_utc_with_a_z() -> None:
    india = timezone(timedelta(hours=5, minutes=30))

    assert to_api(datetime(2026, 11, 30, 14, 45, tzinfo=india)) == "2026-11-30T09:15:00Z"
    assert parse_instant("valid_until", "2026-11-30T09:15:00Z") == NOW
    assert parse_instant("valid_until", "2026-12-01") == datetime(2026, 12, 1, tzinfo=UTC)
    with pytest.raises(InvalidField):
        parse_instant("valid_until", "2026-11-30T09:15:00")
    with pytest.raises(InvalidField):
        parse_instant("valid_until", "next tuesday")


@given(st.lists(st.floats(min_value=-10, max_value=10, allow_nan=False), min_size=2, max_size=1024))
def test_packed_vectors_keep_their_direction(values: list[float]) -> None:
    original = np.asarray(values, dtype=np.float32)
    restored = vectors.unpack(vectors.pack(original))

    assert restored.shape == original.shape
    norms = float(np.linalg.norm(original) * np.linalg.norm(restored))
    if norms > 1e-3 and float(np.max(np.abs(original))) > 1e-3:
        cosine = float(original @ restored) / norms
        assert cosine > 0.99


def test_a_384_dimension_vector_packs_small() -> None:
    packed = vectors.pack(np.random.default_rng(7).normal(size=384))

    assert len(packed) <= 400
    assert vectors.dimensions(packed) == 384


@given(st.lists(st.floats(min_value=-10, max_value=10, allow_nan=False), min_size=2, max_size=1025))
def test_four_bit_vectors_keep_their_direction_well_enough_to_rank(values: list[float]) -> None:
    original = np.asarray(values, dtype=np.float32)
    restored = vectors.unpack(vectors.pack(original, bits=4))

    assert restored.shape == original.shape
    norms = float(np.linalg.norm(original) * np.linalg.norm(restored))
    if norms > 1e-3 and float(np.max(np.abs(original))) > 1e-3:
        assert float(original @ restored) / norms > 0.9


def test_a_memory_keeps_its_words_at_eight_bits_and_seven_uses_at_four_in_under_2_kb() -> None:
    rows = np.random.default_rng(11).normal(size=(8, 384)).astype(np.float32)

    packed = vectors.pack_rows(rows, compact_after=1)
    restored = vectors.unpack_rows(packed)

    assert len(packed) == vectors.packed_size(384) + 7 * vectors.packed_size(384, bits=4) < 1800
    assert restored.shape == (8, 384)
    cosines = np.sum(rows * restored, axis=1) / (
        np.linalg.norm(rows, axis=1) * np.linalg.norm(restored, axis=1)
    )
    assert cosines[0] > 0.999 and np.all(cosines[1:] > 0.98)


def test_rows_packed_before_four_bit_codes_existed_still_read() -> None:
    rows = np.random.default_rng(3).normal(size=(3, 16)).astype(np.float32)
    eight_bit_only = b"".join(vectors.pack(row) for row in rows)

    assert np.allclose(
        vectors.unpack_rows(eight_bit_only), vectors.unpack_rows(vectors.pack_rows(rows))
    )


def test_a_cut_off_vector_is_refused_not_misread() -> None:
    packed = vectors.pack(np.ones(33, dtype=np.float32), bits=4)

    with pytest.raises(InvalidField):
        vectors.unpack(packed[:-1])
    with pytest.raises(InvalidField):
        vectors.unpack_rows(packed + packed[:5])


def test_a_temporary_conversation_must_expire() -> None:
    with pytest.raises(InvalidField) as refused:
        Conversation(
            user_id="alice",
            conversation_id=new_conversation_id(),
            created_at=NOW,
            updated_at=NOW,
            temporary=True,
        )
    assert refused.value.field == "expires_at"


def test_a_user_message_is_bounded_to_8000_characters() -> None:
    conversation_id = new_conversation_id()
    Message(
        user_id="alice",
        conversation_id=conversation_id,
        seq=1,
        role=Role.USER,
        content="x" * 8000,
        tokens=1,
        created_at=NOW,
    )
    with pytest.raises(InvalidField) as refused:
        Message(
            user_id="alice",
            conversation_id=conversation_id,
            seq=1,
            role=Role.USER,
            content="x" * 8001,
            tokens=1,
            created_at=NOW,
        )
    assert refused.value.field == "content"


def test_muting_a_persona_stops_it_without_switching_memory_off() -> None:
    settings = MemorySettings(user_id="alice", muted_personas=frozenset({"warren"}))

    assert settings.allows("assistant") and not settings.allows("warren")
    assert not MemorySettings(user_id="alice", enabled=False).allows("assistant")
    with pytest.raises(InvalidField):
        MemorySettings(user_id="alice", note="x" * 401)


@pytest.mark.parametrize(
    "bad", ["", " alice", "alice\n", "al\tice", "al\rice", "a" * 129, "x\x00y"]
)
def test_a_user_id_has_no_control_characters_or_surrounding_spaces(bad: str) -> None:
    from chatmemory.domain.rules import user_id  # noqa: PLC0415

    with pytest.raises(InvalidField):
        user_id(bad)
