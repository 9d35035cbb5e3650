"""What the user did since a message was said overrules what the pipeline reads in it.

The write pipeline reads a conversation after it has gone quiet. In between, the user may
have corrected a memory drawn from that very message, deleted it, or asked to forget
everything. A candidate from the message must then not bring the old belief back: the
user's act is newer than the words. Compared against the memory's history and the
tombstones — not only the active rows, where a corrected or deleted fact no longer shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain.extraction import Candidate, Dropped
from chatmemory.domain.ids import normalise_for_identity
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.tombstone import Tombstone


@dataclass(frozen=True, slots=True)
class SinceTheMessages:
    """What the store knows about the user's changes, read once per routing step.

    - `history`: rows that stopped being believed (superseded, closed), with their words;
    - `deleted_sources`: the messages deleted memories were drawn from (a tombstone keeps
      ids, never words, so the message is the link);
    - `forgotten_before`: the last "forget everything".
    """

    history: tuple[Memory, ...] = ()
    deleted_sources: frozenset[str] = frozenset()
    forgotten_before: datetime | None = None

    @classmethod
    def of(
        cls,
        memories: Iterable[Memory],
        tombstones: Iterable[Tombstone],
        forgotten_before: datetime | None,
    ) -> SinceTheMessages:
        sources = (message for tombstone in tombstones for message in tombstone.source_message_ids)
        return cls(
            history=tuple(m for m in memories if m.status is not Status.ACTIVE),
            deleted_sources=frozenset(sources),
            forgotten_before=forgotten_before,
        )


def overtaken(candidate: Candidate, said_at: datetime, since: SinceTheMessages) -> Dropped | None:
    """Why the user's own later act overrules this candidate, or None if nothing does."""
    if since.forgotten_before is not None and said_at <= since.forgotten_before:
        return Dropped.FORGOTTEN
    if since.deleted_sources.intersection(candidate.evidence):
        # The user deleted what was drawn from this message: nothing drawn from it again.
        return Dropped.DELETED
    said = normalise_for_identity(candidate.text)
    evidence = set(candidate.evidence)
    for row in since.history:
        if row.updated_at <= said_at:
            continue  # it stopped being believed before the message: the message is newer
        same_words = normalise_for_identity(row.text) == said
        same_source = bool(evidence.intersection((*row.evidence, row.source_message_id)))
        same_subject = (candidate.key is not None and row.key == candidate.key) or (
            row.category == candidate.category
        )
        if same_words or (same_source and same_subject):
            return Dropped.CORRECTED
    return None
