"""Where an imported row lands: its id past deleted ones, its links with it, and its system
time after "forget everything"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.memory import Status
from chatmemory.domain.portability import (
    CONCLUDED_BY,
    arrived,
    imported_memory_id,
    relearned,
    relinked,
    same_memory,
)
from tests.support import builders

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
FORGOT = START + timedelta(days=10)
NOW = FORGOT + timedelta(hours=1)


def test_an_id_never_deleted_is_kept_and_later_generations_are_stable_and_distinct() -> None:
    assert imported_memory_id("alice", "mem_a", 0) == "mem_a"
    first = imported_memory_id("alice", "mem_a", 1)
    assert first == imported_memory_id("alice", "mem_a", 1)
    assert (
        len({first, imported_memory_id("alice", "mem_a", 2), imported_memory_id("bob", "mem_a", 1)})
        == 3
    )
    assert first.startswith("mem_") and first != "mem_a"


def test_every_link_moves_with_the_ids() -> None:
    row = builders.memory(
        "alice",
        "Is job-hunting.",
        START,
        memory_id="mem_t",
        supersedes="mem_old",
        meta={CONCLUDED_BY: "mem_fact", "cadence": "fast"},
    )

    moved = relinked(row, lambda original: original + "_2")

    assert (moved.memory_id, moved.supersedes) == ("mem_t_2", "mem_old_2")
    assert moved.meta == {CONCLUDED_BY: "mem_fact_2", "cadence": "fast"}


def test_a_row_learned_after_the_forget_keeps_its_times() -> None:
    later = builders.memory("alice", "Has a cat.", FORGOT + timedelta(minutes=5))

    assert relearned([later], FORGOT, NOW) == [later]
    assert relearned([later], None, NOW) == [later]


def test_a_row_learned_before_the_forget_is_learned_again_keeping_its_evidence() -> None:
    old = builders.memory(
        "alice", "Lives in Pune.", START, updated_at=START + timedelta(days=2)
    ).with_changes(status=Status.SUPERSEDED, valid_to=START + timedelta(days=2), closed_by="mem_b")

    (again,) = relearned([old], FORGOT, NOW)

    assert FORGOT < again.created_at == again.updated_at <= NOW
    assert again.reinforced_at == START  # it fades from its last evidence, as it did
    assert (again.valid_to, again.status, again.text) == (old.valid_to, old.status, old.text)


@given(st.lists(st.integers(min_value=0, max_value=10 * 24 * 3600), min_size=1, max_size=30))
def test_rows_learned_again_keep_the_order_they_were_first_learned_in(seconds: list[int]) -> None:
    rows = [
        builders.memory("alice", f"Fact {i}.", START + timedelta(seconds=s))
        for i, s in enumerate(seconds)
    ]

    again = relearned(rows, FORGOT, NOW)

    first = sorted(range(len(rows)), key=lambda i: (rows[i].created_at, rows[i].memory_id))
    assert sorted(range(len(again)), key=lambda i: again[i].created_at) == first
    assert all(m.created_at > FORGOT for m in again)
    assert len({m.created_at for m in again}) == len(again)


def test_an_arriving_row_keeps_its_dates_and_starts_fresh_in_retention() -> None:
    # Given a row learned years ago, last reinforced a year ago, set aside by the cap there
    years_ago = START - timedelta(days=3 * 365)
    old = builders.memory(
        "alice",
        "Lives in Pune.",
        years_ago,
        valid_from=years_ago,
        last_used_at=START - timedelta(days=365),
        reinforced_at=START - timedelta(days=365),
        archived_at=START - timedelta(days=300),
        stability_days=400,
    )

    # When it arrives with an import now, and a row whose own evidence is later
    landed = arrived(old, NOW)
    ahead = arrived(old.with_changes(reinforced_at=NOW + timedelta(seconds=1)), NOW)

    # Then its dates and stability are kept, it is reinforced now and back in use
    assert (landed.created_at, landed.valid_from, landed.last_used_at) == (
        old.created_at,
        old.valid_from,
        old.last_used_at,
    )
    assert (landed.stability_days, landed.reinforced_at, landed.archived_at) == (400, NOW, None)
    assert ahead.reinforced_at == NOW + timedelta(seconds=1)


def test_the_same_memory_is_its_words_place_and_standing_not_its_fading() -> None:
    stored = builders.memory("alice", "Is vegan.", START, category="diet", recall_count=3)

    assert same_memory(stored, stored.with_changes(recall_count=0, updated_at=NOW))
    assert not same_memory(stored, stored.with_changes(text="Is vegetarian."))
    assert not same_memory(stored, stored.with_changes(persona="nolan"))
