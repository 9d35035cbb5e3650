"""SqsJobs.idle_later against moto's SQS: a delayed message per user message, ids only."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.sqs_jobs import (
    MAX_DELAY_SECONDS,
    SqsJobs,
    parse_idle_check,
    parse_room_quiet,
)

REGION = "eu-west-1"


@pytest.fixture
def sqs(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("sqs", region_name=REGION)


@pytest.fixture
def idle_queue(sqs: Any) -> str:
    url: str = sqs.create_queue(QueueName="idle")["QueueUrl"]
    return url


@pytest.fixture
def sent(sqs: Any) -> list[dict[str, Any]]:
    """The parameters of every SendMessage call the client makes."""
    calls: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append(dict(params))

    sqs.meta.events.register("provide-client-params.sqs.SendMessage", record)
    return calls


@pytest.fixture
def jobs(sqs: Any, idle_queue: str, clock: ManualClock) -> SqsJobs:
    fold_queue = sqs.create_queue(QueueName="fold")["QueueUrl"]
    return SqsJobs(sqs, fold_queue_url=fold_queue, idle_queue_url=idle_queue, clock=clock)


def receive(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
    ).get("Messages", [])
    return messages


def test_an_idle_timer_is_a_message_delayed_until_it_is_due(
    jobs: SqsJobs, sqs: Any, idle_queue: str, clock: ManualClock, sent: list[dict[str, Any]]
) -> None:
    # When the timer is armed for ten minutes from now
    jobs.idle_later("user-123", "conv_1", clock.now() + timedelta(minutes=10))

    # Then the message is delayed ten minutes, and SQS keeps it hidden until then
    assert [call["DelaySeconds"] for call in sent] == [600]
    assert receive(sqs, idle_queue) == []


def test_an_idle_timer_carries_ids_only(
    jobs: SqsJobs, sqs: Any, idle_queue: str, clock: ManualClock
) -> None:
    # When a timer is armed for now
    jobs.idle_later("user-123", "conv_1", clock.now())

    # Then the message is there at once, and names the conversation and nothing else
    (message,) = receive(sqs, idle_queue)
    assert json.loads(message["Body"]) == {"user_id": "user-123", "conversation_id": "conv_1"}
    assert parse_idle_check(message["Body"]) == ("user-123", "conv_1")


@pytest.mark.parametrize(
    ("due_in", "delay"),
    [
        (timedelta(seconds=-30), 0),  # overdue: check at once
        (timedelta(seconds=599.2), 600),  # rounded up: a check never arrives early
        (timedelta(hours=1), MAX_DELAY_SECONDS),  # SQS delays 15 minutes at most
    ],
)
def test_the_delay_is_rounded_up_and_kept_within_what_sqs_allows(
    jobs: SqsJobs,
    clock: ManualClock,
    sent: list[dict[str, Any]],
    due_in: timedelta,
    delay: int,
) -> None:
    jobs.idle_later("user-123", "conv_1", clock.now() + due_in)

    assert [call["DelaySeconds"] for call in sent] == [delay]


def test_folds_still_go_to_the_fold_queue_undelayed(
    jobs: SqsJobs, sent: list[dict[str, Any]]
) -> None:
    jobs.fold_later("user-123", "conv_1")

    (call,) = sent
    assert call["QueueUrl"].endswith("/fold")
    assert "DelaySeconds" not in call


def test_without_an_idle_queue_the_timer_is_skipped_loudly_not_fatally(
    sqs: Any, clock: ManualClock, sent: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    # Given jobs configured without an idle queue (a function that only folds)
    fold_queue = sqs.create_queue(QueueName="fold")["QueueUrl"]
    jobs = SqsJobs(sqs, fold_queue_url=fold_queue, clock=clock)

    # When a chat turn arms the timer
    with caplog.at_level(logging.ERROR):
        jobs.idle_later("user-123", "conv_1", clock.now())

    # Then nothing is sent, the turn goes on, and the log says why
    assert sent == []
    assert "idle timer was not armed" in caplog.text


@pytest.mark.parametrize(
    "body",
    ["[]", '{"user_id": "user-123"}', '{"user_id": "", "conversation_id": "c"}', '{"user_id": 1}'],
)
def test_a_body_that_is_no_idle_check_is_refused(body: str) -> None:
    with pytest.raises(ValueError, match="idle check"):
        parse_idle_check(body)


def test_a_rooms_quiet_timer_is_a_delayed_message_naming_the_room_only(
    jobs: SqsJobs, sqs: Any, idle_queue: str, clock: ManualClock, sent: list[dict[str, Any]]
) -> None:
    # When a room's quiet timer is armed for ten minutes from now, and another for now
    jobs.room_quiet_later("room_book_club", clock.now() + timedelta(minutes=10))
    jobs.room_quiet_later("room_dan", clock.now())

    # Then each is a message on the idle queue, delayed until due, naming its room only
    assert [call["DelaySeconds"] for call in sent] == [600, 0]
    (message,) = receive(sqs, idle_queue)
    assert json.loads(message["Body"]) == {"type": "room_quiet", "room_id": "room_dan"}
    assert parse_room_quiet(message["Body"]) == "room_dan"


def test_the_idle_queue_tells_a_rooms_check_from_a_conversations() -> None:
    conversation = json.dumps({"user_id": "user-123", "conversation_id": "conv_1"})

    assert parse_room_quiet(conversation) is None
    with pytest.raises(ValueError, match="names its room"):
        parse_room_quiet(json.dumps({"type": "room_quiet", "room_id": ""}))
