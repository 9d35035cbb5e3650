"""Where a memory's uses came from: borrowed, carried, none, or its own."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.uses_origin import (
    CARRIED,
    FROM_CATEGORY,
    awaits_uses,
    carried_over,
    with_own_uses,
)

USES = ["what should I cook", "meal ideas", "ordering at a restaurant"]


def test_uses_borrowed_carried_or_missing_wait_and_a_memorys_own_do_not() -> None:
    assert awaits_uses({"uses": USES, "uses_from": FROM_CATEGORY})
    assert awaits_uses({"uses": USES, "uses_from": CARRIED})
    assert awaits_uses({}) and awaits_uses({"uses": []}) and awaits_uses({"seen": 2})
    assert not awaits_uses({"uses": USES})
    assert not awaits_uses({"uses": USES, "seen": 2})


def test_a_correction_carries_its_own_uses_marked_and_borrowed_ones_as_they_were() -> None:
    assert carried_over({"uses": USES, "seen": 2}) == {
        "uses": USES,
        "seen": 2,
        "uses_from": CARRIED,
    }
    borrowed = {"uses": USES, "uses_from": FROM_CATEGORY}
    assert carried_over(borrowed) == borrowed
    assert carried_over({"seen": 2}) == {"seen": 2}  # nothing to carry


metas = st.dictionaries(
    st.sampled_from(["uses", "uses_from", "seen", "cadence"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.text(max_size=5))),
)


@given(metas, st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=7))
def test_own_uses_written_over_any_meta_wait_no_more_and_keep_the_rest(
    meta: dict[str, Any], uses: list[str]
) -> None:
    own = with_own_uses(meta, uses)

    assert not awaits_uses(own)
    assert own["uses"] == uses and "uses_from" not in own
    assert {k: v for k, v in own.items() if k != "uses"} == {
        k: v for k, v in meta.items() if k not in ("uses", "uses_from")
    }
    # and once a correction carries them over, they wait for uses of its new words
    assert carried_over(own)["uses"] == uses and awaits_uses(carried_over(own))
