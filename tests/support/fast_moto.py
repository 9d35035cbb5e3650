"""Seeding a big partition under moto in seconds, not minutes.

Before each TransactWriteItems moto deep-copies the whole table, to roll back one that
fails; writing thousands of rows through the stores' transactions then takes time
quadratic in the table. Inside `quick_transactions`, a transaction whose every
condition holds against the items as they are (so it cannot fail on one) skips that
copy; any other goes through moto exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table

_transact = DynamoDBBackend.transact_write_items


def _conditions_hold(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> bool:
    for entry in transact_items:
        _, op = next(iter(entry.items()))
        expression = op.get("ConditionExpression")
        if expression is None:
            continue
        table = backend.get_table(op["TableName"])
        if "Key" in op:
            key = op["Key"]
        else:
            key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
            if table.range_key_attr is not None:
                key[table.range_key_attr] = op["Item"][table.range_key_attr]
        condition = get_filter_expression(
            expression, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
        )
        if not condition.expr(backend.get_item(op["TableName"], key)):
            return False
    return True


def _quick(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    if not _conditions_hold(self, transact_items):
        return _transact(self, transact_items)
    with mock.patch.object(Table, "__deepcopy__", lambda table, memo: table, create=True):
        return _transact(self, transact_items)


@contextmanager
def quick_transactions() -> Iterator[None]:
    with mock.patch.object(DynamoDBBackend, "transact_write_items", _quick):
        yield
