"""The persona block's budget (seed 000 §3, §6): characters and tokens per persona per
present human, as the store grows.

Run:  .venv/bin/python bench/persona_block.py

Each simulated human holds N memories with the persona (drawn from the labelled set in
bench/data, dated over the last year, importance 3 to 9, a few promises and open loops) and
a full 400-character note; the persona also holds 20 world facts. The block is built by
the same pure functions the service uses (the audience rule, then the block), for a
private chat and for groups of 2 and 4 humans — under v1's rule (groups load world facts
only) and, to show what switching the group scope on would cost, without it. Tokens are
the estimate the prompt uses (`domain/tokens.py`). The private chat is measured again with
five live threads the persona follows (seed 004: a job hunt, a house hunt, held shares, a
baby on the way, an exam), heard 2 to 40 days ago, to show what following a story costs
inside the same 1,200-character budget.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from chatmemory.domain.audience import visible_memories  # noqa: E402
from chatmemory.domain.memory import Kind, Memory  # noqa: E402
from chatmemory.domain.memory_settings import MemorySettings  # noqa: E402
from chatmemory.domain.persona_block import PersonaBlock, build_persona_block  # noqa: E402
from chatmemory.domain.rooms import Room, RoomKind  # noqa: E402
from chatmemory.domain.threads import Cadence, ThreadMeta  # noqa: E402
from chatmemory.domain.tokens import estimate_tokens  # noqa: E402

PERSONA = "warren"
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
SIZES = (5, 20, 100, 500)
NOTE = ("I'm Dan. I work nights, so keep mornings light. Metric units please. " * 6)[:400]


def _texts() -> list[str]:
    lines = (ROOT / "bench/data/retrieval_memories.jsonl").read_text().splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]


def _rows(user: str, count: int, texts: list[str], rng: random.Random) -> list[Memory]:
    rows = []
    for index in range(count):
        created = NOW - timedelta(days=rng.randint(0, 365))
        kind = Kind.FACT
        subject, counterpart = f"u:{user}", None
        if index % 25 == 3:
            kind = Kind.OPEN_LOOP
        elif index % 25 == 7:
            kind, subject, counterpart = Kind.PROMISE, "self", f"u:{user}"
        rows.append(
            Memory(
                user_id=user,
                memory_id=f"mem_{user}_{index}",
                text=texts[index % len(texts)],
                created_at=created,
                updated_at=created,
                persona=PERSONA,
                subject=subject,
                counterpart=counterpart,
                witnessed=(user,),
                kind=kind,
                importance=rng.randint(3, 9),
            )
        )
    return rows


def _world(rng: random.Random) -> list[Memory]:
    return [
        Memory(
            user_id=PERSONA,
            memory_id=f"mem_world_{index}",
            text=f"The city's new metro line {index} opened to the public in 2026.",
            created_at=NOW - timedelta(days=rng.randint(0, 365)),
            updated_at=NOW,
            persona=PERSONA,
            subject="world",
            kind=Kind.EVENT,
            importance=4,
        )
        for index in range(20)
    ]


STORY = (
    ("Is job-hunting: second round at Acme on Friday 2026-11-27; wants remote.", Cadence.FAST, 9),
    ("Is house-hunting in Xuhui: two bedrooms under ¥8m, viewing on Saturday.", Cadence.SLOW, 2),
    ("Bought TSLA at $10; holding until $100.", Cadence.SLOW, 40),
    ("Partner is expecting a baby in March 2027.", Cadence.SLOW, 20),
    ("Is preparing for the GATE exam on 2027-02-06.", Cadence.EVENT, 5),
)


def _threads(user: str) -> list[Memory]:
    return [
        Memory(
            user_id=user,
            memory_id=f"mem_{user}_thread_{index}",
            text=text,
            created_at=NOW - timedelta(days=heard),
            updated_at=NOW - timedelta(days=heard),
            persona=PERSONA,
            witnessed=(user,),
            kind=Kind.THREAD,
            importance=7,
            meta=ThreadMeta(cadence=cadence).to_meta(),
        )
        for index, (text, cadence, heard) in enumerate(STORY)
    ]


def _block(humans: int, size: int, *, world_only: bool, threads: bool = False) -> PersonaBlock:
    rng = random.Random(size * 10 + humans)
    texts = _texts()
    users = [f"user{n}" for n in range(humans)]
    rows = [row for user in users for row in _rows(user, size, texts, rng)] + _world(rng)
    if threads:
        rows += [row for user in users for row in _threads(user)]
    settings = {user: MemorySettings(user_id=user, note=NOTE) for user in users}
    room = Room(
        room_id="room_bench",
        kind=RoomKind.PRIVATE if humans == 1 else RoomKind.GROUP,
        created_at=NOW,
        personas=frozenset({PERSONA}),
        members=frozenset(users),
    )
    present = frozenset(users)
    visible = visible_memories(
        PERSONA, present, room, rows, settings, groups_load_world_only=world_only
    )
    personal = room.is_private_chat or not world_only
    notes = {user: NOTE for user in users} if personal else {}
    return build_persona_block(PERSONA, present, visible, notes=notes, now=NOW)


def main() -> None:
    print("| room | memories per human | lines | block chars (meter) | block tokens |")
    print("|---|---|---|---|---|")
    for humans, world_only, threads, label in (
        (1, True, False, "private chat"),
        (1, True, True, "private chat + 5 threads"),
        (2, True, False, "group of 2 (v1: world only)"),
        (4, True, False, "group of 4 (v1: world only)"),
        (2, False, False, "group of 2 (group scope on)"),
        (4, False, False, "group of 4 (group scope on)"),
    ):
        for size in SIZES:
            block = _block(humans, size, world_only=world_only, threads=threads)
            tokens = estimate_tokens(block.text)
            print(
                f"| {label} | {size} | {len(block.memory_ids)} | {block.meter} "
                f"({len(block.text)} with its frame) | {tokens} "
                f"({tokens // humans} per human) |"
            )


if __name__ == "__main__":
    main()
