"""The profile: a function of the active memories, kept so on every path that changes them.

Any write to a person's memories (a chat's save or its background read, a memory typed,
corrected, deleted or imported, a room's write, the cap setting one aside) asks for that
persona's profile to be rebuilt, debounced (`ProfileRebuilds.soon`): a burst of writes is
one rebuild, run off the request path — the local jobs thread, or the fold queue on AWS —
and `chatmemory flush` rebuilds every profile at once. A profile also says when it is due
without any write (`Profile.stale`: built by older rules, or holding a memory that has
faded since), and the read path asks for its rebuild then. The write pipeline and the
purge rebuild it as a step of their own, as before.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from chatmemory.domain import fading, rules
from chatmemory.domain.profile import PROFILE_RULES, Profile
from chatmemory.domain.profile_digest import build_digest
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)

#: how long a burst of writes is waited out before its profile is rebuilt once
PROFILE_DEBOUNCE = timedelta(seconds=2)


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
        if current and (
            current.built_from == digest.built_from
            and current.text == digest.text
            and current.review_at == digest.review_at
            and current.built_by == PROFILE_RULES
        ):
            return False
        self._stores.user_state.put_profile(
            Profile(
                user_id=user_id,
                persona=persona,
                text=digest.text,
                token_count=digest.tokens,
                built_from=digest.built_from,
                rebuilt_at=now,
                review_at=digest.review_at,
            )
        )
        return True


class ProfileRebuilds:
    """Asks for profiles to be rebuilt off the request path, and rebuilds them."""

    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        jobs: Jobs | None = None,
        *,
        debounce: timedelta = PROFILE_DEBOUNCE,
    ) -> None:
        self._stores = stores
        self._clock = clock
        self._jobs = jobs
        self._debounce = debounce
        self._builder = ProfileBuilder(stores, clock)

    def soon(self, user_id: str, persona: str) -> None:
        """Rebuild this profile once the writes of the moment are done (a later ask
        re-arms the same timer). Never fails the write that asked: the next write, the
        read path's check and `chatmemory flush` ask again."""
        if self._jobs is None:
            return
        try:
            self._jobs.profile_later(user_id, persona, self._clock.now() + self._debounce)
        except Exception as exc:
            log.warning("profile rebuild not queued", extra={"error_type": type(exc).__name__})

    def rebuild(self, user_id: str, persona: str) -> bool:
        """Rebuild it now; True if it changed."""
        return self._builder.rebuild(user_id, persona)

    def rebuild_every(self) -> int:
        """Rebuild every profile of every user with memories, for every persona they have
        memories with (what `chatmemory flush` runs): how many changed."""
        changed = 0
        for user_id in self._stores.memories.memory_owners():
            personas = {
                memory.persona
                for memory in self._stores.memories.iter_memories(user_id, MemoryQuery(status=None))
            }
            for persona in sorted(personas | {rules.DEFAULT_PERSONA}):
                changed += self.rebuild(user_id, persona)
        return changed
