"""An in-memory OpenSearch Serverless vector collection behind opensearch-py's real client.

`FakeCollection.client()` returns a real `OpenSearch` client whose only connection is
`FakeConnection`: every request goes through opensearch-py's transport and serializer,
then this module stores documents and executes the searches, answering with bodies shaped
like the OpenSearch documentation's examples. Every request is recorded (method, path,
params, parsed body) so tests can assert exactly what was sent.

It is honest in three ways:
- it executes only what the OpenSearch adapter sends — HEAD/PUT index, `_bulk` index
  (no `_id`) and delete (by `_id`), `_search` with a `knn` query or a filter-only `bool`
  query, and the `bool`/`term`/`terms`/`range`/`exists` filters — and raises
  `UnsupportedRequest` for anything else (`_delete_by_query`, `_refresh`, other queries);
- it behaves like a VECTORSEARCH collection where that differs from OpenSearch: an index
  action with a custom `_id` fails ("Document ID is not supported in create/index
  operation request"), and nothing is auto-created;
- it models the refresh interval: searches see the documents as they were at the last
  `refresh()` (new documents are invisible, deleted ones still visible), while deletes by
  id act at once, as in Lucene. Pass `refresh_on_write=True` to refresh after each bulk.

Vector fields are faiss HNSW, as a vector collection runs them, in one of the three
encodings the adapter creates (chatmemory/domain/vector_encoding.py): float32 and SQfp16
(`encoder: sq`) under `cosinesimil` — the stored vector normalised, SQfp16 keeping it as
half floats, scored by inner product with the normalised query, `_score = (1 + cos) / 2` —
and `data_type: byte` under `innerproduct`, integers in [-128, 127] only, `_score` from
the inner product as the k-NN spaces page gives it. faiss refuses `cosinesimil` on bytes
with a 400 (opensearch-project/k-NN#3002), and so does the fake.
"""

from __future__ import annotations

import copy
import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from opensearchpy import Connection, OpenSearch

MAX_WINDOW = 10_000
_KNOWN_TYPES = {"keyword", "integer", "date", "knn_vector"}


class UnsupportedRequest(AssertionError):
    """The fake does not implement this request: the adapter sent something new or wrong."""


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    params: Mapping[str, Any]
    body: Any  # dict for JSON bodies, list of dicts for _bulk's NDJSON, None without a body
    status: int | None = None  # None: the fake refused it (UnsupportedRequest)
    response: Any = None


@dataclass
class _Index:
    properties: dict[str, dict[str, Any]]
    vector_field: str
    dimension: int
    strict: bool
    data_type: str = "float"  # or "byte"
    fp16: bool = False  # faiss SQfp16: the stored vectors are half floats
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    searchable: dict[str, dict[str, Any]] = field(default_factory=dict)


Response = tuple[int, Any]


