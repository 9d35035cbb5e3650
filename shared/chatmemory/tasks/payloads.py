"""What the state machines pass each task (statemachines/*.asl.json), as pydantic models.

Payloads carry ids, times and counts, never text. A model reads only its own keys and
ignores the rest (RecordFailure, for one, gets the whole execution state), unless another
state machine's payload would pass for its own (WriteProfileTask). Each model says which
of its ids go on the task's log lines.
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field

from chatmemory.domain.purge import MAX_NAMED, PurgeRequest
from chatmemory.domain.time import from_storage

# ---- the write pipeline ----------------------------------------------------------------


class TaskPayload(BaseModel):
    """One task's input; `log_keys` is what of it goes on every log line of the task."""

    def log_keys(self) -> dict[str, object]:
        """Ids and counts only: a log line never carries what the user said."""
        return {}

    def pipeline_start(self) -> datetime | None:
        """When the execution this task runs in started, where its state passes it."""
        return None


class BudgetedTask(TaskPayload):
    """A write pipeline step after Extract: it knows when its execution started, so its
    model calls end within the run's budget (an Express run ends at five minutes)."""

    pipeline_started_at: datetime | None = None

    def pipeline_start(self) -> datetime | None:
        return self.pipeline_started_at


class ExtractTask(TaskPayload):
    """Extract: the execution's input, the conversation's slice up to `upto_seq`, and
    whether to read it in deep mode (absent in a normal run's input)."""

    user_id: str = Field(min_length=1)
    conversation_id: str = Field(min_length=1)
    upto_seq: int = Field(ge=0)
    deep: bool = False

    def log_keys(self) -> dict[str, object]:
        return {
            "conversation_id": self.conversation_id,
            "upto_seq": self.upto_seq,
            "deep": self.deep,
        }


class RunTask(BudgetedTask):
    """Route and Notify: the run Extract wrote."""

    user_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)

    def log_keys(self) -> dict[str, object]:
        return {"run_id": self.run_id}


class WriteProfileTask(BudgetedTask):
    """RebuildProfile in the write pipeline: the persona whose profile a run affected.

    Exactly the keys its state passes: a purge's RebuildProfiles item (the same keys plus
    the request) is refused, never taken for a write pipeline rebuild."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1)
    persona: str = Field(min_length=1)

    def log_keys(self) -> dict[str, object]:
        return {"persona": self.persona}


class StepError(BaseModel):
    """What a Catch puts at `ResultPath`: the error name and its cause."""

    error: str = Field(alias="Error")
    cause: str = Field(default="", alias="Cause")


class ExtractedRun(BaseModel):
    run_id: str


class FailedRun(TaskPayload):
    """RecordFailure: the whole state after a step failed for good; `extract` is there
    only if Extract got that far."""

    user_id: str = Field(min_length=1)
    extract: ExtractedRun | None = None
    error: StepError

    @property
    def run_id(self) -> str | None:
        return self.extract.run_id if self.extract else None


# ---- the purge pipeline ----------------------------------------------------------------


class PurgeTask(TaskPayload):
    """Every purge task gets the execution's input — the purge request — so a failing step
    can record its failure on the tombstones it covers."""

    user_id: str = Field(min_length=1)
    as_of: str = Field(min_length=1)
    memory_ids: list[str] = Field(default_factory=list, max_length=MAX_NAMED)

    @cached_property
    def request(self) -> PurgeRequest:
        """The domain request (ValueError, InvalidField among them, for a malformed one)."""
        as_of = from_storage(self.as_of)
        return PurgeRequest(user_id=self.user_id, as_of=as_of, memory_ids=tuple(self.memory_ids))

    def log_keys(self) -> dict[str, object]:
        """How many memories the purge names (0: everything up to as_of)."""
        return {
            "purge_as_of": self.request.to_payload()["as_of"],
            "purge_named": len(self.request.memory_ids),
        }


class PurgeProfileTask(PurgeTask):
    """RebuildProfile in the purge (one RebuildProfiles Map iteration, its own Lambda):
    the request plus the persona whose profile was built from a deleted memory."""

    persona: str = Field(min_length=1)

    def log_keys(self) -> dict[str, object]:
        return {"persona": self.persona, **super().log_keys()}


class PurgeSummaryTask(PurgeTask):
    """RewriteSummary (one RewriteSummaries Map iteration): the request plus the
    conversation whose summary folded in a deleted memory's turn."""

    conversation_id: str = Field(min_length=1)

    def log_keys(self) -> dict[str, object]:
        return {"conversation_id": self.conversation_id, **super().log_keys()}
