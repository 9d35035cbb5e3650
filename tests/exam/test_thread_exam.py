"""The thread exam in CI, with the offline stand-in, over the local server's chat API: one
ask at the opening with its anchors, no re-ask after a deflection, the context back when
the person raises it, one acknowledgement and then silence, and recall unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.minilm_embedder import minilm_available
from chatmemory.config import Settings
from tests.exam.thread_exam import (
    ROOT,
    START,
    ChatDriver,
    ExamWorld,
    ThreadCounts,
    open_world,
    run_exam,
)
from tests.gates import tally


@pytest.fixture
def world(
    tmp_path: Path, model_cache: Path, request: pytest.FixtureRequest, monkeypatch: Any
) -> Iterator[ExamWorld]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    embedder = request.getfixturevalue("minilm") if minilm_available() else HashingEmbedder()
    settings = Settings(
        state_dir=tmp_path,
        project_root=ROOT,
        model_cache=model_cache,
        model="offline",
        jobs="local",
        pipeline="local",
    )
    opened = open_world(
        settings, ManualClock(START), "thread-exam-test-secret-0123456789", embedder
    )
    yield opened
    opened.stop()


def test_the_persona_follows_the_story_and_never_nags(world: ExamWorld) -> None:
    counts = run_exam(ChatDriver(world.api, world.clock, world.background), ThreadCounts("offline"))

    tally.record_lines("threads", counts.lines())
    assert counts.planted and counts.beats == 2
    assert counts.asked_at_reopen == 1
    assert counts.max_asks_per_session <= 1
    assert counts.asks_without_anchors == 0
    assert counts.re_asks_after_deflection == 0
    assert counts.context_back
    assert counts.acknowledged and counts.became_fact
    assert counts.asks_after_resolution == 0
    assert counts.recall_kept or not minilm_available()
