"""Builds each Store adapter for tests: SQLite in a temp folder, DynamoDB under moto."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
from moto import mock_aws

from chatmemory.adapters.sqlite_store import SqliteStore
from chatmemory.ports import Clock, Store
from tests.support.template import create_table_from_template

STORE_KINDS = ("sqlite", "dynamodb")
REGION = "eu-west-1"
TABLE = "chatmemory-test"


@contextmanager
def open_store(kind: str, clock: Clock, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store of the given kind (AWS credentials must already be fake)."""
    if kind == "sqlite":
        store = SqliteStore(tmp_path / "chatmemory.sqlite3", clock=clock)
        try:
            yield store
        finally:
            store.close()
    elif kind == "dynamodb":
        from chatmemory.adapters.dynamodb_store import DynamoDbStore  # noqa: PLC0415

        with mock_aws():
            create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE)
            yield DynamoDbStore(table_name=TABLE, region=REGION, clock=clock)
    else:  # pragma: no cover - a typo in a parametrisation
        raise ValueError(kind)
