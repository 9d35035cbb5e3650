"""What a turn costs an operator in DynamoDB reads: the same whatever the user's history.

On a moto table built from template.yaml, every request's read units are worked out
from the bytes it read (tests/support/read_units.py), by DynamoDB's billing rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from unittest import mock

import boto3
import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.dynamodb.digests import DigestMarkers
from chatmemory.adapters.dynamodb.items import DigestItem
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.opensearch_index import OpenSearchIndex
from chatmemory.domain import fading
from chatmemory.domain.conversation import Role
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorIndex
from chatmemory.services.context import ContextRequest, ContextService
from chatmemory.services.deletions import Deletions
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever
from tests.support import builders, history
from tests.support.fast_moto import quick_transactions
from tests.support.opensearch_fake import FakeCollection
from tests.support.read_units import ReadMeter, Reads, metered
from tests.support.stores import REGION, TABLE
from tests.support.template import create_table_from_template

SHORT, LONG = "ann01", "ann02"  # the same length: their items weigh the same


@pytest.fixture
def metered_stores(clock: ManualClock, aws_env: None) -> Iterator[tuple[Stores, ReadMeter]]:
    """DynamoDB stores under moto whose every read is metered."""
    from moto import mock_aws  # noqa: PLC0415

    from chatmemory.adapters.dynamodb import dynamodb_stores  # noqa: PLC0415

    with mock_aws():
        create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE)
        with metered(REGION) as meter:
            yield dynamodb_stores(table_name=TABLE, region=REGION, clock=clock), meter


def _turn(stores: Stores, clock: ManualClock, index: VectorIndex) -> ContextService:
    embedder = HashingEmbedder()
    relevance = RelevanceModel(embedder, params_for(embedder.name, threshold=0.25))
    return ContextService(stores, clock, Retriever(stores, embedder, index, clock, relevance))


def _opensearch(clock: ManualClock, stores: Stores, users: tuple[str, ...]) -> VectorIndex:
    index = OpenSearchIndex(
        client=FakeCollection(refresh_on_write=True).client(),
        index_name="memories",
        dimensions=HashingEmbedder().dimensions,
        clock=clock,
    )
    index.ensure_index()
    for user in users:
        for memory in stores.memories.iter_memories(user):
            index.upsert(memory)
    return index


def _seeded(stores: Stores, clock: ManualClock) -> history.Past:
    """The short-history user: five memories in use, fourteen history rows, a chat."""
    indexer = MemoryIndexer(HashingEmbedder(), ExactIndex(stores.recall))
    with quick_transactions():
        return history.seed(stores, clock, indexer, SHORT, in_use=5, history=14)


def _reads(meter: ReadMeter, service: ContextService, request: ContextRequest) -> Reads:
    assert service.build(request).memories_used, "the turn recalls what it is asked about"
    with meter.counting() as reads:
        service.build(request)
    return reads


def test_a_turn_reads_as_much_for_a_long_history_as_for_a_short_one(
    metered_stores: tuple[Stores, ReadMeter], clock: ManualClock
) -> None:
    # Given two users with the same five memories in use, one with a short past and one
    # with eight times as many history rows (corrected, closed, set aside, faded, deleted)
    stores, meter = metered_stores
    indexer = MemoryIndexer(HashingEmbedder(), ExactIndex(stores.recall))
    start = clock.now()
    with quick_transactions():
        short = history.seed(stores, clock, indexer, SHORT, in_use=5, history=14)
        clock.set(start)
        long = history.seed(stores, clock, indexer, LONG, in_use=5, history=120)
    assert long.history >= 8 * short.history

    for index in (ExactIndex(stores.recall), _opensearch(clock, stores, (SHORT, LONG))):
        service = _turn(stores, clock, index)

        # When each asks the same thing in their chat
        few = _reads(
            meter,
            service,
            ContextRequest(SHORT, history.QUESTION, conversation_id=short.conversation_id),
        )
        many = _reads(
            meter,
            service,
            ContextRequest(LONG, history.QUESTION, conversation_id=long.conversation_id),
        )

        # Then the long past costs the turn not one item or read unit more
        assert (many.items, many.units) == (few.items, few.units), few.by_target()
        assert many.units < 30  # a handful of small reads, nowhere near the 120 rows


def test_a_partition_written_before_the_markers_reads_its_rows_once_then_never_again(
    metered_stores: tuple[Stores, ReadMeter], clock: ManualClock
) -> None:
    # Given a user whose partition has no digest markers or tombstone copies yet, with a
    # deletion whose purge has not finished
    stores, meter = metered_stores
    past = _seeded(stores, clock)
    city = next(m for m in stores.memories.iter_memories(SHORT) if "Bengaluru" in m.text)
    Deletions(stores).tombstone_memories(
        SHORT, [Tombstone(user_id=SHORT, memory_id=city.memory_id, deleted_at=clock.now())]
    )
    clock.advance(timedelta(minutes=1))
    _forget_markers(SHORT)
    service = _turn(stores, clock, ExactIndex(stores.recall))
    request = ContextRequest(SHORT, history.QUESTION, conversation_id=past.conversation_id)

    # When the first turn reads, and then the next
    with meter.counting() as first:
        built = service.build(request)
        pending = stores.tombstones.list_tombstones(SHORT, unpurged_only=True)
    with meter.counting() as second:
        again = service.build(request)
        still = stores.tombstones.list_tombstones(SHORT, unpurged_only=True)

    # Then both send the same memories and see the same pending purge; only the first
    # went to the rows and to every tombstone
    assert built.memories_used and again.memories_used == built.memories_used
    assert [t.memory_id for t in pending] == [t.memory_id for t in still] == [city.memory_id]
    assert {"by_created MEM#", "TOMB#"} <= {read.target for read in first.requests}
    assert not {"by_created MEM#", "TOMB#"} & {read.target for read in second.requests}
    assert {"DIGEST#", "UNPURGED#"} <= {read.target for read in second.requests}
    assert second.items < first.items


def _forget_markers(user_id: str) -> None:
    """Take a partition back to before the markers: no DIGEST# or UNPURGED# items, and a
    USER item that says nothing about them."""
    client = boto3.client("dynamodb", region_name=REGION)
    pk = {"S": f"U#{user_id}"}
    items = client.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": pk},
    )["Items"]
    for item in items:
        sort = item["sk"]["S"]
        if sort.startswith(("DIGEST#", "UNPURGED#")):
            client.delete_item(TableName=TABLE, Key={"pk": pk, "sk": item["sk"]})
    client.update_item(
        TableName=TABLE,
        Key={"pk": pk, "sk": {"S": "USER"}},
        UpdateExpression="REMOVE digest_markers, unpurged_copies",
    )


def test_a_belief_revived_while_a_turn_drops_its_faded_marker_stays_in_use(
    metered_stores: tuple[Stores, ReadMeter], clock: ManualClock
) -> None:
    # Given a mood that faded (its marker still there) and a turn that reads it as faded
    stores, _meter = metered_stores
    mood = builders.memory("ann01", "Feels tired.", clock.now(), category="mood")
    stores.memories.add_memory(mood)
    stores.recall.memory_digests("ann01")  # the partition's markers are complete
    clock.advance(timedelta(days=14))
    prune = DigestMarkers._prune

    def revived_meanwhile(markers: DigestMarkers, faded: Sequence[DigestItem]) -> None:
        [row] = stores.memories.get_memories("ann01", [mood.memory_id])
        stores.memories.set_fading("ann01", [fading.reinforced(row, clock.now())])
        prune(markers, faded)

    # When the mood is said again between that read and its marker's delete
    with mock.patch.object(DigestMarkers, "_prune", revived_meanwhile):
        assert stores.recall.memory_digests("ann01") == []

    # Then the revival wins: the next turn reads it
    assert [d.memory_id for d in stores.recall.memory_digests("ann01")] == [mood.memory_id]


def _conversations(stores: Stores, clock: ManualClock, user_id: str, count: int) -> None:
    """`count` past chats with the assistant, each a day apart, with a folded summary
    (what makes a conversation item weigh)."""
    for _ in range(count):
        conversation = builders.conversation(user_id, clock.now())
        stores.conversations.create_conversation(conversation)
        stores.conversations.append_message(
            user_id,
            conversation.conversation_id,
            role=Role.USER,
            content="hi",
            tokens=1,
            at=clock.now(),
        )
        stores.conversations.update_summary(
            user_id,
            conversation.conversation_id,
            summary="They talked about dinner plans and a trip to Goa. " * 20,
            upto_seq=1,
            expected_upto_seq=0,
            fold_count=1,
            at=clock.now(),
        )
        clock.advance(timedelta(days=1))


def test_a_new_chat_reads_one_past_conversation_however_many_there_were(
    metered_stores: tuple[Stores, ReadMeter], clock: ManualClock
) -> None:
    # Given two users back after quiet days, one with 2 past chats and one with 30
    stores, meter = metered_stores
    start = clock.now()
    with quick_transactions():
        _conversations(stores, clock, SHORT, 2)
        clock.set(start)
        _conversations(stores, clock, LONG, 30)
    clock.advance(timedelta(days=5))
    service = _turn(stores, clock, ExactIndex(stores.recall))

    # When each opens a new chat (no conversation yet: the return greeting asks when
    # they last met)
    read: dict[str, Reads] = {}
    for user in (SHORT, LONG):
        with meter.counting() as reads:
            built = service.build(ContextRequest(user, "hello again"))
        assert "You last talked " in built.rendered.text()  # a reunion, not a first meeting
        read[user] = reads

    # Then thirty past chats cost the first turn no more than two
    few, many = read[SHORT], read[LONG]
    assert (many.items, many.units) == (few.items, few.units), "\n".join(
        f"{name}: {few.by_target().get(name)} / {n}" for name, n in many.by_target().items()
    )
    assert not any(r.target == "CONV#" for r in many.requests), many.by_target()


def test_conversations_written_before_their_key_still_give_the_last_meeting(
    metered_stores: tuple[Stores, ReadMeter], clock: ManualClock
) -> None:
    # Given past chats whose items predate the by_created key of conversations
    stores, _ = metered_stores
    _conversations(stores, clock, SHORT, 3)
    last = clock.now() - timedelta(days=1)
    client = boto3.client("dynamodb", region_name=REGION)
    pk = {"S": f"U#{SHORT}"}
    for item in client.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :conv)",
        ExpressionAttributeValues={":pk": pk, ":conv": {"S": "CONV#"}},
    )["Items"]:
        client.update_item(
            TableName=TABLE, Key={"pk": pk, "sk": item["sk"]}, UpdateExpression="REMOVE lsi1sk"
        )

    # When a new chat asks when they last met, then once one of them is written again
    before = stores.conversations.last_seen(SHORT, "assistant")
    [latest, *_] = stores.conversations.list_conversations(SHORT)
    clock.advance(timedelta(days=4))
    stores.conversations.append_message(
        SHORT, latest.conversation_id, role=Role.USER, content="back", tokens=1, at=clock.now()
    )

    # Then the last meeting is found the old way, and the rewritten chat has its key
    assert before == last
    assert stores.conversations.last_seen(SHORT, "assistant") == clock.now()


def test_a_turn_that_may_name_someone_reads_the_memories_in_use_once(
    metered_stores: tuple[Stores, ReadMeter], clock: ManualClock
) -> None:
    # Given a user with memories in use and a past, behind either index
    stores, meter = metered_stores
    seeded = _seeded(stores, clock)

    for index in (ExactIndex(stores.recall), _opensearch(clock, stores, (SHORT,))):
        service = _turn(stores, clock, index)

        # When she asks about "my kids" (the message is read with her references first)
        question = history.QUESTION.replace("for tonight", "for my kids tonight")
        named = _reads(
            meter, service, ContextRequest(SHORT, question, conversation_id=seeded.conversation_id)
        )
        plain = _reads(
            meter,
            service,
            ContextRequest(SHORT, history.QUESTION, conversation_id=seeded.conversation_id),
        )

        # Then the book and the search share one read of the memories in use: the turn
        # costs what a turn that names no one costs
        assert named.by_target()["Query DIGEST#"][0] == 1, named.by_target()
        assert (named.items, named.units) == (plain.items, plain.units), named.by_target()
