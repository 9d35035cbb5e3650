"""What the purge pipeline's tasks receive: the purge request, as ids and a time.

Every purge task gets the execution's input (`user_id`, `as_of`, `memory_ids`) — the Map
states add the item they iterate over — so a failing step can record its failure on the
tombstones it covers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from pydantic import BaseModel, Field

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
