"""Change events off the audit log: published by the stream's function on AWS, by the
relay locally. A publish that fails never touches the memory write it reports (that
write committed long before); the change goes out on a later try.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chatmemory.domain.change_events import changes_of
from chatmemory.domain.events import MemoryEvent
from chatmemory.ports.audit_tail import AuditTail, SetAside
from chatmemory.ports.change_feed import ChangeFeed, ChangeFeedUnavailable

log = logging.getLogger(__name__)

#: audit events a relay reads, and so publishes at most, before it moves its cursor
RELAY_BATCH = 100


class ChangePublisher:
    """Publishes the changes a run of audit events tells (a use tells none)."""

    def __init__(self, feed: ChangeFeed | Callable[[], ChangeFeed]) -> None:
        """The feed may be a factory: a process that never publishes never builds it."""
        self._feed_part = feed

    @property
    def _feed(self) -> ChangeFeed:
        if not isinstance(self._feed_part, ChangeFeed):
            self._feed_part = self._feed_part()
        return self._feed_part

    def publish(self, events: Sequence[MemoryEvent]) -> int:
        """How many changes were published; ChangeFeedUnavailable if the feed refused."""
        changes = changes_of(events)
        if changes:
            self._feed.publish(changes)
        return len(changes)


@dataclass(frozen=True, slots=True)
class Relayed:
    """What one relay run did: audit events read, changes published, events set aside
    as unreadable, and whether the feed refused (the rest waits for the next run, from
    the cursor)."""

    read: int
    published: int
    refused: bool = False
    set_aside: int = 0


class ChangeRelay:
    """Tails the audit log from its cursor and publishes what it finds, batch by batch;
    the cursor moves only past a batch the feed took, so a stop or a refusal loses
    nothing. One relay at a time per store (another that is running is left to it).

    An event the log cannot read (a row no rule of today accepts) is set aside: logged
    once with its place and the rule it broke, counted, and passed with its batch — a
    retry would read it no better, and holding the log would stop every user's changes,
    as the stream's function does on AWS (functions/changes)."""

    def __init__(
        self, tail: AuditTail, publisher: ChangePublisher, *, batch: int = RELAY_BATCH
    ) -> None:
        self._tail = tail
        self._publisher = publisher
        self._batch = batch

    def relay(self) -> Relayed:
        """Publish everything written since the last run."""
        read = published = set_aside = 0
        with self._tail.claimed() as ours:
            if not ours:
                return Relayed(read=0, published=0)
            position = self._tail.position()
            while True:
                page = self._tail.read_after(position, self._batch)
                if page.position == position:
                    return Relayed(read=read, published=published, set_aside=set_aside)
                try:
                    published += self._publisher.publish(page.events)
                except ChangeFeedUnavailable as exc:
                    log.warning("change events not published yet", extra={"reason": str(exc)})
                    return Relayed(
                        read=read, published=published, refused=True, set_aside=set_aside
                    )
                self._tail.advance(page.position)
                position = page.position
                read += len(page.events)
                set_aside += self._set_aside(page.set_aside)

    @staticmethod
    def _set_aside(unreadable: Sequence[SetAside]) -> int:
        """Each unreadable event recorded once, as the cursor moves past it: its place
        and the rule it broke, never what it holds."""
        for event in unreadable:
            log.error(
                "audit event set aside: unreadable",
                extra={"position": event.position, "reason": event.reason},
            )
        return len(unreadable)
