"""Which embedder made the vectors in a state folder.

The hashing stand-in and MiniLM both make 384-dimension vectors, so nothing in a row
tells them apart; a folder first used without the model installed and later with it
would compare one model's question with the other's memories and recall nothing useful.
The folder keeps the name of the embedder that wrote it; the server says so when that is
not the one it runs, and `chatmemory reindex --reembed` makes it true again.
"""

from __future__ import annotations

from pathlib import Path

MARK = "embedder.txt"


def embedder_changed(state_dir: Path, name: str) -> str | None:
    """The name of the embedder this folder's vectors came from, if it is not `name`;
    None when it is (a folder without a mark takes `name` as its own)."""
    mark = state_dir / MARK
    if not mark.exists():
        mark_embedder(state_dir, name)
        return None
    recorded = mark.read_text(encoding="utf-8").strip()
    return None if recorded == name else recorded


def mark_embedder(state_dir: Path, name: str) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / MARK).write_text(name + "\n", encoding="utf-8")
