"""SqsJobs.uses_later against moto's SQS: a typed message on the fold queue, ids only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.sqs_jobs import (
    USES_PER_MESSAGE,
    SqsJobs,
    parse_job,
    parse_profile_job,
    parse_uses_job,
)

REGION = "eu-west-1"
MEMORY_IDS = ["mem_01JDX3A7Q2", "mem_01JDX3B9K4"]


@pytest.fixture
def sqs(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("sqs", region_name=REGION)


@pytest.fixture
def fold_queue(sqs: Any) -> str:
    url: str = sqs.create_queue(QueueName="fold")["QueueUrl"]
    return url


@pytest.fixture
def jobs(sqs: Any, fold_queue: str, clock: ManualClock) -> SqsJobs:
    idle_queue = sqs.create_queue(QueueName="idle")["QueueUrl"]
    return SqsJobs(sqs, fold_queue_url=fold_queue, idle_queue_url=idle_queue, clock=clock)


def bodies(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        if not messages:
            return found
        found += [json.loads(message["Body"]) for message in messages]


def test_a_uses_job_is_a_message_on_the_fold_queue_naming_ids_only(
    jobs: SqsJobs, sqs: Any, fold_queue: str
) -> None:
    # When the uses of two memories are asked for (a repeated id named once)
    jobs.uses_later("user-123", [*MEMORY_IDS, MEMORY_IDS[0]])

    # Then one message waits on the fold queue, typed, with the user and the ids and
    # nothing else: no text, no uses, no category
    [body] = bodies(sqs, fold_queue)
    assert body == {"type": "uses", "user_id": "user-123", "memory_ids": MEMORY_IDS}
    # and the consumer reads it back as exactly that
    assert parse_uses_job(json.dumps(body)) == ("user-123", tuple(MEMORY_IDS))


def test_many_ids_are_split_across_messages(jobs: SqsJobs, sqs: Any, fold_queue: str) -> None:
    many = [f"mem_{number:04d}" for number in range(USES_PER_MESSAGE * 2 + 1)]

    jobs.uses_later("user-123", many)

    sent = bodies(sqs, fold_queue)
    assert sorted(len(body["memory_ids"]) for body in sent) == [
        1,
        USES_PER_MESSAGE,
        USES_PER_MESSAGE,
    ]
    assert sorted(i for body in sent for i in body["memory_ids"]) == many


def test_a_fold_job_is_no_uses_job_and_a_uses_job_is_no_fold() -> None:
    fold = json.dumps({"type": "fold", "user_id": "user-123", "conversation_id": "conv_1"})
    uses = json.dumps({"type": "uses", "user_id": "user-123", "memory_ids": MEMORY_IDS})

    assert parse_uses_job(fold) is None
    with pytest.raises(ValueError, match="not a chatmemory job"):
        parse_job(uses)


@pytest.mark.parametrize(
    "body",
    [
        {"type": "uses", "user_id": "user-123"},
        {"type": "uses", "user_id": "user-123", "memory_ids": []},
        {"type": "uses", "user_id": "user-123", "memory_ids": "mem_1"},
        {"type": "uses", "user_id": "user-123", "memory_ids": [7]},
        {"type": "uses", "user_id": "user-123", "memory_ids": ["mem 1; drop"]},
        {"type": "uses", "user_id": "", "memory_ids": MEMORY_IDS},
        {"type": "uses", "memory_ids": MEMORY_IDS},
        {"type": "uses", "user_id": "u", "memory_ids": ["m"] * (USES_PER_MESSAGE + 1)},
    ],
    ids=[
        "no ids",
        "empty",
        "a string",
        "a number",
        "not an id",
        "empty user",
        "no user",
        "too many",
    ],
)
def test_a_uses_job_that_does_not_name_its_user_and_memories_is_refused(
    body: dict[str, Any],
) -> None:
    with pytest.raises(ValueError, match="a uses job"):
        parse_uses_job(json.dumps(body))


def test_a_profile_rebuild_is_a_delayed_message_on_the_fold_queue(
    jobs: SqsJobs, sqs: Any, fold_queue: str, clock: ManualClock
) -> None:
    # When a write asks for the profile to be rebuilt two seconds from now
    jobs.profile_later("user-123", "warren", clock.now() + timedelta(seconds=2))

    # Then nothing is visible yet (SQS holds it back for the debounce)
    assert bodies(sqs, fold_queue) == []
    sent = sqs.get_queue_attributes(
        QueueUrl=fold_queue, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )
    assert sent["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    # and the consumer reads its body as the user and the persona, nothing else
    body = json.dumps({"type": "profile", "user_id": "user-123", "persona": "warren"})
    assert parse_profile_job(body) == ("user-123", "warren")
    assert parse_profile_job(json.dumps({"type": "uses", "user_id": "u", "memory_ids": []})) is None
    with pytest.raises(ValueError, match="names its user and persona"):
        parse_profile_job(json.dumps({"type": "profile", "user_id": "user-123"}))
