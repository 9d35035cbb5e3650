"""A user's rhythm (seed 003): the counters, samples and promoted patterns of when they chat.

One small state per user, read and written whole. Concurrency: two turns of one user may
sample at once, so a write is a compare-and-set on the state's `version` — the writer that
lost re-reads and samples again (sampling is idempotent per local (date, hour), so going
round again never counts a message twice). A plain replace would let the loser undo the
winner's sample or promotion.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from chatmemory.domain.rhythm import Rhythm


class RhythmStore(ABC):
    """The rhythm state of each user, one per user."""

    @abstractmethod
    def get_rhythm(self, user_id: str) -> Rhythm | None:
        """The user's state as stored (its `version` set), or None if none was stored."""

    @abstractmethod
    def put_rhythm(self, user_id: str, rhythm: Rhythm) -> Rhythm:
        """Store `rhythm` in place of the version it was read at (`rhythm.version`; 0: none
        stored yet). Returns it as stored, its version one higher.

        ConcurrentChange if the stored version is another (someone wrote first, or the
        state was deleted since): nothing is written then.
        """

    @abstractmethod
    def delete_rhythm(self, user_id: str) -> None:
        """Forget the user's rhythm ("forget everything"); nothing happens if there is none."""
