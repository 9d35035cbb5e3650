"""Lambda entry point for the write pipeline's Extract task.

Step Functions passes `{"user_id", "conversation_id", "upto_seq"}`; the answer is ids and
counts (`run_id`, `persona`, `candidates`), never text. The run id is deterministic, so a
retried or repeated Extract finds the run it already wrote. ModelUnavailable propagates:
the state machine retries it, then records the failure.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container


class ExtractTask(BaseModel):
    user_id: str = Field(min_length=1)
    conversation_id: str = Field(min_length=1)
    upto_seq: int = Field(ge=0)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = parse(event=event, model=ExtractTask)
    logger.append_keys(conversation_id=task.conversation_id, upto_seq=task.upto_seq)
    result = container().pipeline.extract(task.user_id, task.conversation_id, task.upto_seq)
    count("CandidatesExtracted", int(result["candidates"]))
    logger.info("extracted", extra={"run_id": result["run_id"], "candidates": result["candidates"]})
    return result
