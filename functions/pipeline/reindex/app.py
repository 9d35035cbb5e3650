"""Lambda entry point for a re-index, invoked by an operator (no schedule): every memory
recall cannot compare (stored while Titan failed, or at another `VectorDimensions`) gets
vectors again, and with `republish` every memory in use goes to the vector index (a new
index after `VectorDimensions` or `VectorEncoding` changed). See the README, "Deploy on
AWS". A run can be repeated: what it did is skipped the next time.

The event names the users (`user_ids`, up to 1,000), or else one part of all of them
(`segment` of `segments`, a parallel scan of the table: run one invocation per part).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, model_validator

from chatmemory.config import container
from chatmemory.domain import rules
from chatmemory.telemetry import count, logger, metrics, tracer


class ReindexEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_ids: list[str] | None = Field(default=None, min_length=1, max_length=1000)
    segment: int = Field(default=0, ge=0)
    segments: int = Field(default=1, ge=1, le=1_000_000)
    republish: bool = False
    # every memory embedded again: after a switch to another model of the same size
    reembed: bool = False

    @model_validator(mode="after")
    def _checked(self) -> ReindexEvent:
        for user_id in self.user_ids or ():
            rules.user_id(user_id)
        if self.segment >= self.segments:
            raise ValueError("segment must be below segments")
        return self


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    asked = parse(event=event, model=ReindexEvent)
    memories = container().stores.memories
    users = asked.user_ids or memories.memory_owners(segment=asked.segment, segments=asked.segments)
    done = container().reindexer.run(users, republish=asked.republish, reembed=asked.reembed)
    count("ReindexEmbedded", done.embedded)
    count("ReindexUnembedded", done.unembedded)
    logger.info("re-index done", extra=dataclasses.asdict(done))
    return dataclasses.asdict(done)
