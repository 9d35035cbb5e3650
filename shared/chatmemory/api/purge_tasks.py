"""What the purge pipeline's tasks receive: the purge request, as ids and a time.

Every purge task gets the execution's input (`user_id`, `as_of`, `memory_ids`) — the Map
states add the item they iterate over — so a failing step can record its failure on the
tombstones it covers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from pydantic import BaseModel, Field

from chatmemory.api.telemetry import count, logger
from chatmemory.domain.purge import MAX_NAMED, PurgeRequest
from chatmemory.domain.time import from_storage


class PurgeTask(BaseModel):
    user_id: str = Field(min_length=1)
    as_of: str = Field(min_length=1)
    memory_ids: list[str] = Field(default_factory=list, max_length=MAX_NAMED)


def purge_request(event: dict[str, Any]) -> PurgeRequest:
    """The domain request from a task's event (InvalidField for a malformed one)."""
    task = parse(event=event, model=PurgeTask)
    as_of: datetime = from_storage(task.as_of)
    return PurgeRequest(user_id=task.user_id, as_of=as_of, memory_ids=tuple(task.memory_ids))


def scope(request: PurgeRequest) -> dict[str, Any]:
    """Log keys for a purge: how many memories it names (0: everything up to as_of)."""
    return {"purge_as_of": request.to_payload()["as_of"], "purge_named": len(request.memory_ids)}


def run_step(
    event: dict[str, Any], done: str, step: Callable[[PurgeRequest], dict[str, Any]]
) -> dict[str, Any]:
    """One purge task: parse its request, run the step, log what it did (counts only).

    A failure is counted (PurgeStepFailed, for the alarm) and raised, so the state
    machine retries it; the service has already recorded it on the tombstones.
    """
    request = purge_request(event)
    logger.append_keys(**scope(request))
    try:
        result = step(request)
    except Exception:
        count("PurgeStepFailed")
        raise
    logger.info(done, extra={key: _loggable(value) for key, value in result.items()})
    return result


def _loggable(value: Any) -> Any:
    """Lists of ids are logged as their length: a log line needs the count, not the ids."""
    return len(value) if isinstance(value, list) else value
