"""What every store contract module shares: the users, the queries, small setups."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.conversation import Conversation, Role
from chatmemory.domain.memory import Memory, Status
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from tests.support import builders

ALICE = "alice"
BOB = "bob"
CAROL = "carol"
SUPERSEDED = MemoryQuery(status=Status.SUPERSEDED)
EVERY_STATUS = MemoryQuery(status=None)


def all_ids(stores: Stores, user_id: str, query: MemoryQuery | None = None) -> list[str]:
    return [m.memory_id for m in stores.memories.iter_memories(user_id, query)]


def corrected(stores: Stores, clock: ManualClock) -> tuple[Memory, Memory]:
    """Pune, superseded a month later by Bengaluru."""
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now(), key="home_city")
    stores.memories.add_memory(pune)
    clock.advance(timedelta(days=30))
    bengaluru = builders.memory(
        ALICE, "Lives in Bengaluru.", clock.now(), key="home_city", supersedes=pune.memory_id
    )
    stores.memories.supersede_memory(ALICE, pune.memory_id, bengaluru)
    clock.advance(timedelta(hours=1))
    return pune, bengaluru


def eight_turns(stores: Stores, clock: ManualClock) -> Conversation:
    """A conversation of Alice's with eight user messages and no summary yet."""
    conversation = builders.conversation(ALICE, clock.now())
    stores.conversations.create_conversation(conversation)
    for turn in range(8):
        stores.conversations.append_message(
            ALICE,
            conversation.conversation_id,
            role=Role.USER,
            content=f"turn {turn}",
            tokens=2,
            at=clock.now(),
        )
    return conversation


def concurrently(writer: Callable[[str], None], writers: int = 3) -> list[BaseException]:
    """Run `writer("w0")`, `writer("w1")`, … on their own threads at once; what they raised."""
    return at_once(*(lambda name=f"w{n}": writer(name) for n in range(writers)))


def at_once(*work: Callable[[], object]) -> list[BaseException]:
    """Run each piece of work on its own thread, all released together and switched as
    often as the interpreter allows (so their reads and writes interleave); what they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(work))

    def run(piece: Callable[[], object]) -> None:
        try:
            start.wait()
            piece()
        except BaseException as exc:  # handed back to the test
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(piece,)) for piece in work]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    return errors
