"""Per-turn recall's reads on DynamoDB: digests from the markers, vectors from the rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.digests import DigestMarkers
from chatmemory.adapters.dynamodb.table import Table, unique
from chatmemory.ports.recall_source import MemoryDigest, RecallSource


class DynamoRecallSource(RecallSource):
    """The digest markers for digests (see `digests`), a consistent BatchGet for vectors."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._markers = DigestMarkers(table)

    def memory_digests(self, user_id: str, persona: str | None = None) -> list[MemoryDigest]:
        return self._markers.digests(user_id, persona)

    def memory_embeddings(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        wanted = unique(memory_ids)
        if not wanted:
            return {}
        pk = keys.pk(user_id)
        found: dict[str, bytes] = {}
        for item in self._table.items.memory.batch_get(
            [(pk, keys.memory_sk(memory_id)) for memory_id in wanted],
            consistent_read=True,
            attributes_to_get=["pk", "sk", "memory_id", "embedding"],
        ):
            embedding = cast("bytes | None", item.embedding)
            if embedding:
                found[item.memory_id] = embedding
        return found
