"""What per-turn recall reads from the memory rows: lean digests and packed vectors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemoryDigest:
    """What per-turn recall needs to know about an active memory, without its vectors.

    `version` changes whenever the row's vectors may have changed, so an in-process index
    can keep decoded vectors and re-read only what changed: a rewrite of the row stamps
    `updated_at`, and the uses job, which leaves `updated_at` alone, changes where the
    row's uses came from. `borrowed_uses`: its uses came from its category, not from the
    memory itself.
    """

    memory_id: str
    persona: str
    importance: int
    version: str
    borrowed_uses: bool = False


class RecallSource(ABC):
    """The read path's hot loop over a user's memories in use: no text, no history.

    What a turn reads here never grows with the user's history: superseded and closed
    versions, beliefs set aside by the cap or faded (`domain/fading.py`), deleted and
    forgotten ones are never read, only the memories in use.
    """

    @abstractmethod
    def memory_digests(self, user_id: str, persona: str | None = None) -> list[MemoryDigest]:
        """Every visible memory in use now (active, unexpired, neither set aside nor
        faded), lean (all personas if None), newest first.

        Fresh: a memory written, corrected, revived or deleted shows so on the very next
        call. No vectors, no text, no history rows.
        """

    @abstractmethod
    def memory_embeddings(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The packed vectors of these memories (those that have any), by id."""
