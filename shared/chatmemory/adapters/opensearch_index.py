"""The VectorIndex on OpenSearch (Serverless) k-NN: one document per vector row, always per user.

What the collection allows shaped this adapter (sources cited where they matter):

- VECTORSEARCH collections refuse custom document ids ("For time series and vector search
  collections, you can't index by custom document ID or update by upsert requests",
  https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-overview.html#serverless-usecase;
  the error is "Document ID is not supported in create/index operation request",
  https://github.com/opensearch-project/opensearch-py/issues/792). So ids are the server's;
  `memory_id` and `row` are fields, and re-indexing first looks the old documents up.
- `_delete_by_query` is not among the operations Serverless supports
  (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-genref.html;
  the collection answers it with 404, https://github.com/opensearch-project/opensearch-java/issues/1112),
  but `DELETE <index>/_doc/<id>` and `_bulk` deletes are. So removal is: search the ids
  (always with the user filter), then bulk-delete them by id.
- Nothing is searchable until the collection refreshes (60 s on classic vector
  collections, ~10 s on NextGen; `_refresh` is not exposed). A document indexed less than
  `refresh_lag_seconds` ago is invisible to the id lookup as well, so an upsert or a remove
  that follows a write that closely can miss it: the purge must run (again) after the lag.
- Efficient k-NN filtering (the `filter` inside the `knn` clause) needs the faiss or lucene
  engine (https://docs.opensearch.org/latest/vector-search/filter-search-knn/efficient-knn-filtering/);
  vector collections have long refused lucene, and faiss supports cosinesimil since 2.19
  (https://docs.opensearch.org/latest/mappings/supported-field-types/knn-methods-engines/).

No memory text is ever sent: documents hold ids, persona, status, expiry and the vector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, cast
from urllib.parse import urlparse

import boto3
import numpy as np
import numpy.typing as npt
from opensearchpy import OpenSearch, Urllib3AWSV4SignerAuth, Urllib3HttpConnection
from opensearchpy.exceptions import RequestError

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.vector_encoding import (
    VectorEncoding,
    cosine_from_inner_product,
    to_bytes,
)
from chatmemory.domain.vectors import unpack_rows
from chatmemory.ports.clock import Clock
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.recall_source import MemoryDigest
from chatmemory.ports.vector_index import VectorHit, VectorIndex

VECTOR_FIELD = "embedding"
DEFAULT_REFRESH_LAG_SECONDS = 60.0  # classic vector collections; NextGen refreshes in ~10 s
# What a memory says + up to seven "useful for" rows. Asking for this many rows per memory
# wanted leaves room on the page for several rows of each near memory, which relevance
# blends (the best use, the best two); a row not on the page is unknown, never guessed.
DEFAULT_ROWS_PER_MEMORY = 8
MAX_DIMENSIONS = 16_000  # what a Serverless vector collection accommodates
# The largest page OpenSearch returns (index.max_result_window) and the largest knn `k`.
MAX_WINDOW = 10_000
# Memory ids per id lookup: even at 20 rows each, the lookup stays inside one window.
_MEMORY_IDS_PER_LOOKUP = 500


class OpenSearchIndexError(RuntimeError):
    """OpenSearch took the request but not all of it (failed bulk lines, a lookup cut short)."""


def index_name(base: str, embedder_name: str, encoding: VectorEncoding) -> str:
    """One index per embedder and encoding: vectors of different spaces never share one
    (float32 keeps the name it always had)."""
    name = f"{base}-{embedder_name}"
    return name if encoding is VectorEncoding.FLOAT32 else f"{name}-{encoding.value}"


def vector_mapping(dimensions: int, encoding: VectorEncoding) -> dict[str, Any]:
    """The knn_vector field: faiss HNSW, cosine for floats, inner product for bytes."""
    if encoding is VectorEncoding.BYTE:
        return {
            "type": "knn_vector",
            "dimension": dimensions,
            "data_type": "byte",
            "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct"},
        }
    method: dict[str, Any] = {"name": "hnsw", "engine": "faiss", "space_type": "cosinesimil"}
    if encoding is VectorEncoding.FP16:
        # Unit vectors are far inside fp16's ±65504, so nothing needs clipping (clip: false
        # would refuse, not round, a vector outside it).
        method["parameters"] = {"encoder": {"name": "sq", "parameters": {"type": "fp16"}}}
    return {"type": "knn_vector", "dimension": dimensions, "method": method}


def index_body(
    dimensions: int, encoding: VectorEncoding = VectorEncoding.FLOAT32
) -> dict[str, Any]:
    """The index settings and mapping: the vector field, and the filter fields."""
    return {
        "settings": {"index.knn": True},
        "mappings": {
            # Nothing but these fields can ever be stored (no memory text by accident).
            "dynamic": "strict",
            "properties": {
                VECTOR_FIELD: vector_mapping(dimensions, encoding),
                "user_id": {"type": "keyword"},
                "memory_id": {"type": "keyword"},
                "persona": {"type": "keyword"},
                "status": {"type": "keyword"},
                "valid_until": {"type": "date", "format": "epoch_millis"},
                "row": {"type": "integer"},
            },
        },
    }


def cosine_from_score(score: float) -> float:
    """The cosine similarity behind an OpenSearch cosinesimil `_score`.

    For cosinesimil, d = 1 - cos and the score is (2 - d) / 2 = (1 + cos) / 2
    (https://docs.opensearch.org/latest/mappings/supported-field-types/knn-spaces/),
    so cos = 2 * score - 1, clamped against float noise.
    """
    return max(-1.0, min(1.0, 2.0 * score - 1.0))


def cosine_from_inner_product_score(score: float) -> float:
    """The cosine behind a faiss `innerproduct` `_score` on byte vectors.

    For innerproduct, d = -(x . y) and the score is -d + 1 when d < 0, else 1 / (1 + d)
    (https://docs.opensearch.org/latest/mappings/supported-field-types/knn-spaces/); the
    inner product of the two byte vectors, over the scale squared, is the cosine.
    """
    inner_product = score - 1.0 if score >= 1.0 else 1.0 - 1.0 / max(score, 1e-12)
    return cosine_from_inner_product(inner_product)


def epoch_millis(instant: datetime) -> int:
    return int(instant.timestamp() * 1000)


class OpenSearchIndex(VectorIndex):
    """Memories' vectors in one OpenSearch index, one document per vector row."""

    def __init__(
        self,
        *,
        client: OpenSearch,
        index_name: str,
        dimensions: int,
        clock: Clock,
        refresh_lag_seconds: float = DEFAULT_REFRESH_LAG_SECONDS,
        rows_per_memory: int = DEFAULT_ROWS_PER_MEMORY,
        encoding: VectorEncoding = VectorEncoding.FLOAT32,
    ) -> None:
        if not 1 <= dimensions <= MAX_DIMENSIONS:
            raise InvalidField("dimensions", f"must be 1..{MAX_DIMENSIONS}")
        if refresh_lag_seconds < 0:
            raise InvalidField("refresh_lag_seconds", "must not be negative")
        if rows_per_memory < 1:
            raise InvalidField("rows_per_memory", "must be at least 1")
        self._client = client
        self._index = index_name
        self._dimensions = dimensions
        self._clock = clock
        self._rows_per_memory = rows_per_memory
        self.encoding = VectorEncoding(encoding)
        self.refresh_lag_seconds = refresh_lag_seconds

    # ---- the index itself -------------------------------------------------------------

    def ensure_index(self) -> bool:
        """Create the index if it is missing; True if this call created it."""
        if self._client.indices.exists(index=self._index):
            return False
        try:
            self._client.indices.create(
                index=self._index, body=index_body(self._dimensions, self.encoding)
            )
        except RequestError as error:
            # Another cold start won the race; the index is there, which is all we wanted.
            if error.error != "resource_already_exists_exception":
                raise
            return False
        return True

    # ---- writes -----------------------------------------------------------------------

    def upsert(self, memory: Memory) -> None:
        """Replace the memory's documents with one per vector row.

        A memory that is not active, or has no vectors, keeps no documents: history is
        never retrieved, and a vector the row no longer holds must not answer for it.
        The old documents are deleted in the same bulk request, before the new ones.
        """
        old_ids = self._document_ids(memory.user_id, [memory.memory_id])
        actions: list[dict[str, Any]] = [self._delete_action(doc_id) for doc_id in old_ids]
        for document in self._documents(memory):
            actions.append({"index": {}})
            actions.append(document)
        if actions:
            self._bulk(actions)

    def remove(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Delete every document of these memories of this user (found by search, then by id)."""
        rules.user_id(user_id)
        unique = list(dict.fromkeys(memory_ids))
        for start in range(0, len(unique), _MEMORY_IDS_PER_LOOKUP):
            chunk = unique[start : start + _MEMORY_IDS_PER_LOOKUP]
            doc_ids = self._document_ids(user_id, chunk)
            if doc_ids:
                self._bulk([self._delete_action(doc_id) for doc_id in doc_ids])

    # ---- reads ------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: Vectors,
        *,
        k: int,
        persona: str | None = None,
        visible: Sequence[MemoryDigest] | None = None,
    ) -> list[VectorHit]:
        """Up to k of the user's active, unexpired memories nearest to `query`, best first.
        (`visible` is not needed: the collection filters by its own fields, and the read
        path drops what the store no longer shows.)"""
        rules.user_id(user_id)
        if isinstance(k, bool) or not isinstance(k, int):
            raise InvalidField("k", "must be a whole number")
        if persona is not None:
            rules.persona(persona)
        vector = self._query_vector(query)
        if k < 1:
            return []  # as the exact index answers: nothing asked, nothing sent
        knn_filter = self._visible_filter(user_id, persona)

        # A memory has several rows, so ask for enough rows to cover k memories; if rows of
        # the same memories crowd the page and more documents matched, ask for more.
        size = min(k * self._rows_per_memory, MAX_WINDOW)
        while True:
            hits = self._knn_hits(vector, size, knn_filter)
            best = _best_per_memory(hits, self._cosine)
            if len(best) >= k or len(hits) < size or size >= MAX_WINDOW:
                break
            size = min(size * 2, MAX_WINDOW)
        ranked = sorted(best.values(), key=lambda hit: (-hit.score, hit.memory_id))
        return ranked[:k]

    def _cosine(self, score: float) -> float:
        if self.encoding is VectorEncoding.BYTE:
            return cosine_from_inner_product_score(score)
        return cosine_from_score(score)

    # ---- request bodies ---------------------------------------------------------------

    def _visible_filter(self, user_id: str, persona: str | None) -> dict[str, Any]:
        """The user's active rows whose shelf life has not run out (and the persona's, if asked)."""
        now = epoch_millis(self._clock.now())
        clauses: list[dict[str, Any]] = [
            {"term": {"user_id": user_id}},
            {"term": {"status": Status.ACTIVE.value}},
            {
                "bool": {
                    "should": [
                        {"bool": {"must_not": [{"exists": {"field": "valid_until"}}]}},
                        {"range": {"valid_until": {"gt": now}}},
                    ],
                    "minimum_should_match": 1,
                }
            },
        ]
        if persona is not None:
            clauses.append({"term": {"persona": persona}})
        return {"bool": {"filter": clauses}}

    def _knn_hits(
        self, vector: list[float] | list[int], size: int, knn_filter: dict[str, Any]
    ) -> list[Mapping[str, Any]]:
        # The filter sits inside the knn clause: efficient filtering finds k neighbours among
        # the user's rows, where a post-filter could return fewer than k, or none.
        body = {
            "size": size,
            "_source": ["memory_id", "row"],
            "query": {"knn": {VECTOR_FIELD: {"vector": vector, "k": size, "filter": knn_filter}}},
        }
        response = self._client.search(index=self._index, body=body)
        return _hits(response)

    def _document_ids(self, user_id: str, memory_ids: Sequence[str]) -> list[str]:
        """Ids of the searchable documents of these memories — never another user's."""
        if not memory_ids:
            return []
        body = {
            "size": MAX_WINDOW,
            "_source": False,
            "query": {
                "bool": {
                    "filter": [
                        {"term": {"user_id": user_id}},
                        {"terms": {"memory_id": list(memory_ids)}},
                    ]
                }
            },
        }
        hits = _hits(self._client.search(index=self._index, body=body))
        if len(hits) >= MAX_WINDOW:
            raise OpenSearchIndexError("more documents matched than one lookup returns")
        return [str(hit["_id"]) for hit in hits]

    def _documents(self, memory: Memory) -> Iterator[dict[str, Any]]:
        """One document per vector row of an active memory; none for any other."""
        if memory.status is not Status.ACTIVE or memory.embedding is None:
            return
        rows = unpack_rows(memory.embedding)
        if rows.shape[1] != self._dimensions:
            raise InvalidField(
                "embedding", f"has {rows.shape[1]} dimensions; the index holds {self._dimensions}"
            )
        sent = self._as_sent(rows)
        for row_number, row in enumerate(sent):
            document: dict[str, Any] = {
                "user_id": memory.user_id,
                "memory_id": memory.memory_id,
                "persona": memory.persona,
                "status": memory.status.value,
                "row": row_number,
                VECTOR_FIELD: row,
            }
            if memory.valid_until is not None:
                document["valid_until"] = epoch_millis(memory.valid_until)
            yield document

    @staticmethod
    def _delete_action(doc_id: str) -> dict[str, Any]:
        return {"delete": {"_id": doc_id}}

    def _bulk(self, actions: list[dict[str, Any]]) -> None:
        response = cast(Mapping[str, Any], self._client.bulk(index=self._index, body=actions))
        if not response.get("errors"):
            return
        failures = []
        for item in response.get("items", []):
            (operation, result), *_ = cast(Mapping[str, Any], item).items()
            status = int(result.get("status", 500))
            # Deleting what is already gone is what remove() promises to tolerate.
            if operation == "delete" and status == 404:
                continue
            if status >= 300:
                error = result.get("error") or {}
                failures.append(f"{operation} {status} {error.get('type', '')}".strip())
        if failures:
            raise OpenSearchIndexError(
                f"{len(failures)} of {len(actions)} bulk lines failed: {failures[0]}"
            )

    def _as_sent(self, rows: Vectors) -> list[list[float]] | list[list[int]]:
        """Rows as the field takes them: floats (the index encodes fp16 itself) or bytes."""
        if self.encoding is VectorEncoding.BYTE:
            return [[int(value) for value in row] for row in to_bytes(rows).tolist()]
        return [_json_floats(row) for row in rows]

    def _query_vector(self, query: Vectors) -> list[float] | list[int]:
        vector = np.asarray(query, dtype=np.float32)
        if vector.ndim == 2 and vector.shape[0] == 1:
            vector = vector[0]
        if vector.ndim != 1 or vector.shape[0] != self._dimensions:
            raise InvalidField("query", f"must be one vector of {self._dimensions} dimensions")
        # cosinesimil rejects the zero vector (its norm is 0); so do we, before any request.
        if not np.all(np.isfinite(vector)) or not np.any(vector):
            raise InvalidField("query", "must be finite and not all zeros")
        if self.encoding is VectorEncoding.BYTE:
            # A byte field is queried with bytes, on the documents' scale.
            return [int(value) for value in to_bytes(vector)]
        return _json_floats(vector)


def _json_floats(vector: npt.NDArray[np.float32]) -> list[float]:
    return [float(value) for value in vector.tolist()]


def _hits(response: Any) -> list[Mapping[str, Any]]:
    hits = cast(Mapping[str, Any], response)["hits"]["hits"]
    return cast(list[Mapping[str, Any]], hits)


def _best_per_memory(
    hits: Sequence[Mapping[str, Any]], cosine: Callable[[float], float] = cosine_from_score
) -> dict[str, VectorHit]:
    """Each memory's best cosine among its returned rows, and which kind of row scored it.

    Row 0 embeds what the memory says; rows 1+ what it is useful for. A row that did not
    make the page is simply unknown (None), never guessed.
    """
    said: dict[str, float] = {}
    uses: dict[str, dict[int, float]] = {}
    for hit in hits:
        source = hit["_source"]
        memory_id = str(source["memory_id"])
        score = cosine(float(hit["_score"]))
        row = int(source.get("row", 0))
        if row == 0:
            said[memory_id] = max(score, said.get(memory_id, -2.0))
        else:
            rows = uses.setdefault(memory_id, {})
            rows[row] = max(score, rows.get(row, -2.0))
    best: dict[str, VectorHit] = {}
    for memory_id in {*said, *uses}:
        found = tuple(sorted(uses.get(memory_id, {}).values(), reverse=True))
        scores = [s for s in (said.get(memory_id), *found[:1]) if s is not None]
        best[memory_id] = VectorHit(
            memory_id,
            max(scores),
            said=said.get(memory_id),
            useful=found[0] if found else None,
            uses=found,
        )
    return best


# ---- the real client --------------------------------------------------------------------


def connect_serverless(
    endpoint: str,
    region: str,
    *,
    session: boto3.Session | None = None,
    timeout: float = 5.0,
    max_retries: int = 2,
    pool_maxsize: int = 10,
) -> OpenSearch:
    """An opensearch-py client for a Serverless collection, SigV4-signed for service "aoss".

    `endpoint` is the collection endpoint (`https://<id>.<region>.aoss.amazonaws.com`).
    opensearch-py's guide pairs `Urllib3HttpConnection` with `Urllib3AWSV4SignerAuth`
    (`AWSV4SignerAuth` is its deprecated requests-based alias); the signer reads the
    session's credentials on every request, so a refreshed Lambda role is picked up.
    The read path waits on search, so timeouts are short and only 502/503/504 and broken
    connections are retried (a timed-out bulk is not blindly re-sent).
    """
    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    if parsed.scheme != "https" or not parsed.hostname:
        raise InvalidField("endpoint", "must be an https collection endpoint")
    credentials = (session or boto3.Session()).get_credentials()
    if credentials is None:
        raise InvalidField("credentials", "no AWS credentials found to sign requests")
    return OpenSearch(
        hosts=[{"host": parsed.hostname, "port": parsed.port or 443}],
        http_auth=Urllib3AWSV4SignerAuth(credentials, region, "aoss"),
        connection_class=Urllib3HttpConnection,
        use_ssl=True,
        verify_certs=True,
        # Signed bodies must go as signed: Serverless checks x-amz-content-sha256.
        http_compress=False,
        timeout=timeout,
        max_retries=max_retries,
        retry_on_timeout=False,
        pool_maxsize=pool_maxsize,
    )
