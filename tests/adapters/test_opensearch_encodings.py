"""The index's vector encodings: what each asks the collection for, sends, and reads back.

opensearch-py's real client over the in-memory collection (tests/support/opensearch_fake.py),
which stores fp16 fields as half floats and scores byte fields by their inner product, as
faiss does; the cosines the adapter reports are compared with domain/vector_encoding.py's
`as_stored`, the same arithmetic bench/vector_encoding.py measures recall with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opensearchpy.exceptions import RequestError

import chatmemory.adapters.opensearch_index as opensearch_module
from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.opensearch_index import OpenSearchIndex, index_name
from chatmemory.config import Container, Settings
from chatmemory.domain.vector_encoding import VectorEncoding, as_stored, query_as_sent
from chatmemory.domain.vectors import pack_rows, unpack_rows
from tests.support import builders
from tests.support.opensearch_fake import FakeCollection

DIMS = 64
ALICE, BOB = "alice", "bob"


def unit_rows(count: int, seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    rows = np.random.default_rng(seed).normal(size=(count, DIMS)).astype(np.float32)
    normalised: np.ndarray[Any, np.dtype[np.float32]] = rows / np.linalg.norm(
        rows, axis=1, keepdims=True
    )
    return normalised


def opened(fake: FakeCollection, clock: ManualClock, encoding: VectorEncoding) -> OpenSearchIndex:
    index = OpenSearchIndex(
        client=fake.client(),
        index_name="memories",
        dimensions=DIMS,
        clock=clock,
        encoding=encoding,
    )
    index.ensure_index()
    return index


def test_the_byte_index_is_faiss_inner_product_over_byte_vectors(clock: ManualClock) -> None:
    fake = FakeCollection()

    opened(fake, clock, VectorEncoding.BYTE)

    (put,) = fake.requests_to("/memories")[1:]
    assert put.body["mappings"]["properties"]["embedding"] == {
        "type": "knn_vector",
        "dimension": DIMS,
        "data_type": "byte",
        "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct"},
    }


def test_faiss_refuses_cosine_on_byte_vectors_which_is_why_the_index_uses_inner_product(
    clock: ManualClock,
) -> None:
    body = {
        "settings": {"index.knn": True},
        "mappings": {
            "properties": {
                "embedding": {
                    "type": "knn_vector",
                    "dimension": DIMS,
                    "data_type": "byte",
                    "method": {"name": "hnsw", "engine": "faiss", "space_type": "cosinesimil"},
                }
            }
        },
    }

    with pytest.raises(RequestError) as refused:
        FakeCollection().client().indices.create(index="memories", body=body)

    assert refused.value.error == "mapper_parsing_exception"


@pytest.mark.parametrize("encoding", list(VectorEncoding), ids=lambda e: e.value)
def test_search_reports_the_cosine_the_encoded_index_scores(
    clock: ManualClock, encoding: VectorEncoding
) -> None:
    # Given two memories of Alice's and one of Bob's in an index of this encoding
    fake = FakeCollection(refresh_on_write=True)
    index = opened(fake, clock, encoding)
    rows = unit_rows(3, seed=11)
    memories = [
        builders.memory(user, f"memory {n}", clock.now(), embedding=pack_rows([row]))
        for n, (user, row) in enumerate(zip([ALICE, ALICE, BOB], rows, strict=True))
    ]
    for memory in memories:
        index.upsert(memory)
    query = unit_rows(1, seed=12)[0]

    # When Alice searches
    hits = index.search(ALICE, query, k=5)

    # Then her two memories come back with the cosine the encoding yields, Bob's never
    stored = {m.memory_id: unpack_rows(m.embedding or b"")[0] for m in memories[:2]}
    expected = {
        memory_id: float(as_stored(row, encoding) @ query_as_sent(query, encoding))
        for memory_id, row in stored.items()
    }
    assert {hit.memory_id: hit.score for hit in hits} == pytest.approx(expected, abs=2e-6)
    # And the encoding barely moves a cosine: exact for float32, fp16 within 1e-3, bytes 1e-2
    exact = {id_: float(row @ query / np.linalg.norm(row)) for id_, row in stored.items()}
    tolerance = {"float32": 1e-6, "fp16": 1e-3, "byte": 1e-2}[encoding.value]
    assert {hit.memory_id: hit.score for hit in hits} == pytest.approx(exact, abs=tolerance)


def test_a_byte_index_is_sent_bytes_for_documents_and_queries(clock: ManualClock) -> None:
    fake = FakeCollection(refresh_on_write=True)
    index = opened(fake, clock, VectorEncoding.BYTE)
    row = unit_rows(1, seed=5)[0]

    index.upsert(builders.memory(ALICE, "x", clock.now(), embedding=pack_rows([row])))
    index.search(ALICE, unit_rows(1, seed=6)[0], k=1)

    (bulk,) = fake.requests_to("/_bulk")
    sent = bulk.body[1]["embedding"]
    query = fake.requests_to("/_search")[-1].body["query"]["knn"]["embedding"]["vector"]
    for vector in (sent, query):
        assert all(isinstance(v, int) and -128 <= v <= 127 for v in vector)
        assert max(abs(v) for v in vector) > 16  # the range is used, not a few levels of it


def test_each_encoding_has_an_index_of_its_own_and_float32_keeps_its_name() -> None:
    names = {e.value: index_name("memories", "titan-v2-512", e) for e in VectorEncoding}

    assert names == {
        "float32": "memories-titan-v2-512",
        "fp16": "memories-titan-v2-512-fp16",
        "byte": "memories-titan-v2-512-byte",
    }


def test_the_container_builds_the_index_in_the_configured_encoding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, clock: ManualClock
) -> None:
    # Given settings for OpenSearch at the byte encoding, and a collection to talk to
    fake = FakeCollection()
    monkeypatch.setattr(opensearch_module, "connect_serverless", lambda *_: fake.client())
    settings = Settings(
        state_dir=tmp_path,
        embedder="hashing",
        index="opensearch",
        opensearch_endpoint="https://abc.eu-west-1.aoss.amazonaws.com",
        region="eu-west-1",
        vector_encoding="byte",
    )

    # When the container builds the index
    index = Container(settings, clock).index

    # Then the index it created is the byte one, named for its embedder and encoding
    assert isinstance(index, OpenSearchIndex) and index.encoding is VectorEncoding.BYTE
    put = next(r for r in fake.requests if r.method == "PUT")
    assert put.path == "/memories-hashing-384-byte"
    assert put.body["mappings"]["properties"]["embedding"]["data_type"] == "byte"
