"""The leak exam in CI, with the offline model, on both stores: what a persona's turn
sends never holds the confidence once Dan is absent, nor in the other persona's seat."""

from __future__ import annotations

from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.ports.stores import Stores
from tests.exam.leak_exam import run_exam
from tests.support.product import IDLE, Product


def test_the_confidence_never_reaches_a_room_dan_is_not_in_nor_nolan(
    stores: Stores, clock: ManualClock
) -> None:
    product = Product(stores, clock)

    def flush() -> None:
        clock.advance(IDLE + timedelta(seconds=1))
        product.jobs.run_due()

    counts = run_exam(product.rooms, flush)

    print(counts)
    assert counts.planted  # else the exam proves nothing
    assert counts.absent == 0
    assert counts.other_seat == 0
    # v1 loads nothing personal in a group, so even with Dan present it is not there
    assert counts.present == 0