class FakeCollection:
    """The collection's state, the request log and the knobs tests turn."""

    def __init__(self, *, refresh_on_write: bool = False) -> None:
        self.refresh_on_write = refresh_on_write
        self.requests: list[RecordedRequest] = []
        self._indexes: dict[str, _Index] = {}
        self._scripted: deque[tuple[str, str, Response]] = deque()
        self._next_id = 0

    # ---- what tests use -----------------------------------------------------------------

    def client(self) -> OpenSearch:
        """A real opensearch-py client talking to this collection (no retries, no network)."""
        return OpenSearch(
            hosts=[{"host": "fake-collection.eu-west-1.aoss.amazonaws.com", "port": 443}],
            connection_class=FakeConnection,
            collection=self,
            max_retries=0,
        )

    def refresh(self) -> None:
        """What the collection's refresh interval does: make every write so far searchable."""
        for index in self._indexes.values():
            index.searchable = copy.deepcopy(index.live)

    def documents(self, index: str) -> list[dict[str, Any]]:
        """Every stored document of an index (searchable or not), for assertions."""
        return [copy.deepcopy(source) for source in self._indexes[index].live.values()]

    def respond_next(self, method: str, path: str, status: int, body: Any) -> None:
        """Answer the next `method path` request with this recorded response instead."""
        self._scripted.append((method, path, (status, body)))

    def requests_to(self, suffix: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path.endswith(suffix)]

    # ---- the HTTP surface -----------------------------------------------------------------

    def handle(
        self, method: str, path: str, params: Mapping[str, Any], raw: bytes | None
    ) -> Response:
        body = _parse_body(path, raw)
        try:
            status, response = self._answer(method, path, params, body)
        except UnsupportedRequest:
            self.requests.append(RecordedRequest(method, path, dict(params), body))
            raise
        self.requests.append(
            RecordedRequest(method, path, dict(params), body, status, copy.deepcopy(response))
        )
        return status, response

    def _answer(self, method: str, path: str, params: Mapping[str, Any], body: Any) -> Response:
        for position, (s_method, s_path, response) in enumerate(self._scripted):
            if (s_method, s_path) == (method, path):
                del self._scripted[position]
                return response
        if params:
            raise UnsupportedRequest(f"query parameters {sorted(params)} on {method} {path}")
        parts = [part for part in path.split("/") if part]
        route: Callable[..., Response] | None = None
        if len(parts) == 1 and method == "HEAD":
            route = self._index_exists
        elif len(parts) == 1 and method == "PUT":
            route = self._create_index
        elif len(parts) == 2 and (method, parts[1]) == ("POST", "_bulk"):
            route = self._bulk
        elif len(parts) == 2 and method in ("POST", "GET") and parts[1] == "_search":
            route = self._search
        if route is None:
            raise UnsupportedRequest(f"{method} {path} is not something the adapter sends")
        if route in (self._bulk, self._search) and not body:
            raise UnsupportedRequest(f"{method} {path} without a body")
        return route(parts[0], body)

    def _index_exists(self, name: str, body: Any) -> Response:
        return (200, None) if name in self._indexes else (404, None)

    def _create_index(self, name: str, body: Any) -> Response:
        if name in self._indexes:
            return _error(
                400, "resource_already_exists_exception", f"index [{name}] already exists", name
            )
        try:
            self._indexes[name] = _parse_index(body)
        except _Refused as refused:
            return _error(400, "mapper_parsing_exception", refused.reason, name)
        return 200, {"acknowledged": True, "shards_acknowledged": True, "index": name}

    def _index(self, name: str) -> _Index:
        if name not in self._indexes:
            # A real collection would auto-create it with a dynamic (non-vector) mapping.
            raise UnsupportedRequest(f"index [{name}] does not exist; create it first")
        return self._indexes[name]

    def _bulk(self, name: str, lines: list[dict[str, Any]]) -> Response:
        index = self._index(name)
        items: list[dict[str, Any]] = []
        position = 0
        while position < len(lines):
            ((action, meta),) = _single(lines[position], "bulk action").items()
            if meta.get("_index", name) != name:
                raise UnsupportedRequest("bulk lines must target the index in the path")
            if action == "index":
                if position + 1 >= len(lines):
                    raise UnsupportedRequest("an index action without its document")
                items.append({"index": self._bulk_index(name, index, meta, lines[position + 1])})
                position += 2
            elif action == "delete":
                if set(meta) - {"_index", "_id"} or "_id" not in meta:
                    raise UnsupportedRequest(f"delete metadata {meta}")
                items.append({"delete": self._bulk_delete(name, index, str(meta["_id"]))})
                position += 1
            else:
                raise UnsupportedRequest(f"bulk action {action!r}")
        if self.refresh_on_write:
            self.refresh()
        errors = any(item_result.get("error") for item in items for item_result in item.values())
        return 200, {"took": 1, "errors": errors, "items": items}

    def _bulk_index(
        self, name: str, index: _Index, meta: Mapping[str, Any], source: dict[str, Any]
    ) -> dict[str, Any]:
        if set(meta) - {"_index", "_id"}:
            raise UnsupportedRequest(f"index metadata {meta}")
        if "_id" in meta:
            # What a VECTORSEARCH collection answers (opensearch-py issue #792).
            return _item_error(
                name,
                str(meta["_id"]),
                400,
                "illegal_argument_exception",
                "Document ID is not supported in create/index operation request",
            )
        problem = _mapping_problem(index, source)
        if problem is not None:
            return _item_error(name, None, 400, *problem)
        self._next_id += 1
        doc_id = f"1%3A0%3A{self._next_id:012d}"
        index.live[doc_id] = copy.deepcopy(source)
        return {
            "_index": name,
            "_id": doc_id,
            "_version": 1,
            "result": "created",
            "_shards": {"total": 2, "successful": 2, "failed": 0},
            "_seq_no": self._next_id - 1,
            "_primary_term": 1,
            "status": 201,
        }

    def _bulk_delete(self, name: str, index: _Index, doc_id: str) -> dict[str, Any]:
        found = index.live.pop(doc_id, None) is not None
        return {
            "_index": name,
            "_id": doc_id,
            "_version": 2 if found else 1,
            "result": "deleted" if found else "not_found",
            "_shards": {"total": 2, "successful": 2, "failed": 0},
            "_seq_no": self._next_id,
            "_primary_term": 1,
            "status": 200 if found else 404,
        }

    def _search(self, name: str, body: Mapping[str, Any]) -> Response:
        if name not in self._indexes:
            return _error(404, "index_not_found_exception", f"no such index [{name}]", name)
        index = self._indexes[name]
        unknown = set(body) - {"size", "_source", "query"}
        if unknown:
            raise UnsupportedRequest(f"search options {sorted(unknown)}")
        size = body.get("size", 10)
        if not isinstance(size, int) or not 0 <= size <= MAX_WINDOW:
            return _error(400, "illegal_argument_exception", "Result window is too large", name)
        ((kind, clause),) = _single(body.get("query"), "query").items()
        if kind == "knn":
            scored = self._knn(index, clause)
            if isinstance(scored, tuple):
                return scored
            total = len(scored)
        elif kind == "bool":
            matching = [
                (doc_id, 0.0)
                for doc_id, source in index.searchable.items()
                if _matches(index, source, {"bool": clause})
            ]
            scored, total = matching, len(matching)
        else:
            raise UnsupportedRequest(f"top-level query {kind!r}")
        page = scored[:size]
        return 200, {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {
                    "value": min(total, MAX_WINDOW),
                    "relation": "eq" if total <= MAX_WINDOW else "gte",
                },
                "max_score": max((score for _, score in page), default=None),
                "hits": [
                    _hit(name, doc_id, score, index.searchable[doc_id], body.get("_source", True))
                    for doc_id, score in page
                ],
            },
        }

    def _knn(self, index: _Index, clause: Any) -> list[tuple[str, float]] | Response:
        ((field_name, spec),) = _single(clause, "knn clause").items()
        if field_name != index.vector_field:
            raise UnsupportedRequest(f"knn on {field_name!r}, not the knn_vector field")
        if set(spec) - {"vector", "k", "filter"}:
            raise UnsupportedRequest(f"knn options {sorted(set(spec) - {'vector', 'k', 'filter'})}")
        k = spec.get("k")
        if not isinstance(k, int) or not 1 <= k <= MAX_WINDOW:
            return _error(400, "illegal_argument_exception", "[knn] requires 0 < k <= 10000", "")
        raw = spec.get("vector")
        query = np.asarray(raw, dtype=np.float64)
        if query.shape != (index.dimension,):
            given = query.shape[0] if query.ndim == 1 else 0
            reason = (
                f"Query vector has invalid dimension: {given}. "
                f"Dimension should be: {index.dimension}"
            )
            return _error(400, "illegal_argument_exception", reason, "")
        if index.data_type == "byte" and not _bytes(raw):
            return _error(400, "illegal_argument_exception", _BYTE_RANGE, "")
        query_norm = float(np.linalg.norm(query))
        if index.data_type != "byte" and query_norm == 0.0:
            return _error(
                400,
                "illegal_argument_exception",
                "zero vector is not supported with cosinesimil",
                "",
            )
        knn_filter = spec.get("filter")
        scored = []
        for doc_id, source in index.searchable.items():
            if knn_filter is not None and not _matches(index, source, knn_filter):
                continue
            vector = np.asarray(source[index.vector_field], dtype=np.float64)
            scored.append((doc_id, _score(index, vector, query, query_norm)))
        scored.sort(key=lambda pair: pair[1], reverse=True)
        return scored[:k]


