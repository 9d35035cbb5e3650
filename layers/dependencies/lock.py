"""Writes the lock (`requirements.lock`) and the layer's pins from one installed environment.

`make lock` runs this inside a fresh virtualenv where `.[local,dev]` was just installed, so
the versions the tests run against are, by construction, the versions the Lambda layer
ships: the lock pins every installed distribution; the layer pins the runtime closure of
the project's own dependencies (no extras) as the Lambda runtime resolves them (Linux,
CPython 3.12), minus what the runtime already provides (boto3 and its botocore and
s3transfer: a layer's copy would shadow the runtime's) and what is never imported
(opensearch-py's gRPC transport: opensearch-protobufs, grpcio, protobuf). The layer is
installed with --no-deps, so nothing outside this list can slip in.

`--check` compares instead of writing: it exits 1 if either file is out of date.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
LAYER = ROOT / "layers" / "dependencies" / "requirements.txt"
PROJECT = "chatmemory"
#: the installer itself: every virtualenv has its own, and pinning it would fight that
INSTALLER = frozenset({"pip", "setuptools", "wheel"})

#: provided by the Lambda Python runtime (a layer's copy would shadow it)
RUNTIME_PROVIDED = frozenset({"boto3", "botocore", "s3transfer"})
#: installed by opensearch-py for its gRPC transport, which chatmemory never imports
NEVER_IMPORTED = frozenset({"opensearch-protobufs", "grpcio", "protobuf"})
LEFT_OUT = RUNTIME_PROVIDED | NEVER_IMPORTED

#: where the layer runs: markers are evaluated for this environment, not the build host
LAMBDA_ENVIRONMENT = {
    **default_environment(),
    "python_version": "3.12",
    "python_full_version": "3.12.0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "platform_machine": "aarch64",
}

LOCK_HEADER = """\
# Every package the tests run against, exactly. Written by `make lock` from a fresh
# virtualenv (never by hand); `make test` and `make run` install with `-c` this file, and
# the Lambda layer's pins (layers/dependencies/requirements.txt) come from the same run.
"""

LAYER_HEADER = """\
# The DependenciesLayer, exactly (installed with --no-deps by this folder's Makefile).
# Written by `make lock` with requirements.lock, from the same environment: the runtime
# closure of pyproject.toml's dependencies on Linux / CPython 3.12, without what the
# Lambda runtime provides (boto3, botocore, s3transfer) or never imports (opensearch-py's
# gRPC transport: opensearch-protobufs, grpcio, protobuf).
"""


def installed() -> dict[str, str]:
    """Every installed distribution but the project itself, by canonical name."""
    versions = {}
    for distribution in metadata.distributions():
        name = canonicalize_name(distribution.metadata["Name"])
        if name != PROJECT and name not in INSTALLER:
            versions[name] = distribution.version
    return versions


def runtime_closure() -> set[str]:
    """The project's base dependencies and theirs, as the Lambda runtime would install them."""
    # Only requirements whose markers hold on Lambda are queued (no extra: the base install).
    pending = _applicable(metadata.requires(PROJECT) or [], extras=frozenset())
    expanded: set[tuple[str, frozenset[str]]] = set()
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        extras = frozenset(requirement.extras)
        if name in LEFT_OUT or (name, extras) in expanded:
            continue
        # A package met again with other extras: those extras' requirements count too.
        expanded.add((name, extras))
        pending += _applicable(metadata.requires(name) or [], extras=extras)
    return {name for name, _ in expanded}


def _applicable(lines: list[str], *, extras: frozenset[str]) -> list[Requirement]:
    """The requirements among `lines` that hold on Lambda for a package installed with `extras`."""
    applicable = []
    for line in lines:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or any(
            marker.evaluate({**LAMBDA_ENVIRONMENT, "extra": extra}) for extra in ("", *extras)
        ):
            applicable.append(requirement)
    return applicable


def render(header: str, pins: dict[str, str]) -> str:
    return header + "".join(f"{name}=={pins[name]}\n" for name in sorted(pins))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    versions = installed()
    layer = {name: versions[name] for name in runtime_closure()}
    wanted = {LOCK: render(LOCK_HEADER, versions), LAYER: render(LAYER_HEADER, layer)}
    stale = [path for path, text in wanted.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"out of date: {path.relative_to(ROOT)} (run make lock)", file=sys.stderr)
        return 1 if stale else 0
    for path, text in wanted.items():
        path.write_text(text)
    print(f"locked {len(versions)} packages; the layer pins {len(layer)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
