"""Lambda entry point for the write pipeline's Extract task.

Step Functions passes `{"user_id", "conversation_id", "upto_seq"}`, and `"deep": true` for a
deep read (the stronger model, a larger budget); the answer is ids and counts (`user_id`,
`run_id`, `persona`, `candidates`, `reports`), never text. The run id is deterministic, so
a retried or repeated Extract finds the run it already wrote. ModelUnavailable propagates:
the state machine retries it, then records the failure.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.pipeline import Extracted
from chatmemory.tasks.handler import step_task
from chatmemory.tasks.payloads import ExtractTask
from chatmemory.telemetry import count, logger


def extract(task: ExtractTask) -> Extracted:
    """The slice's candidates, kept on a run; its ids and how many were kept."""
    result = container().pipeline.extract(
        task.user_id, task.conversation_id, task.upto_seq, task.deep
    )
    count("CandidatesExtracted", result.candidates)
    count("ThreadReports", result.reports)
    logger.info(
        "extracted",
        extra={
            "run_id": result.run_id,
            "candidates": result.candidates,
            "reports": result.reports,
        },
    )
    return result


lambda_handler = step_task(ExtractTask, extract)
