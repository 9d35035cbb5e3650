"""The write pipeline's runs on DynamoDB: RUN#<run_id> items, one JSON body each, with a TTL."""

from __future__ import annotations

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.mapping import run_from_item, run_item
from chatmemory.adapters.dynamodb.table import LostRace, Table, Write
from chatmemory.domain.extraction import ExtractionRun
from chatmemory.ports.runs import RunStore


class DynamoRunStore(RunStore):
    """Extraction runs in the user's partition, gone with their TTL."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def put_extraction_run(self, run: ExtractionRun, *, only_if_new: bool = False) -> bool:
        cls = self._table.items.run
        condition = cls.sk.does_not_exist() if only_if_new else None
        try:
            self._table.commit([Write("put", run_item(self._table.items, run), condition)])
        except LostRace:
            return False
        return True

    def get_extraction_run(self, user_id: str, run_id: str) -> ExtractionRun | None:
        item = self._table.get(self._table.items.run, user_id, keys.run_sk(run_id))
        if item is None:
            return None
        run = run_from_item(item)
        return None if run.expires_at <= self._table.now() else run

    def delete_extraction_runs(self, user_id: str, conversation_id: str) -> None:
        cls = self._table.items.run
        rows = cls.query(
            keys.pk(user_id),
            cls.sk.startswith(keys.RUN_PREFIX),
            filter_condition=cls.conversation_id == conversation_id,
            consistent_read=True,
        )
        self._table.delete_all(list(rows))
