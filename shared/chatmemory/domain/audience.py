"""The audience rule (seed 000 §4): which memories a persona may hold in a room. Pure.

This is the whole privacy model of persona memory, evaluated in code before any model
call. No other code path may put a memory into a persona's context.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.rooms import Room

# The seed's V1_PROVEN_SCOPE. Loading a memory about Dan in a group trusts the model's
# discretion in front of the others; until the leak exam has measured that discretion,
# groups load world facts only (Kindroid's default-off shared memory, as a constant).
V1_GROUPS_LOAD_WORLD_ONLY: Final = True

_WORLD: Final = "world"
_SELF: Final = "self"
_USER_PREFIX: Final = "u:"


@dataclass(frozen=True, slots=True)
class Visible:
    """A row the persona may hold here; `confidence` when it was formed one-to-one with
    the person it is about (only they witnessed it), so it is not for other ears."""

    memory: Memory
    confidence: bool


def visible_memories(
    persona: str,
    present: frozenset[str],
    room: Room,
    rows: Iterable[Memory],
    settings: Mapping[str, MemorySettings],
    *,
    groups_load_world_only: bool = V1_GROUPS_LOAD_WORLD_ONLY,
) -> list[Visible]:
    """What this persona may have in its head in THIS room, right now; code decides what
    enters the context, the model only how to use it.

    `rows` are the candidates the caller read; only this persona's active rows count, so
    passing too much never widens what is seen. `present` is who is in the room now (user
    ids); `settings[user_id]` is each present user's switches. The result keeps the input
    order (ranking is a separate step).

    - an incognito room, or a persona not seated in the room: nothing;
    - a world fact: loaded;
    - a row about a user (`u:<id>`): loaded only while that user is present, has memory on
      and has not muted the persona; tagged `confidence` when formed one-to-one;
    - the persona's own promise or open loop (`self`): loaded only while its counterpart is
      present, with memory on and the persona not muted — a promise to Dan is about Dan
      too (the seed is silent on a muted counterpart; not loading is the safe side). A
      self row with no counterpart is with no one here and is not loaded;
    - a present user with no entry in `settings`: the rule cannot know their switches, so
      nothing about them is loaded;
    - a group room (anything but a private chat) under `groups_load_world_only`: world
      facts only;
    - a thread (the parts of someone's story the persona follows, seed 004 law 6): only in
      a private chat, whatever the group scope — following someone's story is for them
      alone.

    About someone absent, a row does not exist for this room: the model cannot leak what
    it never sees.
    """
    if room.incognito or persona not in room.personas:
        return []
    world_only = groups_load_world_only and not room.is_private_chat
    allowed = _users_who_allow(persona, present, settings)
    visible: list[Visible] = []
    for memory in rows:
        if memory.persona != persona or memory.status is not Status.ACTIVE:
            continue
        if memory.subject == _WORLD:
            visible.append(Visible(memory, confidence=False))
            continue
        user = _whom_about(memory)
        if world_only or user is None or user not in allowed:
            continue
        if memory.kind is Kind.THREAD and not room.is_private_chat:
            continue
        visible.append(Visible(memory, confidence=set(memory.witnessed) == {user}))
    return visible


def _users_who_allow(
    persona: str, present: frozenset[str], settings: Mapping[str, MemorySettings]
) -> frozenset[str]:
    """The present users whose own switches let this persona remember them here."""
    allowed = set()
    for user in present:
        switches = settings.get(user)
        # Settings filed under the wrong user are as good as none: they do not speak for them.
        if switches is not None and switches.user_id == user and switches.allows(persona):
            allowed.add(user)
    return frozenset(allowed)


def _whom_about(memory: Memory) -> str | None:
    """The user a non-world row concerns: its subject's, or a self row's counterpart's."""
    whom = memory.counterpart if memory.subject == _SELF else memory.subject
    if whom is None or not whom.startswith(_USER_PREFIX):
        return None
    return whom.removeprefix(_USER_PREFIX)
