"""The local server for security tests: the offline model, the hashing embedder for speed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.config import Container
from tests.support.local_server import Running, serve_locally
from tests.support.openapi_operations import Operation, operations


@pytest.fixture
def server(tmp_path: Path, model_cache: Path) -> Iterator[Running]:
    with serve_locally(tmp_path, model_cache, embedder="hashing") as running:
        yield running


@pytest.fixture
def container(server: Running) -> Container:
    """The server's own collaborators, to look at what was (not) stored."""
    assert server.container is not None
    return server.container


@pytest.fixture
def document(server: Running) -> dict[str, Any]:
    """The OpenAPI document exactly as the server serves it."""
    answer = server.call("GET", "/v1/openapi.json")
    assert answer.status == 200
    served: dict[str, Any] = answer.body
    return served


@pytest.fixture
def served_operations(document: dict[str, Any]) -> list[Operation]:
    found = operations(document)
    assert found, "the served document lists no operations"
    return found