class FakeConnection(Connection):
    """An opensearch-py Connection that hands each request to a FakeCollection."""

    def __init__(self, *, collection: FakeCollection, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.collection = collection

    def perform_request(  # noqa: PLR0917 - the signature opensearch-py calls
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        timeout: float | None = None,
        ignore: Any = (),
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, str], str]:
        status, payload = self.collection.handle(method, url, params or {}, body)
        raw = "" if payload is None else json.dumps(payload)
        if not 200 <= status < 300 and status not in ignore:
            self._raise_error(status, raw, "application/json")
        return status, {"content-type": "application/json"}, raw


def _score(index: _Index, vector: Any, query: Any, query_norm: float) -> float:
    """The `_score` faiss gives this stored vector for this query, as a float32."""
    if index.data_type == "byte":
        # innerproduct: d = -(x . y); score = -d + 1 if d < 0 else 1 / (1 + d).
        distance = -float(vector @ query)
        return float(np.float32(-distance + 1.0 if distance < 0 else 1.0 / (1.0 + distance)))
    unit = vector / float(np.linalg.norm(vector))  # faiss normalises at ingestion
    if index.fp16:
        unit = unit.astype(np.float16).astype(np.float64)
    cosine = float(unit @ (query / query_norm))
    return float(np.float32((1.0 + cosine) / 2.0))


