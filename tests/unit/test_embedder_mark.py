"""A state folder remembers which embedder made its vectors."""

from __future__ import annotations

from pathlib import Path

from chatmemory.local.embedder_mark import embedder_changed, mark_embedder


def test_a_new_folder_takes_the_embedder_it_first_runs_as_its_own(tmp_path: Path) -> None:
    assert embedder_changed(tmp_path, "minilm-l6-v2") is None
    assert embedder_changed(tmp_path, "minilm-l6-v2") is None
    assert embedder_changed(tmp_path, "hashing-384") == "minilm-l6-v2"


def test_marking_it_again_makes_the_new_embedder_its_own(tmp_path: Path) -> None:
    embedder_changed(tmp_path, "hashing-384")
    mark_embedder(tmp_path, "minilm-l6-v2")
    assert embedder_changed(tmp_path, "minilm-l6-v2") is None
