"""Storage benchmark: bytes per memory row with its vectors (under 4 KB, one read unit).

Run:  .venv/bin/python bench/storage.py

Writes the 500 labelled memories (with the recorded extractor uses) through the real
indexer, then sizes each row as DynamoDB bills it (attribute names + values, per the
DynamoDB item-size rules) and as SQLite stores it (the sum of its column bytes).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from chatmemory.adapters.clock import SystemClock  # noqa: E402
from chatmemory.config import Container, Settings  # noqa: E402
from chatmemory.domain.memory import Memory  # noqa: E402

DATA = ROOT / "bench" / "data"


def dynamodb_item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's item size: UTF-8 name + value bytes (numbers ~ digits/2 + 1)."""
    total = 0
    for name, value in item.items():
        total += len(name.encode())
        kind, raw = next(iter(value.items()))
        if kind == "S":
            total += len(raw.encode())
        elif kind == "B":
            total += len(raw) if isinstance(raw, bytes) else len(raw) * 3 // 4
        elif kind == "N":
            total += len(str(raw).lstrip("-").replace(".", "")) // 2 + 1
        elif kind == "BOOL":
            total += 1
        elif kind == "L":
            total += 3 + sum(dynamodb_item_bytes({"": element}) + 1 for element in raw)
        elif kind == "NULL":
            total += 1
    return total


def main() -> None:
    memories = [
        json.loads(line) for line in (DATA / "retrieval_memories.jsonl").read_text().splitlines()
    ]
    hints = {
        row["id"]: row
        for row in map(json.loads, (DATA / "retrieval_memory_hints.jsonl").read_text().splitlines())
    }
    with tempfile.TemporaryDirectory() as folder:
        container = Container(Settings(state_dir=Path(folder), embedder="minilm"), SystemClock())
        now = container.clock.now()
        rows = [
            container.indexer.prepare(
                Memory(
                    user_id="a-realistic-user-id-0123456789",
                    memory_id=f"mem_{'0' * 28}{m['id'][1:]}",
                    text=m["text"],
                    category=m["category"],
                    importance=hints[m["id"]]["importance"],
                    created_at=now,
                    updated_at=now,
                    evidence=(f"msg_{'a' * 32}_12",),
                    source_message_id=f"msg_{'a' * 32}_12",
                    room_id=f"conv_{'a' * 32}",
                    meta={"uses": hints[m["id"]]["uses"]},
                )
            )
            for m in memories
        ]
        from chatmemory.adapters.dynamodb.items import bind_items  # noqa: PLC0415
        from chatmemory.adapters.dynamodb.mapping import memory_item  # noqa: PLC0415

        bound = bind_items("sizing", "eu-west-1")  # only the row mapping is used here
        items = [memory_item(bound, row).serialize() for row in rows]
        dynamo_bytes = [dynamodb_item_bytes(item) for item in items]
        vector_bytes = [len(row.embedding or b"") for row in rows]
        text_bytes = [len(row.text.encode()) for row in rows]
    print(
        "\n## Storage per memory row (500 labelled memories, MiniLM, the text at 8 bits + up "
        f"to {container.indexer.max_uses} uses at 4 bits)\n"
    )
    print("| measure | mean | p95 | max |\n|---|---|---|---|")
    for label, values in (
        ("DynamoDB item, bytes (all attributes)", dynamo_bytes),
        ("of which packed vectors, bytes", vector_bytes),
        ("of which memory text, bytes", text_bytes),
    ):
        ordered = sorted(values)
        print(
            f"| {label} | {statistics.fmean(values):.0f} | {ordered[int(len(ordered) * 0.95)]} "
            f"| {ordered[-1]} |"
        )


if __name__ == "__main__":
    main()
