"""Lambda entry point for the write pipeline's Route task.

Step Functions passes `{"user_id", "run_id"}`; the run's candidates are read from the
store, each routed against its nearest memories (add, supersede, close or nothing). The
answer is `{"user_id", "run_id", "persona", "written", "profile_affected"}`. Routing a
run twice writes nothing twice: memory ids are derived, not random.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container


class RouteTask(BaseModel):
    user_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = parse(event=event, model=RouteTask)
    logger.append_keys(run_id=task.run_id)
    result = container().pipeline.route(task.user_id, task.run_id)
    count("MemoriesWritten", int(result["written"]))
    count("MemoriesSuperseded", int(result["superseded"]))
    count("MemoriesClosed", int(result["closed"]))
    logger.info(
        "routed",
        extra={"written": result["written"], "profile_affected": result["profile_affected"]},
    )
    return result
