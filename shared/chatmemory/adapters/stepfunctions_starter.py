"""Starts the pipelines on AWS: the write pipeline, one execution per conversation slice,
and the purge pipeline, one execution per delete.

The execution name is derived from (user, conversation, upto_seq), so everything that
asks for the same slice asks for the same name.

Express workflows (what the write pipeline is) do NOT dedupe by name: AWS documents
that starting two asynchronous Express executions with the same name runs both
concurrently, and StartExecution never answers ExecutionAlreadyExists for them (only
Standard workflows keep names for 90 days and refuse a repeat). A repeat start is still
a no-op in effect, because every step is idempotent: the run id is derived from the
same (user, conversation, upto_seq), Extract finds the run it already wrote, memory and
notice ids are derived too, and the cursor only moves forward from where it was read.
Where AWS does refuse a name (a Standard workflow, or a local emulator that treats
every workflow alike), the refusal means "already started" and we say so.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from chatmemory.domain.purge import PurgeRequest
from chatmemory.domain.time import to_storage
from chatmemory.ports.jobs import PipelineStarter, PurgeStarter

# StartExecution: 1-80 characters of [A-Za-z0-9_-] (no spaces, brackets, wildcards or
# control characters; names with other characters break CloudWatch metrics).
NAME_PREFIX = "write-"
PURGE_PREFIX = "purge-"
_DIGEST_CHARS = 64  # sha256 in hex: 6 + 64 = 70 characters, inside the limit


def execution_name(user_id: str, conversation_id: str, upto_seq: int) -> str:
    """The execution name for one slice: the same inputs always give the same name.

    Ids are hashed rather than spelled out: user ids may be long or hold characters an
    execution name cannot, and the name then shows no user id in the console.
    """
    key = json.dumps([user_id, conversation_id, upto_seq], separators=(",", ":"))
    return NAME_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:_DIGEST_CHARS]


class StepFunctionsStarter(PipelineStarter):
    """Starts the write pipeline's state machine with the slice's ids (never text)."""

    def __init__(self, client: Any, *, state_machine_arn: str) -> None:
        self._client = client
        self._state_machine_arn = state_machine_arn

    def start_write(
        self, user_id: str, conversation_id: str, upto_seq: int, *, deep: bool = False
    ) -> bool:
        payload: dict[str, object] = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "upto_seq": upto_seq,
        }
        if deep:  # absent means a normal run: older executions' inputs read the same
            payload["deep"] = True
        try:
            self._client.start_execution(
                stateMachineArn=self._state_machine_arn,
                name=execution_name(user_id, conversation_id, upto_seq),
                input=json.dumps(payload, separators=(",", ":")),
            )
        except self._client.exceptions.ExecutionAlreadyExists:
            return False
        return True


def purge_execution_name(request: PurgeRequest, origin: str) -> str:
    """One name per purge request and origin (hashed: no user id shows in the console).

    The purge is a Standard workflow, whose names AWS keeps for 90 days: the same request
    started twice runs once. A sweep's request carries its own cut-off time, so a re-drive
    never collides with the run that failed.
    """
    key = json.dumps(
        [request.user_id, to_storage(request.as_of), sorted(request.memory_ids), origin],
        separators=(",", ":"),
    )
    return PURGE_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:_DIGEST_CHARS]


class StepFunctionsPurgeStarter(PurgeStarter):
    """Starts the purge pipeline's state machine with the request's ids and time."""

    def __init__(self, client: Any, *, state_machine_arn: str) -> None:
        self._client = client
        self._state_machine_arn = state_machine_arn

    def start_purge(self, request: PurgeRequest, *, origin: str = "delete") -> bool:
        try:
            self._client.start_execution(
                stateMachineArn=self._state_machine_arn,
                name=purge_execution_name(request, origin),
                input=json.dumps(request.to_payload(), separators=(",", ":")),
            )
        except self._client.exceptions.ExecutionAlreadyExists:
            return False
        return True
