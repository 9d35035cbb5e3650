"""docs/architecture.md names every folder of the code, and only folders that exist.

The map is how a newcomer finds the file to change; a folder added without a line there,
or a line left behind by a move, fails here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
_ROW = re.compile(r"^\|(?P<names>[^|]*)\|(?P<job>.*)\|\s*$")
_NAME = re.compile(r"`([^`]+)`")


def _named_folders() -> set[str]:
    """Every folder the map's table names; `a/<x>/` rows name the `x`s in their text."""
    table = MAP.read_text(encoding="utf-8").split("## Every folder", 1)[1].split("\n## ", 1)[0]
    named: set[str] = set()
    for line in table.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        for name in _NAME.findall(row["names"]):
            if not name.endswith("/"):
                continue
            if "<" in name:
                parent = name.split("<", 1)[0]
                named |= {f"{parent}{word}/" for word in _NAME.findall(row["job"])}
            else:
                named.add(name)
    return named


def _code_folders() -> set[str]:
    """Every folder that holds a file git tracks (so caches and virtualenvs never count)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    folders: set[str] = set()
    for path in listed:
        if not (ROOT / path).exists():
            continue  # deleted in the working tree, not yet committed
        parts = Path(path).parts[:-1]
        folders |= {"/".join(parts[: depth + 1]) + "/" for depth in range(len(parts))}
    return folders


def test_every_folder_the_map_names_exists() -> None:
    assert sorted(f for f in _named_folders() if not (ROOT / f).is_dir()) == []


def test_every_folder_in_the_code_is_on_the_map() -> None:
    assert sorted(_code_folders() - _named_folders()) == []
