"""Builds each backend's stores for tests: SQLite in a temp folder, DynamoDB under moto."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

from chatmemory.adapters.sqlite import Database, sqlite_stores
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores
from tests.support.template import create_table_from_template

STORE_KINDS = ("sqlite", "dynamodb")
_MOTO_REQUESTS = threading.RLock()
_moto_process_request = BotocoreStubber.process_request


def _one_request_at_a_time(self: BotocoreStubber, request: Any) -> Any:
    """moto applies a TransactWriteItems by snapshotting and restoring the whole table with
    no lock, so concurrent requests can tear it; DynamoDB serialises them. So does this."""
    with _MOTO_REQUESTS:
        return _moto_process_request(self, request)


REGION = "eu-west-1"
TABLE = "chatmemory-test"


@contextmanager
def open_stores(kind: str, clock: Clock, tmp_path: Path) -> Iterator[Stores]:
    """Fresh, empty stores of the given kind (AWS credentials must already be fake)."""
    if kind == "sqlite":
        database = Database(tmp_path / "chatmemory.sqlite3", clock=clock)
        try:
            yield sqlite_stores(database)
        finally:
            database.close()
    elif kind == "dynamodb":
        from chatmemory.adapters.dynamodb import dynamodb_stores  # noqa: PLC0415

        with (
            mock_aws(),
            mock.patch.object(BotocoreStubber, "process_request", _one_request_at_a_time),
        ):
            create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE)
            yield dynamodb_stores(table_name=TABLE, region=REGION, clock=clock)
    else:  # pragma: no cover - a typo in a parametrisation
        raise ValueError(kind)
