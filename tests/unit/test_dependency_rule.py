"""The dependency rule, checked on the code itself: every import points inward.

functions and the other edges → services → domain; services → ports; adapters are
chosen only in `config.py`. A change that breaks the rule fails here, naming the import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "chatmemory"

#: what each inner layer may import from the package (itself always)
INNER_LAYERS: dict[str, frozenset[str]] = {
    "domain": frozenset(),
    "ports": frozenset({"domain"}),
    "services": frozenset({"domain", "ports", "prompts"}),
    "adapters": frozenset({"domain", "ports", "prompts"}),
}


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import of the package in a file, nested ones too."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:  # `from chatmemory import adapters`
                if node.module == "chatmemory":
                    yield node.lineno, f"chatmemory.{alias.name}"


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "chatmemory" else None


def _breaks(files: list[Path], allowed: frozenset[str], own: str | None) -> list[str]:
    found = []
    for path in files:
        for line, module in _imports(path):
            layer = _layer(module)
            if layer is not None and layer != own and layer not in allowed:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return found


@pytest.mark.parametrize("layer", sorted(INNER_LAYERS))
def test_an_inner_layer_imports_only_what_is_further_in(layer: str) -> None:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files
    assert _breaks(files, INNER_LAYERS[layer], layer) == []


def test_only_config_chooses_adapters() -> None:
    # Given every module outside the adapters and config.py, the handlers included
    edges = [
        path
        for path in [*PACKAGE.rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
        if not path.is_relative_to(PACKAGE / "adapters") and path != PACKAGE / "config.py"
    ]
    # Then none of them imports an adapter (so none can build one or test for one)
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in edges
        for line, module in _imports(path)
        if _layer(module) == "adapters"
    ]
    assert found == []
