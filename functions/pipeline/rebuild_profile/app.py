"""Lambda entry point for the RebuildProfile task, in both pipelines.

The write pipeline passes `{"user_id", "persona"}` when a memory the profile was built
from changed; the purge pipeline passes its request (`as_of`, `memory_ids`) too, so a
failure is recorded on the tombstones. The answer is `{"rebuilt": bool}`. Rebuilding
from the same memories gives the same digest, so a retry is harmless.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from chatmemory.api.purge_tasks import purge_request, scope
from chatmemory.api.telemetry import count, logger, metrics, tracer
from chatmemory.config import container

# A run that changes nothing publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")


class RebuildProfileTask(BaseModel):
    user_id: str = Field(min_length=1)
    persona: str = Field(min_length=1)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = parse(event=event, model=RebuildProfileTask)
    logger.append_keys(persona=task.persona)
    if "as_of" in event:
        request = purge_request(event)
        logger.append_keys(**scope(request))
        result = container().purge.rebuild_profile(request, task.persona)
    else:
        result = container().pipeline.rebuild_profile(task.user_id, task.persona)
    if result["rebuilt"]:
        count("ProfileRebuilt")
    logger.info("profile rebuilt" if result["rebuilt"] else "profile unchanged")
    return result
