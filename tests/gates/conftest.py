"""The privacy release gates' shared world: one local server for the whole folder.

The gates (seed 002, "Deletion and isolation"; ARCHITECTURE.md "Rules that are code")
are release gates, not metrics: each must end with zero hits. Their counts are printed
at the end of every run, passing or not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.minilm_embedder import minilm_available
from chatmemory.config import Settings, use_container
from chatmemory.local.server import LocalGateway, LocalServer
from chatmemory.local.tokens import LocalTokens
from tests.gates import tally
from tests.gates.recording import Recorder
from tests.gates.service import ROOT, Api, GateWorld, Problems, RecordedContainer

START = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
SIGNING_SECRET = "gates-local-signing-secret-0123456789abcdef"


@pytest.fixture(scope="package")
def gate_embedder(request: pytest.FixtureRequest) -> Any:
    """The local MiniLM model when it is installed (as `chatmemory serve` would pick),
    else the hashing embedder."""
    if minilm_available():
        return request.getfixturevalue("minilm")
    return HashingEmbedder()


@pytest.fixture(scope="package")
def world(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, gate_embedder: Any
) -> Iterator[GateWorld]:
    """The local server on a free port with the offline model, a hand-driven clock and a
    recorded store, shared by every gate (each gate uses accounts of its own)."""
    state_dir = tmp_path_factory.mktemp("gates")
    clock = ManualClock(START)
    settings = Settings(
        state_dir=state_dir,
        project_root=ROOT,
        model_cache=model_cache,
        model="offline",
        jobs="local",
        pipeline="local",
    )
    container = RecordedContainer(settings, clock, gate_embedder, Recorder())
    tokens = LocalTokens(SIGNING_SECRET)
    problems = Problems()
    product_log = logging.getLogger("chatmemory")
    started = time.perf_counter()
    with pytest.MonkeyPatch.context() as environment:
        # Two thousand requests would each print a CloudWatch metrics blob.
        environment.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        use_container(container)
        product_log.addHandler(problems)
        server = LocalServer("127.0.0.1", 0, LocalGateway(ROOT, tokens))
        server.start()
        api = Api(server.url, tokens.issue, tokens.issue_app)
        try:
            yield GateWorld(api=api, clock=clock, container=container, problems=problems)
        finally:
            server.stop()
            product_log.removeHandler(problems)
            use_container(None)
            tally.TOTALS.update(requests=api.requests, seconds=time.perf_counter() - started)


@pytest.fixture(autouse=True)
def _no_problems_carried_over(request: pytest.FixtureRequest) -> None:
    """Each gate starts with no warnings recorded from the product's log."""
    if "world" in request.fixturenames:
        request.getfixturevalue("world").problems.records.clear()
