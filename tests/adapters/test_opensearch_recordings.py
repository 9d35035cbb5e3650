"""The OpenSearch adapter against the answers a Serverless vector collection gives.

The bodies in recordings/opensearch/ are written in the shapes the OpenSearch documentation
shows for each API (each file names its source; no account was at hand to capture them
from a live collection): index creation, the id lookup, `_bulk`, a filtered k-NN search,
and the errors — a bulk line refused for its dimension, a query at another dimension, a
429. opensearch-py's real client sends every request; the in-memory collection answers
with the recording and keeps the request, so the assertions are on what was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opensearchpy.exceptions import RequestError, TransportError

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.opensearch_index import OpenSearchIndex, OpenSearchIndexError, index_name
from chatmemory.domain.vector_encoding import VectorEncoding
from chatmemory.domain.vectors import pack_rows
from tests.support import builders
from tests.support.opensearch_fake import FakeCollection

RECORDINGS = Path(__file__).parent / "recordings" / "opensearch"
DIMS = 512
ALICE = "alice"
INDEX = index_name("memories", "titan-v2-512", VectorEncoding.FP16)


def replay(fake: FakeCollection, *names: str) -> None:
    """Answer the next requests with these recordings, in order."""
    for name in names:
        recorded: dict[str, Any] = json.loads((RECORDINGS / f"{name}.json").read_text())
        request = recorded["request"]
        fake.respond_next(request["method"], request["path"], recorded["status"], recorded["body"])


def unit_rows(count: int, seed: int = 7) -> list[list[float]]:
    rows = np.random.default_rng(seed).normal(size=(count, DIMS)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return [[float(x) for x in row] for row in rows]


@pytest.fixture
def fake() -> FakeCollection:
    return FakeCollection()


@pytest.fixture
def index(fake: FakeCollection, clock: ManualClock) -> OpenSearchIndex:
    return OpenSearchIndex(
        client=fake.client(),
        index_name=INDEX,
        dimensions=DIMS,
        clock=clock,
        encoding=VectorEncoding.FP16,
    )


def test_the_index_is_created_with_faiss_sqfp16_under_cosine(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    # Given a collection without the index, answering the create as documented
    replay(fake, "create_index")

    # When the index is ensured
    created = index.ensure_index()

    # Then the mapping sent asks faiss HNSW for cosine with the fp16 scalar quantizer
    assert created is True
    assert INDEX == "memories-titan-v2-512-fp16"
    put = fake.requests[-1]
    assert (put.method, put.path) == ("PUT", f"/{INDEX}")
    assert put.body["settings"] == {"index.knn": True}
    assert put.body["mappings"]["dynamic"] == "strict"
    assert put.body["mappings"]["properties"]["embedding"] == {
        "type": "knn_vector",
        "dimension": 512,
        "method": {
            "name": "hnsw",
            "engine": "faiss",
            "space_type": "cosinesimil",
            "parameters": {"encoder": {"name": "sq", "parameters": {"type": "fp16"}}},
        },
    }


def test_losing_the_creation_race_is_not_an_error(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    replay(fake, "create_index_exists")

    assert index.ensure_index() is False


def test_a_memory_goes_in_one_bulk_after_a_lookup_filtered_on_its_user(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given the collection finds no old rows and takes both new ones
    replay(fake, "id_lookup_empty", "bulk_created")
    rows = unit_rows(2)
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now(), embedding=pack_rows(rows))

    # When the memory is indexed
    index.upsert(memory)

    # Then the lookup was Alice's only, and the bulk indexed two rows without ids, as floats
    lookup, bulk = fake.requests
    assert lookup.body["query"]["bool"]["filter"][0] == {"term": {"user_id": ALICE}}
    assert [line for line in bulk.body[::2]] == [{"index": {}}, {"index": {}}]
    documents = bulk.body[1::2]
    assert [doc["row"] for doc in documents] == [0, 1]
    assert all(doc["user_id"] == ALICE for doc in documents)
    assert all(len(doc["embedding"]) == DIMS for doc in documents)
    assert "Is vegetarian." not in json.dumps(bulk.body)


def test_a_bulk_line_refused_for_its_dimension_raises_with_its_type(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    replay(fake, "id_lookup_empty", "bulk_dimension_mismatch")
    memory = builders.memory(ALICE, "x", clock.now(), embedding=pack_rows(unit_rows(1)))

    with pytest.raises(OpenSearchIndexError, match="mapper_parsing_exception"):
        index.upsert(memory)


def test_a_search_filters_on_the_user_inside_the_knn_clause_and_reads_cosines(
    fake: FakeCollection, index: OpenSearchIndex, clock: ManualClock
) -> None:
    # Given the collection answers with three rows of two memories
    replay(fake, "knn_search_filtered")
    (query,) = unit_rows(1, seed=3)

    # When Alice searches for two memories
    hits = index.search(ALICE, np.asarray(query, dtype=np.float32), k=2)

    # Then the filter on her id sat inside the knn clause, with k rows for k memories
    (search,) = fake.requests
    knn = search.body["query"]["knn"]["embedding"]
    assert knn["k"] == search.body["size"] == 2 * 8
    assert len(knn["vector"]) == DIMS
    assert knn["filter"]["bool"]["filter"][0] == {"term": {"user_id": ALICE}}
    # And each memory came back once, scored by its best row: cos = 2 * score - 1
    assert [(h.memory_id, round(h.score, 4)) for h in hits] == [
        ("mem_veg", 0.86),
        ("mem_pune", 0.2),
    ]
    assert hits[0].said == pytest.approx(0.62) and hits[0].useful == pytest.approx(0.86)


def test_a_query_at_another_dimension_than_the_index_raises_the_collections_400(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    replay(fake, "knn_search_wrong_dimension")
    (query,) = unit_rows(1)

    with pytest.raises(RequestError) as refused:
        index.search(ALICE, np.asarray(query, dtype=np.float32), k=5)

    assert refused.value.status_code == 400
    assert refused.value.error == "search_phase_execution_exception"


def test_a_throttled_search_raises_for_the_read_path_to_degrade(
    fake: FakeCollection, index: OpenSearchIndex
) -> None:
    replay(fake, "knn_search_throttled")
    (query,) = unit_rows(1)

    with pytest.raises(TransportError) as throttled:
        index.search(ALICE, np.asarray(query, dtype=np.float32), k=5)

    assert throttled.value.status_code == 429
    assert len(fake.requests) == 1  # sent once: the caller decides, not a retry loop
