"""The secrets in messages stored before they were masked on write, masked in place: a data
migration (the detector is Python, not SQL), run once per store and recorded as done.

Locally `chatmemory serve` runs it as it starts and `chatmemory flush` runs it too; on
AWS the daily sweep runs a share of it each day until it is done. Each batch records how
far it got, so a run that stops (a Lambda's timeout, a server stopped) resumes there,
and once the store is masked through, a run reads one record and does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chatmemory.ports.stores import Stores


@dataclass(frozen=True, slots=True)
class MaskingRun:
    """What a run did: conversations read, texts rewritten, and whether the store is done."""

    conversations: int
    rewritten: int
    done: bool


class StoredMessageMasking:
    def __init__(self, stores: Stores) -> None:
        self._stores = stores

    def run(self, *, keep_going: Callable[[], bool] | None = None, batch: int = 50) -> MaskingRun:
        """Mask batch after batch until the store is done, or until `keep_going` says to
        stop (the sweep: while its Lambda has time left); the next run resumes there."""
        conversations = rewritten = 0
        while True:
            progress = self._stores.conversation_erasure.mask_stored_messages(batch=batch)
            conversations += progress.conversations
            rewritten += progress.rewritten
            if progress.done:
                return MaskingRun(conversations, rewritten, done=True)
            if keep_going is not None and not keep_going():
                return MaskingRun(conversations, rewritten, done=False)