# The k-NN plugin's wording for a value a byte field cannot hold.
_BYTE_RANGE = (
    "[data_type] field was set as [byte] in index mapping. But, KNN vector values are not "
    "within in the byte range [-128, 127]"
)


def _bytes(values: Any) -> bool:
    return isinstance(values, list) and all(
        isinstance(x, int) and not isinstance(x, bool) and -128 <= x <= 127 for x in values
    )


class _Refused(Exception):
    """A mapping the k-NN plugin answers with mapper_parsing_exception."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---- request parsing and validation -------------------------------------------------------


def _parse_body(path: str, raw: bytes | None) -> Any:
    if raw is None:
        return None
    text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    if path.endswith("/_bulk"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def _single(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or len(value) != 1:
        raise UnsupportedRequest(f"{what} must be an object with exactly one key: {value!r}")
    return value


def _parse_index(body: Any) -> _Index:
    if not isinstance(body, dict) or set(body) - {"settings", "mappings"}:
        raise UnsupportedRequest(f"index body {body!r}")
    settings = body.get("settings", {})
    if settings not in ({"index.knn": True}, {"index": {"knn": True}}):
        raise UnsupportedRequest(f"index settings {settings!r}: only index.knn is modelled")
    mappings = body.get("mappings", {})
    if set(mappings) - {"dynamic", "properties"}:
        raise UnsupportedRequest(f"mapping options {sorted(mappings)}")
    properties: dict[str, dict[str, Any]] = mappings.get("properties", {})
    vector_fields = []
    for name, spec in properties.items():
        kind = spec.get("type")
        if kind not in _KNOWN_TYPES:
            raise UnsupportedRequest(f"field type {kind!r} of {name!r}")
        if kind == "date" and spec.get("format") != "epoch_millis":
            raise UnsupportedRequest("only epoch_millis dates are modelled")
        if kind == "knn_vector":
            vector_fields.append((name, *_vector_field(spec)))
    if len(vector_fields) != 1:
        raise UnsupportedRequest("exactly one knn_vector field is modelled")
    (vector_field, dimension, data_type, fp16), *_ = vector_fields
    return _Index(
        properties=properties,
        vector_field=vector_field,
        dimension=dimension,
        strict=mappings.get("dynamic") == "strict",
        data_type=data_type,
        fp16=fp16,
    )


_FP16 = {"encoder": {"name": "sq", "parameters": {"type": "fp16"}}}


def _vector_field(spec: Mapping[str, Any]) -> tuple[int, str, bool]:
    """(dimension, data type, SQfp16?) of a knn_vector mapping the fake models."""
    if set(spec) - {"type", "dimension", "data_type", "method"}:
        raise UnsupportedRequest(f"knn_vector options {sorted(spec)}")
    dimension = spec.get("dimension")
    if not isinstance(dimension, int) or not 1 <= dimension <= 16_000:
        raise _Refused("Dimension value must be between 1 and 16000")
    data_type = spec.get("data_type", "float")
    method = spec.get("method", {})
    space = method.get("space_type")
    # Serverless runs faiss HNSW only (no lucene, no IVF); efficient filtering needs it.
    if (
        method.get("name") != "hnsw"
        or method.get("engine") != "faiss"
        or set(method) - {"name", "engine", "space_type", "parameters"}
    ):
        raise UnsupportedRequest(f"knn method {method!r}")
    parameters = method.get("parameters")
    if data_type == "byte":
        if space == "cosinesimil":
            raise _Refused(
                "Failed to parse mapping [_doc]: Faiss engine does not support cosine "
                "similarity with byte vectors."
            )
        if space != "innerproduct" or parameters is not None:
            raise UnsupportedRequest(f"byte vectors with {method!r}")
        return dimension, "byte", False
    if data_type != "float" or space != "cosinesimil":
        raise UnsupportedRequest(f"{data_type} vectors in {space!r}")
    if parameters not in (None, _FP16):
        raise UnsupportedRequest(f"method parameters {parameters!r}")
    return dimension, "float", parameters == _FP16


def _mapping_problem(index: _Index, source: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why a document would be rejected by the mapping (type, reason), or None."""
    for name, value in source.items():
        spec = index.properties.get(name)
        if spec is None:
            if index.strict:
                return (
                    "strict_dynamic_mapping_exception",
                    f"mapping set to strict, dynamic introduction of [{name}] within [_doc] "
                    "is not allowed",
                )
            raise UnsupportedRequest(f"dynamic mapping of {name!r} is not modelled")
        kind = spec["type"]
        if kind == "knn_vector":
            if isinstance(value, list) and len(value) != index.dimension:
                return (
                    "mapper_parsing_exception",
                    f"Vector dimension mismatch. Expected: {index.dimension}, Given: {len(value)}",
                )
            if index.data_type == "byte":
                if not _bytes(value):
                    return "mapper_parsing_exception", _BYTE_RANGE
                ok = True
            else:
                ok = isinstance(value, list) and all(
                    isinstance(x, int | float) and not isinstance(x, bool) for x in value
                )
        elif kind == "keyword":
            ok = isinstance(value, str)
        else:  # integer, date as epoch millis
            ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            return "mapper_parsing_exception", f"failed to parse field [{name}] of type [{kind}]"
    return None


