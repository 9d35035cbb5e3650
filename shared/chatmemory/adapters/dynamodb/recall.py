"""Per-turn recall's reads of the memory rows on DynamoDB: lean digests, packed vectors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from pynamodb.expressions.condition import Condition

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.table import Table, all_of, unexpired, unique
from chatmemory.domain.memory import Status
from chatmemory.domain.time import to_storage
from chatmemory.domain.uses_origin import USES_FROM
from chatmemory.ports.recall_source import MemoryDigest, RecallSource

# The keys of a stored meta that say a row's uses are still borrowed or carried, and
# that it has any.
_USES_FROM = f'"{USES_FROM}"'
_USES = '"uses"'
# What a digest reads of a row: no text, no vectors.
_DIGEST_ATTRIBUTES = [
    "memory_id",
    "persona",
    "importance",
    "updated_at",
    "valid_until",
    "meta",
    "hidden",
]


class DynamoRecallSource(RecallSource):
    """The by_created LSI for digests, a consistent BatchGet for vectors."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def memory_digests(self, user_id: str, persona: str | None = None) -> list[MemoryDigest]:
        cls = self._table.items.memory
        lower = keys.memory_lsi_after(self._table.forgotten_before(user_id))
        now = self._table.now()
        conditions: list[Condition] = [
            cls.hidden.does_not_exist(),
            unexpired(cls.ttl, now),
            cls.status == Status.ACTIVE.value,
        ]
        if persona is not None:
            conditions.append(cls.persona == persona)
        rows = cls.by_created.query(
            keys.pk(user_id),
            cls.lsi1sk.between(lower, keys.MEMORY_LSI_END),
            filter_condition=all_of(*conditions),
            consistent_read=True,
            scan_index_forward=False,
            attributes_to_get=_DIGEST_ATTRIBUTES,
        )
        digests = []
        for row in rows:
            valid_until = cast("datetime | None", row.valid_until)
            if row.hidden or (valid_until is not None and valid_until <= now):
                continue
            meta = cast("str | None", row.meta) or ""
            digests.append(
                MemoryDigest(
                    memory_id=row.memory_id,
                    persona=row.persona,
                    importance=int(row.importance),
                    # Vectors change through put_memory, which stamps updated_at, and
                    # through the uses job, which leaves it (what the memory says did not
                    # change) but always leaves the row with uses and without the
                    # `uses_from` they waited under.
                    version=(
                        f"{to_storage(row.updated_at)}:"
                        f"{int(_USES_FROM in meta)}{int(_USES in meta)}"
                    ),
                    borrowed_uses='"uses_from": "category"' in meta,
                )
            )
        return digests

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
