"""Fixtures every test may use: a hand-driven clock, fake AWS credentials, both stores."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.ports.stores import Stores
from tests.gates import tally
from tests.support.stores import STORE_KINDS, open_stores

START = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fake credentials and a region, so nothing can reach a real AWS account."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield


@pytest.fixture(params=STORE_KINDS)
def stores(
    request: pytest.FixtureRequest, clock: ManualClock, tmp_path: Path, aws_env: None
) -> Iterator[Stores]:
    """Each test that asks for the stores runs once on SQLite and once on DynamoDB (moto)."""
    with open_stores(request.param, clock, tmp_path) as opened:
        yield opened


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for derived model files (the ONNX export) for the whole test run."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def minilm(model_cache: Path) -> Any:
    """The real local model, loaded once for the whole run (skipped if not installed)."""
    from chatmemory.adapters.minilm_embedder import MiniLMEmbedder, minilm_available  # noqa: PLC0415

    if not minilm_available():
        pytest.skip("the local model is not installed")
    return MiniLMEmbedder(cache_dir=model_cache)


# ---- the privacy gates' counts, printed at the end of every run (with or without xdist) ----


@pytest.hookimpl(trylast=True)  # after the last fixtures (the gates' server) are torn down
def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand the gates' counts to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["gate_counts"] = tally.exported()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: a worker finished; keep its gates' counts."""
    tally.absorb(getattr(node, "workeroutput", {}).get("gate_counts", {}))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = tally.summary_lines()
    if lines:
        terminalreporter.section("privacy release gates")
        for line in lines:
            terminalreporter.write_line(line)
    for exam, counts in sorted(tally.EXAMS.items()):
        terminalreporter.section(f"the {exam} exam")
        for line in counts:
            terminalreporter.write_line(line)
