"""Uses and vectors written for memories that came without them, off the request path.

A memory typed through the API, saved by the chat model without uses, or corrected is
stored at once with uses borrowed from its category or carried from the version it
replaces (domain/uses_origin.py), and a job names it. The job reads the rows again,
asks the model once for all of them, and writes each one's own uses and fresh vectors
with a compare-and-set on the row as it read it, so a correction, delete or close that
came meanwhile always wins. Nothing here fails anything upstream: a model that cannot
answer leaves the borrowed uses in place, and a later run (`chatmemory flush`, the daily
sweep on AWS) can try again. Logs carry ids and counts, never a memory's words or its uses.

A row stored while the embedder failed has no vectors, so recall cannot find it: the
same job embeds it again first, with the uses it has, whatever the model (the offline
stand-in included), and the sweep hands it back until its vectors land.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chatmemory.domain.memory import Memory
from chatmemory.domain.uses_origin import awaits_uses, waits_for_job, with_own_uses
from chatmemory.ports.jobs import Jobs
from chatmemory.ports.model import Model, UsesRequest
from chatmemory.ports.pages import MAX_PAGE
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer

log = logging.getLogger(__name__)

#: memories one model call is asked about: a job names one or two, a catch-up many
USES_PER_CALL = 20


@dataclass(frozen=True, slots=True)
class UsesWritten:
    """What one run did: rows the model was asked about, rows whose own uses landed,
    rows the model gave none (or that failed), rows that changed before the write, and
    rows stored without vectors that got them (`embedded`) or still have none."""

    asked: int = 0
    written: int = 0
    unwritten: int = 0
    changed: int = 0
    embedded: int = 0
    unembedded: int = 0


@dataclass(frozen=True, slots=True)
class HandedOff:
    """What the sweep queued again: rows, and how many of them had no vectors."""

    rows: int = 0
    without_vectors: int = 0


class UsesWriter:
    """Takes its model as it is or as a provider, so building it loads no client."""

    def __init__(
        self, stores: Stores, model: Model | Callable[[], Model], indexer: MemoryIndexer
    ) -> None:
        self._stores = stores
        self._model_of = model if callable(model) else lambda: model
        self._indexer = indexer

    def write(self, user_id: str, memory_ids: Sequence[str]) -> UsesWritten:
        """Give each of these memories what it still waits for: vectors, when it was
        stored without (with the offline stand-in too), then its own uses, when they are
        still borrowed or carried and the model can write them. Only rows still active and
        shown, memory still on for their persona. Running it again changes nothing."""
        model = self._model_of()
        wanted = list(dict.fromkeys(memory_ids))
        rows = self._waiting(user_id, wanted, model_writes=not model.offline)
        total = UsesWritten()
        bare = [row for row in rows if row.embedding is None]
        if bare:
            total = self._embed_again(bare)
            if not model.offline:  # read again: the rows just written changed
                rows = self._waiting(user_id, wanted, model_writes=True)
        if model.offline:
            return total  # it cannot read what a memory is for
        rows = [row for row in rows if awaits_uses(row.meta)]
        for start in range(0, len(rows), USES_PER_CALL):
            total = _added(total, self._write_batch(model, rows[start : start + USES_PER_CALL]))
        if total.asked or bare:
            log.info("memory uses written", extra=dataclasses.asdict(total))
        return total

    def catch_up(self, limit: int = 100) -> UsesWritten:
        """Give the oldest rows of any user what they still wait for: the jobs a stopped
        server never ran, and the ones whose embedder or model call failed."""
        total = UsesWritten()
        uses = not self._model_of().offline
        for user_id, memory_ids in self._pending(limit, uses=uses).items():
            total = _added(total, self.write(user_id, memory_ids))
        return total

    def hand_off(self, jobs: Jobs, limit: int = MAX_PAGE) -> HandedOff:
        """Queue a uses job for each of the oldest rows of any user still waiting (a job
        whose embedder or model call failed is not retried by its queue): the daily sweep
        on AWS, whose jobs the fold queue's consumer runs with its model (the sweep itself
        has none: it only queues). Returns how many rows were handed off, and how many of
        them had no vectors (a day after their write: the embedder keeps failing)."""
        bare = self._stores.memories.pending_vectors(limit)
        pending = _by_user([*bare, *self._stores.memories.pending_uses(limit)])
        for user_id, memory_ids in pending.items():
            jobs.uses_later(user_id, memory_ids)
        return HandedOff(
            rows=sum(len(memory_ids) for memory_ids in pending.values()), without_vectors=len(bare)
        )

    def _pending(self, limit: int, *, uses: bool) -> dict[str, list[str]]:
        """The waiting rows' ids by user: those without vectors first (recall cannot find
        them at all), then (`uses`) those without their own uses."""
        memories = self._stores.memories
        listed = memories.pending_vectors(limit)
        if uses:
            listed += memories.pending_uses(limit)
        return _by_user(listed)

    def _waiting(
        self, user_id: str, memory_ids: Sequence[str], *, model_writes: bool
    ) -> list[Memory]:
        rows = [
            row
            for row in self._stores.memories.get_memories(user_id, memory_ids)
            if waits_for_job(row, model_writes)
        ]
        if not rows:
            return []
        # Memory switched off since the row was written: its words go to no model.
        settings = self._stores.user_state.get_settings(user_id)
        return [row for row in rows if settings.allows(row.persona)]

    def _embed_again(self, rows: Sequence[Memory]) -> UsesWritten:
        """Vectors for rows stored without, with the uses they have, each written over the
        row as read (a change since wins) and indexed."""
        embedded = changed = 0
        for row in rows:
            landed = self._land(row, row, own=False)
            if landed is None:
                continue  # the embedder failed again (logged there): the sweep retries
            embedded += landed
            changed += not landed
        return UsesWritten(
            changed=changed, embedded=embedded, unembedded=len(rows) - embedded - changed
        )

    def _write_batch(self, model: Model, rows: Sequence[Memory]) -> UsesWritten:
        requests = [UsesRequest(text=row.text, category=row.category) for row in rows]
        try:
            answers = model.write_uses(requests)
        except Exception as exc:  # never upstream: the borrowed uses stay
            log.warning(
                "memory uses not written",
                extra={"memories": len(rows), "error_type": type(exc).__name__},
            )
            return UsesWritten(asked=len(rows), unwritten=len(rows))
        if len(answers) != len(rows):
            log.warning(
                "memory uses not written: answers do not match the memories",
                extra={"memories": len(rows), "answers": len(answers)},
            )
            return UsesWritten(asked=len(rows), unwritten=len(rows))
        written = changed = 0
        for row, uses in zip(rows, answers, strict=True):
            if not uses:
                continue
            landed = self._land(row, dataclasses.replace(row, meta=with_own_uses(row.meta, uses)))
            if landed is None:
                continue
            written += landed
            changed += not landed
        return UsesWritten(
            asked=len(rows),
            written=written,
            unwritten=len(rows) - written - changed,
            changed=changed,
        )

    def _land(self, row: Memory, changed: Memory, *, own: bool = True) -> bool | None:
        """Write `changed`'s meta (its own uses, with `own`) and fresh vectors over the row
        if it is still as read, then index it: True once written, False when it changed
        meanwhile (the change wins), None when the vectors could not be made (it keeps
        what it has)."""
        prepared = self._indexer.prepare(
            dataclasses.replace(changed, embedding=None),
            replaced=self._indexer.replaced_of(self._stores.memories, changed),
        )
        if prepared.embedding is None:
            return None  # the embedder failed (logged there): nothing half-written
        if not self._stores.memories.set_uses(
            row.user_id,
            row.memory_id,
            expected=row,
            meta=prepared.meta,
            embedding=prepared.embedding,
            own=own,
        ):
            log.info("memory uses not written: changed since", extra={"memory_id": row.memory_id})
            return False
        self._indexer.publish(prepared)
        return True


def _by_user(listed: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """(user id, memory id) pairs as each user's ids, each once, in the order listed."""
    by_user: dict[str, list[str]] = {}
    for user_id, memory_id in dict.fromkeys(listed):
        by_user.setdefault(user_id, []).append(memory_id)
    return by_user


def _added(total: UsesWritten, more: UsesWritten) -> UsesWritten:
    return UsesWritten(
        *(
            getattr(total, field.name) + getattr(more, field.name)
            for field in dataclasses.fields(UsesWritten)
        )
    )
