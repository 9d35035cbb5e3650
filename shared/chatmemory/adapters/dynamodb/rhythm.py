"""A user's rhythm on DynamoDB: one RHYTHM item in their partition, its state as JSON."""

from __future__ import annotations

import dataclasses
import json

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import RhythmItem, bind_item
from chatmemory.adapters.dynamodb.table import LostRace, Table, Write
from chatmemory.domain.errors import ConcurrentChange
from chatmemory.domain.rhythm import Rhythm, as_record, from_record
from chatmemory.ports.rhythm import RhythmStore


class DynamoRhythmStore(RhythmStore):
    """The RHYTHM item: a put conditioned on the version it was read at."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._item = bind_item(table.items, RhythmItem)

    def get_rhythm(self, user_id: str) -> Rhythm | None:
        item = self._table.get(self._item, user_id, keys.RHYTHM_SK)
        if item is None:
            return None
        return from_record(json.loads(item.state), int(item.version))

    def put_rhythm(self, user_id: str, rhythm: Rhythm) -> Rhythm:
        stored = dataclasses.replace(rhythm, version=rhythm.version + 1)
        cls = self._item
        item = cls(
            keys.pk(user_id),
            keys.RHYTHM_SK,
            user_id=user_id,
            version=stored.version,
            state=json.dumps(as_record(stored), sort_keys=True, separators=(",", ":")),
            updated_at=self._table.now(),
        )
        guard = cls.pk.does_not_exist() if rhythm.version == 0 else cls.version == rhythm.version
        try:
            self._table.commit([Write("put", item, guard)])
        except LostRace as exc:
            raise ConcurrentChange("the rhythm changed while it was being sampled") from exc
        return stored

    def delete_rhythm(self, user_id: str) -> None:
        # Inside a unit of work the delete joins its transaction.
        self._table.delete_all([self._item(keys.pk(user_id), keys.RHYTHM_SK)])
