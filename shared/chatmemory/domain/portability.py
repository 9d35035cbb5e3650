"""Export and import: the rules that let a user's memories leave and come back unchanged.

An export holds every version the store shows of a user (active, archived, superseded and
closed), never a deleted one. An import lands each of them again under two rules:

- **Ids.** A deleted id is never reused. So a row keeps its id where this store never
  deleted it, and otherwise takes `imported_memory_id(user, id, generation)`: the first
  generation this store has not deleted either. The rule reads only the id, so a link
  (`supersedes`, `closed_by`, a thread's `concluded_by`) is mapped by the same rule in any
  batch, without the row it names.
- **System time.** "Forget everything" hides every row learned up to that instant, for
  good. A row learned before the user's last "forget everything" is learned again at the
  import: its `created_at` (and `updated_at`) move to the import's instant, in the order
  the rows were first learned; its world time, its evidence and its manners are kept. A
  row learned after it keeps every time it had.
- **Retention.** Importing a memory is new evidence for it: it arrives fresh (`arrived`),
  its last evidence the import's instant, whatever age its dates give it — history
  brought from another store (ChatGPT's, mem0's, another deployment's) is not faded on
  arrival.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Final

from chatmemory.domain.ids import CHATMEMORY_NAMESPACE
from chatmemory.domain.memory import Memory

#: the document's name and version; a new shape gets a new number
EXPORT_SCHEMA: Final = "chatmemory.export/1"
#: how many rows one page of an export holds at most (well under Lambda's 6 MB answer)
EXPORT_PAGE_MAX: Final = 500
#: how many rows one import call takes at most: about what 64 KiB holds, and what one
#: call embeds well within the function's 29 seconds
IMPORT_BATCH_MAX: Final = 100
#: the meta key a resolved thread names the fact it rests under with (services/threads.py)
CONCLUDED_BY: Final = "concluded_by"

_SEPARATOR = "\x1f"
_TICK = timedelta(microseconds=1)


def imported_memory_id(user_id: str, original_id: str, generation: int) -> str:
    """The id an imported row lands on: generation 0 is the id it was exported with; each
    later one a uuid5 of the user and that id, for a store that deleted the earlier ones."""
    if generation == 0:
        return original_id
    name = _SEPARATOR.join(("import", user_id, original_id, str(generation)))
    return "mem_" + uuid.uuid5(CHATMEMORY_NAMESPACE, name).hex


def relinked(memory: Memory, landing: Callable[[str], str]) -> Memory:
    """The row with its own id and every link it holds mapped by `landing`."""
    meta = dict(memory.meta)
    concluded = meta.get(CONCLUDED_BY)
    if isinstance(concluded, str):
        meta[CONCLUDED_BY] = landing(concluded)
    return dataclasses.replace(
        memory,
        memory_id=landing(memory.memory_id),
        supersedes=None if memory.supersedes is None else landing(memory.supersedes),
        closed_by=None if memory.closed_by is None else landing(memory.closed_by),
        meta=meta,
    )


def relearned(
    memories: Sequence[Memory], forgotten_before: datetime | None, now: datetime
) -> list[Memory]:
    """The rows as an import writes them, in the order given.

    Those learned at or before `forgotten_before` would be hidden by it: they are learned
    again now, one microsecond apart in the order they were first learned (so a listing,
    newest first, keeps its order), each keeping its last evidence (`reinforced_at`) as
    its own; the import then reinforces it (`arrived`). The others are returned as they
    are.
    """
    if forgotten_before is None:
        return list(memories)
    hidden = sorted(
        (i for i, memory in enumerate(memories) if memory.created_at <= forgotten_before),
        key=lambda i: (memories[i].created_at, memories[i].memory_id),
    )
    start = max(forgotten_before + _TICK, now - _TICK * len(hidden))
    moved = {i: start + _TICK * order for order, i in enumerate(hidden)}
    return [
        _learned_at(memory, moved[i]) if i in moved else memory for i, memory in enumerate(memories)
    ]


def _learned_at(memory: Memory, at: datetime) -> Memory:
    return dataclasses.replace(
        memory,
        created_at=at,
        updated_at=at,
        reinforced_at=memory.reinforced_at or memory.created_at,
    )


def arrived(memory: Memory, at: datetime) -> Memory:
    """The row as an import at `at` lands it: its dates as they were, fresh in retention.

    Importing is a reinforcement: its last evidence (`reinforced_at`) is the import's
    instant, unless its own is later, so its retention starts again from 1 however long
    ago it was learned; its stability is the one it had (an import is not the belief said
    again, so no spacing gain). Like any reinforced belief it is back in use if the cap
    had set it aside where it came from (`archived_at` dropped): the cap here decides
    anew, after the batch.
    """
    last = memory.reinforced_at
    return dataclasses.replace(
        memory, reinforced_at=at if last is None or last < at else last, archived_at=None
    )


def same_memory(stored: Memory, imported: Memory) -> bool:
    """Whether the row already stored is the one being imported: the same words, place and
    standing. Its uses, evidence and fading may have moved on since; those are kept."""
    return (
        stored.text == imported.text
        and stored.category == imported.category
        and stored.persona == imported.persona
        and stored.kind == imported.kind
        and stored.status == imported.status
    )
