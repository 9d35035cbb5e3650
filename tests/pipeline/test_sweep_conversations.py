"""The sweep Lambda finishes deleted conversations and masks the secrets in old messages,
on both stores: on DynamoDB a delete's purge that stopped is re-driven from the sweep's
index, and the masking resumes from its recorded place until it is recorded as done."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.domain.conversation import NewMessage, Role
from chatmemory.local.server import LocalLambdaContext
from tests.support import builders
from tests.support.functions import load_handler
from tests.support.raw_transcript import left_of, store_as_said
from tests.support.stores import REGION, STORE_KINDS, TABLE
from tests.support.template import create_table_from_template

CARD = "4111 1111 1111 1111"
SCHEDULED_EVENT = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


@pytest.fixture(params=STORE_KINDS)
def container(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock, aws_env: None
) -> Iterator[Container]:
    if request.param == "sqlite":
        built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
        use_container(built)
        yield built
        use_container(None)
        return
    with mock_aws():
        create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE)
        settings = Settings(
            store="dynamodb",
            table_name=TABLE,
            region=REGION,
            state_dir=tmp_path,
            embedder="hashing",
        )
        built = Container(settings, clock)
        use_container(built)
        yield built
        use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("pipeline/sweep")


def _conversation(container: Container, clock: ManualClock, said: str) -> str:
    conversation = builders.conversation("alice", clock.now())
    container.stores.conversations.append_messages(
        "alice",
        conversation.conversation_id,
        [NewMessage(Role.USER, said, 5), NewMessage(Role.ASSISTANT, "Noted.", 1)],
        clock.now(),
        create=conversation,
    )
    return conversation.conversation_id


def test_the_sweep_finishes_deleted_conversations_and_masks_old_messages(
    handler: Any, container: Container, clock: ManualClock, tmp_path: Path
) -> None:
    # Given a deleted conversation whose purge never ran (its function timed out), and a
    # message stored with a card number before messages were masked
    deleted = _conversation(container, clock, "I live in Pune.")
    assert container.stores.conversation_erasure.hide_conversations("alice", [deleted])
    kept = _conversation(container, clock, "…")
    store_as_said(container.stores, tmp_path, "alice", kept, seq=1, content=f"My card is {CARD}")

    # When the daily sweep runs
    handler(SCHEDULED_EVENT, LocalLambdaContext(function_name="Sweep"))

    # Then nothing of the deleted conversation is left, and the card number is masked
    assert left_of(container.stores, tmp_path, "alice", deleted) == []
    [said, _] = container.stores.conversations.list_messages("alice", kept)
    assert CARD not in said.content and said.content.startswith("My card is ")
    # and the masking is recorded as done: the next sweep finds nothing to do
    assert container.message_masking.run().conversations == 0
