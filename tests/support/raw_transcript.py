"""A conversation's stored items read and written straight in the store, past the product:
words as releases before masking stored them, and whatever of a conversation is left."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import boto3

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.sqlite.conversations import SqliteConversationStore
from chatmemory.ports.stores import Stores
from tests.support.stores import REGION, TABLE

#: the SQLite file of the stores `tests.support.stores.open_stores` opens in a test folder
SQLITE_FILE = "chatmemory.sqlite3"


def _on_sqlite(stores: Stores) -> bool:
    return isinstance(stores.conversations, SqliteConversationStore)


def store_as_said(
    stores: Stores, folder: Path, user_id: str, conversation_id: str, *, seq: int, content: str
) -> None:
    """Overwrite one stored message's text with `content` as it was said, unmasked: what
    every release before masking on write stored."""
    if _on_sqlite(stores):
        with closing(sqlite3.connect(folder / SQLITE_FILE)) as database, database:
            database.execute(
                "UPDATE messages SET content = ? WHERE user_id = ? AND conversation_id = ? "
                "AND seq = ?",
                (content, user_id, conversation_id, seq),
            )
        return
    _update(keys.pk(user_id), keys.message_sk(conversation_id, seq), "content", content)


def summary_as_folded(
    stores: Stores, folder: Path, user_id: str, conversation_id: str, summary: str
) -> None:
    """Overwrite a conversation's stored summary with `summary`, as a fold of unmasked
    messages left it."""
    if _on_sqlite(stores):
        with closing(sqlite3.connect(folder / SQLITE_FILE)) as database, database:
            database.execute(
                "UPDATE conversations SET summary = ? WHERE user_id = ? AND conversation_id = ?",
                (summary, user_id, conversation_id),
            )
        return
    _update(keys.pk(user_id), keys.conversation_sk(conversation_id), "summary", summary)


def left_of(stores: Stores, folder: Path, user_id: str, conversation_id: str) -> list[str]:
    """Everything still stored of one conversation, read without any visibility rule: its
    row, messages, observed-turn records and extraction runs (as table or key names)."""
    if _on_sqlite(stores):
        with closing(sqlite3.connect(folder / SQLITE_FILE)) as database:
            return [
                f"{table} row"
                for table in ("conversations", "messages", "observed_turns", "extraction_runs")
                for _ in database.execute(
                    f"SELECT 1 FROM {table} WHERE user_id = ? AND conversation_id = ?",  # noqa: S608 - our own table names
                    (user_id, conversation_id),
                )
            ]
    client = boto3.client("dynamodb", region_name=REGION)
    pages = client.get_paginator("query").paginate(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": keys.pk(user_id)}},
        ConsistentRead=True,
    )
    return [
        item["sk"]["S"]
        for page in pages
        for item in page["Items"]
        if item["sk"]["S"] == keys.conversation_sk(conversation_id)
        or item["sk"]["S"].startswith(keys.messages_prefix(conversation_id))
        or (
            item["sk"]["S"].startswith((keys.OBSERVED_TURN_PREFIX, keys.RUN_PREFIX))
            and item["conversation_id"]["S"] == conversation_id
        )
    ]


def _update(pk: str, sk: str, name: str, value: str) -> None:
    boto3.client("dynamodb", region_name=REGION).update_item(
        TableName=TABLE,
        Key={"pk": {"S": pk}, "sk": {"S": sk}},
        UpdateExpression="SET #f = :v",
        ConditionExpression="attribute_exists(pk)",
        ExpressionAttributeNames={"#f": name},
        ExpressionAttributeValues={":v": {"S": value}},
    )
