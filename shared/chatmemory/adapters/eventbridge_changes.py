"""The AWS change feed: each change an event on the stack's EventBridge bus.

Source `chatmemory`, detail-type `memory.<op>` (`memory.added`, `memory.deleted`, …), the
change's JSON as the detail. PutEvents takes ten entries a call and may accept some of
them and not others (`FailedEntryCount`): only the refused ones are sent again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from chatmemory.domain.change_events import ChangeEvent
from chatmemory.ports.change_feed import ChangeFeed, ChangeFeedUnavailable

SOURCE = "chatmemory"
MAX_ENTRIES = 10  # PutEvents' limit per call
ATTEMPTS = 4


def detail_type(change: ChangeEvent) -> str:
    """`memory.<op>`: what a rule's `detail-type` matches."""
    return f"memory.{change.op.value}"


class EventBridgeChangeFeed(ChangeFeed):
    """PutEvents to one bus, ten at a time, retrying the entries it refused."""

    def __init__(
        self,
        client: Any,
        *,
        bus_name: str,
        attempts: int = ATTEMPTS,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._bus = bus_name
        self._attempts = attempts
        self._pause = pause

    def publish(self, changes: Sequence[ChangeEvent]) -> None:
        for start in range(0, len(changes), MAX_ENTRIES):
            self._put([self._entry(change) for change in changes[start : start + MAX_ENTRIES]])

    def _entry(self, change: ChangeEvent) -> dict[str, Any]:
        return {
            "Source": SOURCE,
            "DetailType": detail_type(change),
            "Detail": json.dumps(change.as_record(), separators=(",", ":")),
            "EventBusName": self._bus,
            "Time": change.at,
        }

    def _put(self, entries: list[dict[str, Any]]) -> None:
        pending, failure = entries, "unknown"
        for attempt in range(self._attempts):
            if attempt:
                self._pause(0.1 * 2**attempt)
            try:
                answer = self._client.put_events(Entries=pending)
            except (BotoCoreError, ClientError) as exc:
                failure = type(exc).__name__  # botocore retried throttling already
                continue
            if not answer.get("FailedEntryCount"):
                return
            # The answer's entries line up with the request's: the refused carry an ErrorCode.
            refused = [
                (entry, result)
                for entry, result in zip(pending, answer["Entries"], strict=True)
                if result.get("ErrorCode")
            ]
            pending = [entry for entry, _ in refused]
            failure = str(refused[0][1]["ErrorCode"]) if refused else failure
            if not pending:
                return
        raise ChangeFeedUnavailable(f"{len(pending)} change(s) not accepted: {failure}")
