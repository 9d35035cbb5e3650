"""The table's health: one strongly consistent read of a key no item has."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError
from pynamodb.connection.table import TableConnection
from pynamodb.exceptions import PynamoDBException

from chatmemory.ports.store_probe import StoreProbe, StoreUnavailable

# A partition no user, room or persona can have (theirs start with U#, R# and P#).
_PROBE_KEY = ("HEALTH", "PROBE")


class DynamoStoreProbe(StoreProbe):
    """Reads one absent key, strongly consistent (half a read unit).

    It never writes: the health route is public, and a write per call would let anyone
    spend the table's write capacity. A throttled or failing write still answers its own
    request `503 storage_unavailable` (`api/errors.py`).
    """

    def __init__(self, connection: TableConnection) -> None:
        self._connection = connection

    def check(self) -> None:
        partition, sort = _PROBE_KEY
        try:
            self._connection.get_item(partition, range_key=sort, consistent_read=True)
        except (PynamoDBException, BotoCoreError) as exc:
            code = getattr(exc, "cause_response_code", None)
            raise StoreUnavailable(code or type(exc).__name__) from exc
