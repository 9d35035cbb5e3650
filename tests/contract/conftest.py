"""The contract suite runs every test once per Store adapter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.ports import Store
from tests.support.stores import STORE_KINDS, open_store


@pytest.fixture(params=STORE_KINDS)
def store(
    request: pytest.FixtureRequest, clock: ManualClock, tmp_path: Path, aws_env: None
) -> Iterator[Store]:
    with open_store(request.param, clock, tmp_path) as opened:
        yield opened
