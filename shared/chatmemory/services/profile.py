"""The profile digest, rebuilt from the active memories whenever one it rests on changes.

Both pipelines need it: the write pipeline after it changed a memory the profile was
built from, the purge after it removed one.
"""

from __future__ import annotations

from chatmemory.domain import fading
from chatmemory.domain.profile import Profile
from chatmemory.domain.profile_digest import build_digest
from chatmemory.ports.clock import Clock
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores


class ProfileBuilder:
    def __init__(self, stores: Stores, clock: Clock) -> None:
        self._stores = stores
        self._clock = clock

    def rebuild(self, user_id: str, persona: str) -> bool:
        """Rebuild the digest from what is visible and in use now; unchanged, it is not rewritten.

        Tombstoned rows are not visible, so a rebuild never brings a deleted memory back.
        """
        now = self._clock.now()
        memories = [
            memory  # archived beliefs (seed 003) are kept, never read into a prompt
            for memory in self._stores.memories.iter_memories(user_id, MemoryQuery(persona=persona))
            if fading.in_use(memory, now)
        ]
        digest = build_digest(memories)
        current = self._stores.user_state.get_profile(user_id, persona)
        if current and current.built_from == digest.built_from and current.text == digest.text:
            return False
        self._stores.user_state.put_profile(
            Profile(
                user_id=user_id,
                persona=persona,
                text=digest.text,
                token_count=digest.tokens,
                built_from=digest.built_from,
                rebuilt_at=self._clock.now(),
            )
        )
        return True
