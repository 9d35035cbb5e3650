"""A memory row damaged in place — as a disk, an older release or a hand edit could leave
it — written straight into the store, past every rule the product checks."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import boto3

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.sqlite.memories import SqliteMemoryStore
from chatmemory.ports.stores import Stores
from tests.support.stores import REGION, TABLE

#: what releases before the time range stored for `0001-01-01T00:00:00Z` (issue 45)
YEAR_ONE_AS_STORED = "1-01-01T00:00:00.000000Z"
#: the SQLite file of the stores `tests.support.stores.open_stores` opens in a test folder
SQLITE_FILE = "chatmemory.sqlite3"


def damage_memory(
    stores: Stores, sqlite_file: Path, user_id: str, memory_id: str, **fields: str
) -> None:
    """Overwrite these fields of one stored memory row with raw text: in the SQLite file at
    `sqlite_file` for SQLite stores, in the test table for DynamoDB ones."""
    if isinstance(stores.memories, SqliteMemoryStore):
        with closing(sqlite3.connect(sqlite_file)) as database, database:
            for name, raw in fields.items():
                database.execute(
                    f"UPDATE memories SET {name} = ? WHERE user_id = ? AND memory_id = ?",  # noqa: S608 - names are the test's own
                    (raw, user_id, memory_id),
                )
        return
    names = {f"#f{n}": name for n, name in enumerate(fields)}
    values = {f":v{n}": {"S": raw} for n, raw in enumerate(fields.values())}
    boto3.client("dynamodb", region_name=REGION).update_item(
        TableName=TABLE,
        Key={"pk": {"S": keys.pk(user_id)}, "sk": {"S": keys.memory_sk(memory_id)}},
        UpdateExpression="SET " + ", ".join(f"#f{n} = :v{n}" for n in range(len(fields))),
        ConditionExpression="attribute_exists(pk)",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
