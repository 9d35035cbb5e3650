"""The OpenSearch index sends exactly the requests a Serverless vector collection accepts.

Every test drives opensearch-py's real client; the connection underneath is the in-memory
FakeCollection (tests/support/opensearch_fake.py), which stores documents, executes the
knn + filter queries and records every request, so the assertions are on the exact bodies.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import boto3
import numpy as np
import pytest
from opensearchpy.exceptions import NotFoundError

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.opensearch_index import (
    DEFAULT_REFRESH_LAG_SECONDS,
    OpenSearchIndex,
    OpenSearchIndexError,
    connect_serverless,
    epoch_millis,
)
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Memory
from chatmemory.domain.vectors import pack_rows, unpack_rows
from tests.support import builders
from tests.support.opensearch_fake import FakeCollection, RecordedRequest, UnsupportedRequest

INDEX = "memories"
DIMS = 4
ALICE = "alice"
BOB = "bob"

SAYS = [1.0, 0.0, 0.0, 0.0]  # what the memory says
USEFUL_FOR = [0.0, 1.0, 0.0, 0.0]  # what it is useful for
FAR = [0.0, 0.0, 1.0, 0.0]


def query(*values: float) -> np.ndarray[Any, np.dtype[np.float32]]:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


@pytest.fixture
def fake() -> FakeCollection:
    return FakeCollection()


@pytest.fixture
def index(fake: FakeCollection, clock: ManualClock) -> OpenSearchIndex:
    """An index that exists, with the request log emptied so tests see only their own."""
    opened = OpenSearchIndex(client=fake.client(), index_name=INDEX, dimensions=DIMS, clock=clock)
    opened.ensure_index()
    fake.requests.clear()
    return opened


def remember(user_id: str, at: datetime, *rows: list[float], **fields: Any) -> Memory:
    return builders.memory(user_id, "Is vegetarian.", at, embedding=pack_rows(list(rows)), **fields)


def searches(fake: FakeCollection) -> list[RecordedRequest]:
    return fake.requests_to("/_search")


def knn_filter(request: RecordedRequest) -> dict[str, Any]:
    filter_clause: dict[str, Any] = request.body["query"]["knn"]["embedding"]["filter"]
    return filter_clause


def visible_filter(user_id: str, now_ms: int) -> list[dict[str, Any]]:
    return [
        {"term": {"user_id": user_id}},
        {"term": {"status": "active"}},
        {
            "bool": {
                "should": [
                    {"bool": {"must_not": [{"exists": {"field": "valid_until"}}]}},
                    {"range": {"valid_until": {"gt": now_ms}}},
                ],
                "minimum_should_match": 1,
            }
        },
    ]


def id_lookup(user_id: str, memory_ids: list[str]) -> dict[str, Any]:
    return {
        "size": 10_000,
        "_source": False,
        "query": {
            "bool": {
                "filter": [
                    {"term": {"user_id": user_id}},
                    {"terms": {"memory_id": memory_ids}},
                ]
            }
        },
    }


# --- the index ---------------------------------------------------------------------------


def test_ensure_index_creates_a_faiss_cosine_knn_index_with_the_filter_fields(
    fake: FakeCollection, clock: ManualClock
) -> None:
    # Given a collection without the index
    opened = OpenSearchIndex(client=fake.client(), index_name=INDEX, dimensions=DIMS, clock=clock)

    # When the index is ensured
    created = opened.ensure_index()

    # Then it was created with a strict mapping: the vector field and the filter fields only
    assert created
    assert [(r.method, r.path) for r in fake.requests] == [
        ("HEAD", "/memories"),
        ("PUT", "/memories"),
    ]
    assert fake.requests[1].body == {
        "settings": {"index.knn": True},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "embedding": {
                    "type": "knn_vector",
                    "dimension": DIMS,
                    "method": {"name": "hnsw", "engine": "faiss", "space_type": "cosinesimil"},
                },
                "user_id": {"type": "keyword"},
                "memory_id": {"type": "keyword"},
                "persona": {"type": "keyword"},
                "status": {"type": "keyword"},
                "valid_until": {"type": "date", "format": "epoch_millis"},
                "row": {"type": "integer"},
            },
        },
    }


def test_ensure_index_leaves_an_existing_index_alone(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    created = index.ensure_index()

    assert not created
    assert [(r.method, r.path) for r in fake.requests] == [("HEAD", "/memories")]


def test_ensure_index_tolerates_losing_the_creation_race(
    fake: FakeCollection, clock: ManualClock
) -> None:
    # Given another cold start creates the index between our HEAD and our PUT
    fake.respond_next(
        "PUT",
        "/memories",
        400,
        {
            "error": {
                "root_cause": [
                    {
                        "type": "resource_already_exists_exception",
                        "reason": "index [memories/abc] already exists",
                        "index": "memories",
                    }
                ],
                "type": "resource_already_exists_exception",
                "reason": "index [memories/abc] already exists",
                "index": "memories",
            },
            "status": 400,
        },
    )
    opened = OpenSearchIndex(client=fake.client(), index_name=INDEX, dimensions=DIMS, clock=clock)

    # When we ensure the index, Then nothing is raised and we did not create it
    assert opened.ensure_index() is False


def test_refresh_lag_defaults_to_a_classic_vector_collections_interval(
    fake: FakeCollection, clock: ManualClock
) -> None:
    default = OpenSearchIndex(client=fake.client(), index_name=INDEX, dimensions=DIMS, clock=clock)
    nextgen = OpenSearchIndex(
        client=fake.client(),
        index_name=INDEX,
        dimensions=DIMS,
        clock=clock,
        refresh_lag_seconds=10,
    )

    assert default.refresh_lag_seconds == DEFAULT_REFRESH_LAG_SECONDS == 60.0
    assert nextgen.refresh_lag_seconds == 10


# --- upsert ------------------------------------------------------------------------------


def test_upsert_indexes_one_document_per_vector_row_without_ids(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given a memory with what it says and what it is useful for
    memory = remember(ALICE, clock.now(), SAYS, USEFUL_FOR, meta={"uses": ["dinner ideas"]})

    # When it is indexed
    index.upsert(memory)

    # Then one bulk request indexes two documents, letting the collection pick their ids
    rows = unpack_rows(memory.embedding or b"")
    expected = [
        {
            "user_id": ALICE,
            "memory_id": memory.memory_id,
            "persona": "assistant",
            "status": "active",
            "row": row,
            "embedding": rows[row].tolist(),
        }
        for row in range(2)
    ]
    (bulk,) = fake.requests_to("/_bulk")
    assert bulk.path == "/memories/_bulk"
    assert bulk.body == [{"index": {}}, expected[0], {"index": {}}, expected[1]]
    assert fake.documents(INDEX) == expected


def test_upsert_never_sends_the_memory_text(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    memory = remember(ALICE, clock.now(), SAYS, meta={"uses": ["dinner ideas"]})

    index.upsert(memory)

    sent = json.dumps([request.body for request in fake.requests])
    assert "vegetarian" not in sent
    assert "dinner ideas" not in sent


def test_upsert_looks_up_the_memorys_old_rows_by_user_and_memory_id(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    memory = remember(ALICE, clock.now(), SAYS)

    index.upsert(memory)

    (lookup,) = searches(fake)
    assert lookup.path == "/memories/_search"
    assert lookup.body == id_lookup(ALICE, [memory.memory_id])


def test_upsert_deletes_old_rows_before_indexing_new_ones(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given a memory indexed with two rows, searchable after a refresh
    memory = remember(ALICE, clock.now(), SAYS, USEFUL_FOR)
    index.upsert(memory)
    (first_bulk,) = fake.requests_to("/_bulk")
    old_ids = [item["index"]["_id"] for item in first_bulk.response["items"]]
    fake.refresh()
    fake.requests.clear()

    # When its corrected version (one row) is indexed
    corrected = memory.with_changes(embedding=pack_rows([FAR]))
    index.upsert(corrected)

    # Then the one bulk request deletes both old rows first, then indexes the new row
    (bulk,) = fake.requests_to("/_bulk")
    assert bulk.body[:2] == [{"delete": {"_id": old_ids[0]}}, {"delete": {"_id": old_ids[1]}}]
    assert bulk.body[2:] == [
        {"index": {}},
        {
            "user_id": ALICE,
            "memory_id": memory.memory_id,
            "persona": "assistant",
            "status": "active",
            "row": 0,
            "embedding": FAR,
        },
    ]
    assert [doc["embedding"] for doc in fake.documents(INDEX)] == [FAR]


def test_upsert_records_the_shelf_life_in_epoch_millis(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    until = clock.now() + timedelta(days=7)
    memory = remember(ALICE, clock.now(), SAYS, valid_until=until)

    index.upsert(memory)

    (document,) = fake.documents(INDEX)
    assert document["valid_until"] == epoch_millis(until) == 1_796_634_000_000


def test_upsert_of_a_closed_memory_only_removes_its_rows(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given an indexed memory
    memory = remember(ALICE, clock.now(), SAYS)
    index.upsert(memory)
    fake.refresh()
    fake.requests.clear()

    # When it is closed (history is never retrieved) and re-indexed
    index.upsert(memory.closed(clock.now()))

    # Then its row is deleted and nothing is indexed in its place
    (bulk,) = fake.requests_to("/_bulk")
    assert [next(iter(line)) for line in bulk.body] == ["delete"]
    assert fake.documents(INDEX) == []


def test_upsert_of_a_memory_without_vectors_writes_nothing(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())

    index.upsert(memory)

    assert fake.requests_to("/_bulk") == []
    assert fake.documents(INDEX) == []


def test_upsert_refuses_vectors_of_another_dimension_before_writing(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    memory = remember(ALICE, clock.now(), [1.0, 0.0, 0.0])

    with pytest.raises(InvalidField) as refused:
        index.upsert(memory)

    assert refused.value.field == "embedding"
    assert fake.requests_to("/_bulk") == []


def test_upsert_raises_when_the_collection_rejects_a_bulk_line(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given the collection answers the bulk with a failed line (a bulk is 200 even then)
    fake.respond_next(
        "POST",
        "/memories/_bulk",
        200,
        {
            "took": 0,
            "errors": True,
            "items": [
                {
                    "index": {
                        "_index": "memories",
                        "status": 400,
                        "error": {
                            "type": "illegal_argument_exception",
                            "reason": (
                                "Document ID is not supported in create/index operation request"
                            ),
                        },
                    }
                }
            ],
        },
    )

    # When a memory is indexed, Then the failure is not swallowed
    with pytest.raises(OpenSearchIndexError, match="illegal_argument_exception"):
        index.upsert(remember(ALICE, clock.now(), SAYS))


# --- remove ------------------------------------------------------------------------------


def test_remove_finds_the_rows_by_user_and_memory_then_deletes_them_by_id(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given two indexed memories, searchable
    first = remember(ALICE, clock.now(), SAYS, USEFUL_FOR)
    second = remember(ALICE, clock.now(), FAR)
    index.upsert(first)
    index.upsert(second)
    fake.refresh()
    fake.requests.clear()

    # When both are removed
    index.remove(ALICE, [first.memory_id, second.memory_id])

    # Then one lookup (user filter included) finds their three rows, one bulk deletes them
    (lookup,) = searches(fake)
    assert lookup.body == id_lookup(ALICE, [first.memory_id, second.memory_id])
    (bulk,) = fake.requests_to("/_bulk")
    assert len(bulk.body) == 3
    assert all(set(line) == {"delete"} for line in bulk.body)
    assert fake.documents(INDEX) == []


def test_remove_never_touches_another_users_rows(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given Bob has a memory with the same id as Alice's
    alices = remember(ALICE, clock.now(), SAYS)
    bobs = remember(BOB, clock.now(), SAYS, memory_id=alices.memory_id)
    index.upsert(alices)
    index.upsert(bobs)
    fake.refresh()

    # When Alice's is removed
    index.remove(ALICE, [alices.memory_id])

    # Then Bob's is still there
    assert [doc["user_id"] for doc in fake.documents(INDEX)] == [BOB]


def test_remove_of_unknown_ids_deletes_nothing(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    index.remove(ALICE, ["mem_unknown"])

    assert len(searches(fake)) == 1
    assert fake.requests_to("/_bulk") == []


@pytest.mark.parametrize("user_id", ["", None])
def test_remove_without_a_user_raises_before_any_request(
    fake: FakeCollection, index: OpenSearchIndex, user_id: Any
) -> None:
    with pytest.raises(InvalidField) as refused:
        index.remove(user_id, ["mem_1"])

    assert refused.value.field == "user_id"
    assert fake.requests == []


# --- search ------------------------------------------------------------------------------


@pytest.mark.parametrize("user_id", ["", None])
def test_search_without_a_user_raises_before_any_request(
    fake: FakeCollection, index: OpenSearchIndex, user_id: Any
) -> None:
    with pytest.raises(InvalidField) as refused:
        index.search(user_id, query(*SAYS), k=5)

    assert refused.value.field == "user_id"
    assert fake.requests == []


def test_search_filters_on_user_status_and_expiry_inside_the_knn_clause(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    index.search(ALICE, query(*SAYS), k=5)

    (request,) = searches(fake)
    assert request.path == "/memories/_search"
    # Efficient filtering: the filter is a parameter of the knn clause, not a post-filter;
    # eight rows asked per memory wanted (its words and up to seven uses)
    assert request.body == {
        "size": 40,
        "_source": ["memory_id", "row"],
        "query": {
            "knn": {
                "embedding": {
                    "vector": SAYS,
                    "k": 40,
                    "filter": {"bool": {"filter": visible_filter(ALICE, 1_796_029_200_000)}},
                }
            }
        },
    }
    assert epoch_millis(clock.now()) == 1_796_029_200_000


def test_search_asks_for_enough_rows_to_cover_k_memories(
    fake: FakeCollection, clock: ManualClock
) -> None:
    opened = OpenSearchIndex(
        client=fake.client(), index_name=INDEX, dimensions=DIMS, clock=clock, rows_per_memory=3
    )
    opened.ensure_index()

    opened.search(ALICE, query(*SAYS), k=7)

    (request,) = searches(fake)
    assert request.body["size"] == 21
    assert request.body["query"]["knn"]["embedding"]["k"] == 21


def test_search_adds_the_persona_to_the_filter_when_asked(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given Alice's memories held by two personas
    assistants = remember(ALICE, clock.now(), SAYS)
    warrens = remember(ALICE, clock.now(), SAYS, persona="warren")
    index.upsert(assistants)
    index.upsert(warrens)
    fake.refresh()
    fake.requests.clear()

    # When Warren searches
    hits = index.search(ALICE, query(*SAYS), k=5, persona="warren")

    # Then the persona term joins the filter and only Warren's memory comes back
    (request,) = searches(fake)
    assert knn_filter(request)["bool"]["filter"] == [
        *visible_filter(ALICE, epoch_millis(clock.now())),
        {"term": {"persona": "warren"}},
    ]
    assert [hit.memory_id for hit in hits] == [warrens.memory_id]


def test_search_converts_the_cosinesimil_score_back_to_cosine(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    # Given the collection answers with the documented shape; cosinesimil's _score is
    # (1 + cos) / 2, so 0.9 means a cosine of 0.8 and 0.25 a cosine of -0.5
    fake.respond_next(
        "POST",
        "/memories/_search",
        200,
        {
            "took": 2,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {"value": 2, "relation": "eq"},
                "max_score": 0.9,
                "hits": [
                    {
                        "_index": "memories",
                        "_id": "1%3A0%3Aa",
                        "_score": 0.9,
                        "_source": {"memory_id": "mem_a"},
                    },
                    {
                        "_index": "memories",
                        "_id": "1%3A0%3Ab",
                        "_score": 0.25,
                        "_source": {"memory_id": "mem_b"},
                    },
                ],
            },
        },
    )

    # When Alice searches
    hits = index.search(ALICE, query(*SAYS), k=5)

    # Then the hits carry cosines
    assert [(hit.memory_id, round(hit.score, 6)) for hit in hits] == [
        ("mem_a", 0.8),
        ("mem_b", -0.5),
    ]


def test_search_scores_a_memory_by_its_nearest_row(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given a memory whose "useful for" row matches the query better than what it says
    memory = remember(ALICE, clock.now(), SAYS, USEFUL_FOR)
    index.upsert(memory)
    fake.refresh()

    # When Alice asks for something close to what it is useful for
    hits = index.search(ALICE, query(0.6, 0.8, 0.0, 0.0), k=5)

    # Then the memory comes back once, with the cosine of its best row
    assert [hit.memory_id for hit in hits] == [memory.memory_id]
    assert hits[0].score == pytest.approx(0.8, abs=1e-4)


def test_search_returns_at_most_k_memories_best_first(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given three memories at different distances from the query
    near = remember(ALICE, clock.now(), SAYS)
    middle = remember(ALICE, clock.now(), [0.6, 0.8, 0.0, 0.0])
    far = remember(ALICE, clock.now(), FAR)
    for memory in (far, near, middle):
        index.upsert(memory)
    fake.refresh()

    # When Alice asks for two
    hits = index.search(ALICE, query(*SAYS), k=2)

    # Then she gets the two nearest, nearest first
    assert [hit.memory_id for hit in hits] == [near.memory_id, middle.memory_id]
    assert hits[0].score > hits[1].score


def test_search_asks_again_when_rows_of_the_same_memories_fill_the_page(
    fake: FakeCollection, clock: ManualClock
) -> None:
    # Given an index that expects one row per memory, and a memory with three near rows
    opened = OpenSearchIndex(
        client=fake.client(), index_name=INDEX, dimensions=DIMS, clock=clock, rows_per_memory=1
    )
    opened.ensure_index()
    crowded = remember(ALICE, clock.now(), SAYS, [0.9, 0.1, 0.0, 0.0], [0.8, 0.2, 0.0, 0.0])
    other = remember(ALICE, clock.now(), FAR)
    opened.upsert(crowded)
    opened.upsert(other)
    fake.refresh()
    fake.requests.clear()

    # When Alice asks for two memories
    hits = opened.search(ALICE, query(*SAYS), k=2)

    # Then the first page (two rows, one memory) is followed by a larger one
    assert [request.body["size"] for request in searches(fake)] == [2, 4]
    assert [hit.memory_id for hit in hits] == [crowded.memory_id, other.memory_id]


def test_search_skips_memories_whose_shelf_life_ran_out(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given a memory good for a day and one good for a week
    day = remember(ALICE, clock.now(), SAYS, valid_until=clock.now() + timedelta(days=1))
    week = remember(ALICE, clock.now(), SAYS, valid_until=clock.now() + timedelta(days=7))
    index.upsert(day)
    index.upsert(week)
    fake.refresh()

    # When two days pass
    clock.advance(timedelta(days=2))
    hits = index.search(ALICE, query(*SAYS), k=5)

    # Then only the week-long one is found
    assert [hit.memory_id for hit in hits] == [week.memory_id]


def test_search_never_returns_another_users_memories(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given Bob's memory is nearer to the query than Alice's
    alices = remember(ALICE, clock.now(), [0.6, 0.8, 0.0, 0.0])
    bobs = remember(BOB, clock.now(), SAYS)
    index.upsert(alices)
    index.upsert(bobs)
    fake.refresh()

    # When Alice searches
    hits = index.search(ALICE, query(*SAYS), k=5)

    # Then she gets her own memory only
    assert [hit.memory_id for hit in hits] == [alices.memory_id]


def test_the_index_lags_writes_until_the_collection_refreshes(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given a memory just indexed
    memory = remember(ALICE, clock.now(), SAYS)
    index.upsert(memory)

    # When Alice searches before and after the refresh interval
    before = index.search(ALICE, query(*SAYS), k=5)
    fake.refresh()
    after = index.search(ALICE, query(*SAYS), k=5)

    # Then only the later search finds it: the read path must merge fresh writes itself
    assert before == []
    assert [hit.memory_id for hit in after] == [memory.memory_id]


def test_a_removed_memory_stays_searchable_until_the_collection_refreshes(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    memory = remember(ALICE, clock.now(), SAYS)
    index.upsert(memory)
    fake.refresh()

    index.remove(ALICE, [memory.memory_id])
    before = index.search(ALICE, query(*SAYS), k=5)
    fake.refresh()
    after = index.search(ALICE, query(*SAYS), k=5)

    assert [hit.memory_id for hit in before] == [memory.memory_id]
    assert after == []


@pytest.mark.parametrize(
    "bad_query",
    [
        np.zeros(DIMS, dtype=np.float32),
        np.ones(DIMS + 1, dtype=np.float32),
        np.array([np.nan, 0, 0, 1], dtype=np.float32),
        np.ones((2, DIMS), dtype=np.float32),
    ],
    ids=["zero", "wrong-dimension", "not-finite", "two-vectors"],
)
def test_search_refuses_a_query_cosinesimil_cannot_score_before_any_request(
    fake: FakeCollection, index: OpenSearchIndex, bad_query: np.ndarray[Any, Any]
) -> None:
    with pytest.raises(InvalidField) as refused:
        index.search(ALICE, bad_query, k=5)

    assert refused.value.field == "query"
    assert fake.requests == []


def test_search_for_no_memories_sends_no_request(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    hits = index.search(ALICE, query(*SAYS), k=0)

    assert hits == []
    assert fake.requests == []


def test_search_errors_from_opensearch_propagate(fake: FakeCollection, clock: ManualClock) -> None:
    # Given an index that was never created
    missing = OpenSearchIndex(client=fake.client(), index_name=INDEX, dimensions=DIMS, clock=clock)

    # When Alice searches, Then the collection's 404 reaches the caller (the read path degrades)
    with pytest.raises(NotFoundError):
        missing.search(ALICE, query(*SAYS), k=5)


# --- the fake is a vector collection, not a generic OpenSearch --------------------------------


def test_the_fake_refuses_delete_by_query_which_serverless_does_not_offer(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    with pytest.raises(UnsupportedRequest):
        fake.client().delete_by_query(index=INDEX, body={"query": {"term": {"user_id": ALICE}}})


def test_the_fake_refuses_custom_document_ids_like_a_vector_collection(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    response = fake.client().bulk(
        index=INDEX, body=[{"index": {"_id": "mine"}}, {"user_id": ALICE}]
    )

    assert response["errors"] is True
    assert response["items"][0]["index"]["error"]["reason"] == (
        "Document ID is not supported in create/index operation request"
    )


# --- the real client ---------------------------------------------------------------------


@pytest.fixture
def session(aws_env: None) -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="eu-west-1"
    )


def test_connect_serverless_signs_requests_for_the_aoss_service(session: boto3.Session) -> None:
    client = connect_serverless(
        "https://abc123.eu-west-1.aoss.amazonaws.com", "eu-west-1", session=session
    )
    (connection,) = client.transport.connection_pool.connections

    headers = connection.http_auth(
        "POST", "https://abc123.eu-west-1.aoss.amazonaws.com:443/memories/_search", b"{}"
    )

    assert "/eu-west-1/aoss/aws4_request" in headers["Authorization"]
    assert "x-amz-content-sha256" in headers["Authorization"]


def test_connect_serverless_verifies_tls_and_bounds_timeouts_and_retries(
    session: boto3.Session,
) -> None:
    client = connect_serverless(
        "https://abc123.eu-west-1.aoss.amazonaws.com", "eu-west-1", session=session
    )
    (connection,) = client.transport.connection_pool.connections

    assert connection.host == "https://abc123.eu-west-1.aoss.amazonaws.com:443"
    assert connection.pool.cert_reqs == "CERT_REQUIRED"
    assert connection.timeout == 5.0
    assert client.transport.max_retries == 2
    assert client.transport.retry_on_timeout is False


def test_connect_serverless_refuses_a_plain_http_endpoint(session: boto3.Session) -> None:
    with pytest.raises(InvalidField) as refused:
        connect_serverless(
            "http://abc123.eu-west-1.aoss.amazonaws.com", "eu-west-1", session=session
        )

    assert refused.value.field == "endpoint"
