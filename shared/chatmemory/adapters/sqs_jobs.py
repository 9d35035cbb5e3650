"""Background work on AWS: a message on an SQS queue, consumed by a Lambda.

Messages carry ids only (never text); the consumer re-reads everything from the store,
and every job is idempotent (a fold applies only from the state it read).
"""

from __future__ import annotations

import json
from typing import Any

from chatmemory.ports import Jobs

FOLD = "fold"


class SqsJobs(Jobs):
    def __init__(self, client: Any, *, fold_queue_url: str) -> None:
        self._client = client
        self._fold_queue_url = fold_queue_url

    def fold_later(self, user_id: str, conversation_id: str) -> None:
        body = {"type": FOLD, "user_id": user_id, "conversation_id": conversation_id}
        self._client.send_message(QueueUrl=self._fold_queue_url, MessageBody=json.dumps(body))


def parse_job(body: str) -> tuple[str, str, str]:
    """(type, user_id, conversation_id) of a queued job; ValueError if it is not one."""
    job = json.loads(body)
    if not isinstance(job, dict) or job.get("type") != FOLD:
        raise ValueError("not a chatmemory job")
    user_id, conversation_id = job.get("user_id"), job.get("conversation_id")
    if not isinstance(user_id, str) or not isinstance(conversation_id, str):
        raise ValueError("a job names its user and conversation")
    return FOLD, user_id, conversation_id
