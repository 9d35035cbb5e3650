"""A user with a long past: a few memories in use, and many rows that are history.

What a real user's partition looks like after a year or two of chatting: facts corrected
again and again (superseded versions), beliefs that ended (closed), beliefs the cap set
aside or that faded, deleted ones (tombstones, their rows purged), and the conversations
they came from. Written through the stores' own writes, so every row and marker is what
the product writes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain import fading
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.domain.memory import Memory
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from chatmemory.services.indexing import MemoryIndexer
from tests.support import builders

#: what the user has in use, and what a turn asks about
IN_USE = (
    ("Is vegetarian and loves spicy food.", "diet", ("suggest a dinner recipe",)),
    ("Lives in Bengaluru.", "location", ("recommend a weekend trip",)),
    ("Works as a data engineer.", "work", ("help me plan my week",)),
    ("Has a daughter who plays football.", "family", ("plan a family weekend",)),
    ("Plays chess on weekends.", "hobbies", ("find a new hobby",)),
)
QUESTION = "Any spicy vegetarian dinner ideas for tonight?"

# What each next stretch of history is, in turn: 28 rows in 4 facts corrected five times
# and then closed, 2 beliefs set aside by the cap, one that faded, one deleted.
_PAST = ("chain", "set_aside", "chain", "faded", "deleted", "chain", "set_aside", "chain")
_CHAIN = 6  # versions of one fact: five superseded, the last closed


@dataclass(frozen=True, slots=True)
class Past:
    in_use: int
    history: int
    conversation_id: str


def seed(
    stores: Stores,
    clock: ManualClock,
    indexer: MemoryIndexer,
    user_id: str,
    *,
    in_use: int,
    history: int,
    conversations: int = 0,
) -> Past:
    """`in_use` memories in use and `history` rows that are not (give or take one chain),
    then `conversations` short conversations; the clock ends where it began plus a day."""
    start = clock.now()
    clock.set(start - timedelta(days=800))
    deletions = Deletions(stores)
    written = 0
    # Each row moves the clock on by a step or a little more (a fact's last version is
    # closed a step later): the history ends well before the memories in use begin.
    step = timedelta(days=600) / max(history, 1)

    def row(text: str, category: str = "general", **fields: object) -> Memory:
        memory = builders.memory(
            user_id, text, clock.now(), category=category, meta={"seen": 1}, **fields
        )
        return indexer.prepare(memory)

    def later() -> None:
        clock.advance(step)

    n = 0
    while written < history:
        n += 1
        kind = _PAST[n % len(_PAST)]
        if kind == "chain":  # a fact corrected until it ended
            current = row(f"Commutes by route {n}.0 to the office.", "work", key=f"commute_{n}")
            stores.memories.add_memory(current)
            for version in range(1, _CHAIN):
                later()
                newer = row(
                    f"Commutes by route {n}.{version} to the office.",
                    "work",
                    key=f"commute_{n}",
                    supersedes=current.memory_id,
                )
                stores.memories.supersede_memory(user_id, current.memory_id, newer)
                current = newer
            later()
            stores.memories.close_memory(user_id, current.memory_id, clock.now())
            written += _CHAIN
        elif kind == "set_aside":  # by the cap
            memory = row(f"Once liked board game number {n}.", "hobbies")
            stores.memories.add_memory(memory)
            stores.memories.set_fading(user_id, [fading.set_aside(memory, clock.now())])
            written += 1
        elif kind == "faded":  # a mood from long ago, never said again
            stores.memories.add_memory(row(f"Felt tired on day {n}.", "mood"))
            written += 1
        else:  # deleted, and purged since
            memory = row(f"Mentioned a private matter number {n}.", "health")
            stores.memories.add_memory(memory)
            tombstone = Tombstone(
                user_id=user_id, memory_id=memory.memory_id, deleted_at=clock.now()
            )
            deletions.tombstone_memories(user_id, [tombstone])
            stores.visibility.purge_memories(user_id, [memory.memory_id])
            stores.tombstones.put_tombstone(dataclasses.replace(tombstone, purged_at=clock.now()))
            written += 1
        later()

    clock.set(start)
    for i in range(in_use):
        text, category, uses = IN_USE[i % len(IN_USE)]
        if i >= len(IN_USE):
            text = f"{text.rstrip('.')} (note {i})."
        memory = builders.memory(
            user_id, text, clock.now(), category=category, meta={"uses": list(uses)}
        )
        stores.memories.add_memory(indexer.prepare(memory))
    conversation_id = ""
    for _c in range(max(conversations, 1)):
        conversation = builders.conversation(user_id, clock.now())
        stores.conversations.append_messages(
            user_id,
            conversation.conversation_id,
            [
                NewMessage(Role.USER, "What should I cook tonight?", 8),
                NewMessage(Role.ASSISTANT, "How about a spicy paneer curry?", 9),
            ],
            clock.now(),
            create=conversation,
        )
        conversation_id = conversation.conversation_id
        clock.advance(timedelta(minutes=1))
    clock.set(start + timedelta(days=1))
    return Past(in_use=in_use, history=written, conversation_id=conversation_id)
