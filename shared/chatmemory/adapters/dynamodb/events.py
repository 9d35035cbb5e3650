"""The audit log on DynamoDB: one item per event, under the memory it is about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import EventItem
from chatmemory.adapters.dynamodb.mapping import event_from_item, event_item
from chatmemory.adapters.dynamodb.table import Table, check_owner
from chatmemory.domain.events import MemoryEvent
from chatmemory.ports.events import EventLog


def event_items(
    table: Table, events: Sequence[MemoryEvent], *, owner: str | None = None
) -> list[EventItem]:
    """One item per distinct event (re-adding an event overwrites itself), each checked
    to belong to `owner` when one is given."""
    items: dict[str, EventItem] = {}
    for event in events:
        if owner is not None:
            check_owner(owner, event.user_id)
        sk = keys.event_sk(event)
        if sk not in items:
            items[sk] = event_item(table.items, event)
    return list(items.values())


class DynamoEventLog(EventLog):
    """Events on the shared table; memory writes add theirs through `event_items`."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        self._table.put_all(event_items(self._table, events))

    def list_events(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        cls = self._table.items.event
        rows = cls.query(
            keys.pk(user_id), cls.sk.startswith(keys.event_prefix(memory_id)), consistent_read=True
        )
        return [event_from_item(row) for row in rows]


def event_from_stream_image(image: Mapping[str, Any]) -> MemoryEvent | None:
    """The audit event a DynamoDB Streams record's new image holds (typed attribute values,
    as the stream delivers them), or None when the item is not an audit event.
    ValueError when it is one but cannot be read (no retry would read it either)."""
    sort_key = image.get("sk")
    if not isinstance(sort_key, Mapping) or not str(sort_key.get("S", "")).startswith(
        keys.EVENT_PREFIX
    ):
        return None
    try:
        return event_from_item(EventItem.from_raw_data(dict(image)))
    except (TypeError, KeyError, AttributeError, ValueError) as exc:  # a malformed item
        raise ValueError(f"unreadable audit item: {type(exc).__name__}") from None
