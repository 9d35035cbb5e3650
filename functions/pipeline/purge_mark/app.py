"""Lambda entry point for the purge pipeline's MarkPurged task, the last one.

Marks the request's tombstones purged; from then on the read path shows the rebuilt
profile and summaries again. Publishes how many memories were purged and how long after
the delete (PurgeLatency, the oldest deletion's). Answers `{"purged", "latency_ms"}`.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.purge import Purged
from chatmemory.tasks.handler import purge_step
from chatmemory.tasks.payloads import PurgeTask
from chatmemory.telemetry import count, milliseconds


def mark_purged(task: PurgeTask) -> Purged:
    """How many tombstones are now purged, and how long after the oldest delete."""
    result = container().purge.mark_purged(task.request)
    if result.purged:
        count("MemoriesPurged", result.purged)
        milliseconds("PurgeLatency", result.latency_ms)
    return result


lambda_handler = purge_step(PurgeTask, mark_purged, done="purged")
