"""Logger, tracer and metrics shared by every function (powertools), configured once.

Logs carry ids, counts and timings — never message text, memory text or tokens.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = "chatmemory"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=SERVICE, service=SERVICE)


def count(name: str, value: int = 1) -> None:
    """Add to a business counter (MemoryCreated, MemoryDeleted, …) for this invocation."""
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