# ---- query execution ---------------------------------------------------------------------


def _matches(index: _Index, source: Mapping[str, Any], clause: Any) -> bool:
    ((kind, spec),) = _single(clause, "filter clause").items()
    if kind == "bool":
        return _bool(index, source, spec)
    if kind == "term":
        ((name, value),) = _single(spec, "term").items()
        if isinstance(value, dict):
            value = _single(value, "term value").get("value")
        return name in index.properties and source.get(name) == value
    if kind == "terms":
        ((name, values),) = _single(spec, "terms").items()
        if not isinstance(values, list):
            raise UnsupportedRequest("terms takes a list")
        return name in index.properties and source.get(name) in values
    if kind == "range":
        ((name, bounds),) = _single(spec, "range").items()
        if set(bounds) - {"gt", "gte", "lt", "lte"}:
            raise UnsupportedRequest(f"range options {sorted(bounds)}")
        if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds.values()):
            raise UnsupportedRequest("only whole-number (epoch millis) range bounds are modelled")
        value = source.get(name)
        if value is None:
            return False
        checks = {
            "gt": lambda bound: value > bound,
            "gte": lambda bound: value >= bound,
            "lt": lambda bound: value < bound,
            "lte": lambda bound: value <= bound,
        }
        return all(checks[op](bound) for op, bound in bounds.items())
    if kind == "exists":
        if set(spec) != {"field"}:
            raise UnsupportedRequest(f"exists options {sorted(spec)}")
        return source.get(spec["field"]) is not None
    raise UnsupportedRequest(f"filter {kind!r}")


def _bool(index: _Index, source: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    allowed = {"filter", "must", "should", "must_not", "minimum_should_match"}
    if set(spec) - allowed:
        raise UnsupportedRequest(f"bool options {sorted(set(spec) - allowed)}")

    def clauses(key: str) -> list[Any]:
        value = spec.get(key, [])
        return value if isinstance(value, list) else [value]

    if not all(_matches(index, source, c) for c in clauses("filter") + clauses("must")):
        return False
    if any(_matches(index, source, c) for c in clauses("must_not")):
        return False
    should = clauses("should")
    if not should:
        return True
    default = 0 if spec.get("filter") or spec.get("must") else 1
    needed = int(spec.get("minimum_should_match", default))
    return sum(_matches(index, source, c) for c in should) >= needed


# ---- response shapes (as in the OpenSearch documentation's examples) ----------------------


def _hit(
    name: str, doc_id: str, score: float, source: Mapping[str, Any], wanted: Any
) -> dict[str, Any]:
    hit: dict[str, Any] = {"_index": name, "_id": doc_id, "_score": score}
    if wanted is True:
        hit["_source"] = copy.deepcopy(dict(source))
    elif isinstance(wanted, list):
        hit["_source"] = {key: copy.deepcopy(source[key]) for key in wanted if key in source}
    elif wanted is not False:
        raise UnsupportedRequest(f"_source {wanted!r}")
    return hit


def _error(status: int, error_type: str, reason: str, index: str) -> Response:
    cause = {"type": error_type, "reason": reason, "index": index}
    return status, {"error": {"root_cause": [cause], **cause}, "status": status}


def _item_error(
    name: str, doc_id: str | None, status: int, error_type: str, reason: str
) -> dict[str, Any]:
    item: dict[str, Any] = {"_index": name, "status": status}
    if doc_id is not None:
        item["_id"] = doc_id
    item["error"] = {"type": error_type, "reason": reason}
    return item
