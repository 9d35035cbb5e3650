"""`/v1/health` asks the store for real, on each backend: ok while it can be used,
degraded (storage_unavailable) once it cannot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings
from chatmemory.services.health import HealthReport
from tests.support.stores import REGION, TABLE
from tests.support.template import create_table_from_template

OK = HealthReport("ok")
DEGRADED = HealthReport("degraded", "storage_unavailable")


@pytest.fixture
def moto_table(aws_env: None) -> Iterator[None]:
    with mock_aws():
        create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE)
        yield


def _dynamodb(table: str) -> Container:
    return Container(Settings(store="dynamodb", table_name=table, region=REGION))


def test_a_sqlite_store_that_takes_a_write_is_healthy(tmp_path: Path, clock: ManualClock) -> None:
    health = Container(Settings(state_dir=tmp_path), clock).health

    assert health.check() == OK
    assert health.check() == OK  # every check writes again, and can


def test_a_sqlite_store_that_cannot_be_opened_is_degraded(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given a state folder that is a file, so no database can be opened in it
    blocked = tmp_path / "state"
    blocked.write_text("not a folder")

    # Then health says so, rather than failing or saying ok
    assert Container(Settings(state_dir=blocked), clock).health.check() == DEGRADED


@pytest.mark.usefixtures("moto_table")
def test_a_dynamodb_table_that_answers_is_healthy() -> None:
    assert _dynamodb(TABLE).health.check() == OK


@pytest.mark.usefixtures("moto_table")
def test_a_dynamodb_table_that_does_not_answer_is_degraded() -> None:
    assert _dynamodb("no-such-table").health.check() == DEGRADED
