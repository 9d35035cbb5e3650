"""Logger, tracer and metrics shared by every function (powertools), configured once.

Not part of the HTTP edge: the routes, the pipeline tasks, the queue consumers and the
streaming server all log and count through it, so it sits at the package root beside
`config.py`, the other thing every entry point shares.

Logs carry ids, counts and timings — never message text, memory text or tokens.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

SERVICE = "chatmemory"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=SERVICE, service=SERVICE)


def count(name: str, value: int = 1) -> None:
    """Add to a business counter (MemoryCreated, MemoryDeleted, …) for this invocation."""
    _add(name, MetricUnit.Count, value)


def milliseconds(name: str, value: float) -> None:
    """Record a duration (PurgeLatency, …) for this invocation."""
    _add(name, MetricUnit.Milliseconds, value)


def _add(name: str, unit: MetricUnit, value: float) -> None:
    # With metrics switched off (the dev server), powertools never clears what it was
    # given and prints it anyway every 100 values: add nothing instead.
    if not is_metrics_disabled():
        metrics.add_metric(name=name, unit=unit, value=value)
