"""How the vector index stores a vector, and what that does to the cosines it answers with.

Three encodings, all on faiss HNSW (what a Serverless vector collection runs):

- `float32`: the vector as sent, 4 bytes a dimension.
- `fp16`: faiss's SQfp16 scalar quantizer (`encoder: sq`, `type: fp16`) keeps each
  dimension as a half-precision float, 2 bytes. With `cosinesimil`, faiss normalises the
  float32 vector at ingestion and again the query at search, then scores by inner product
  (opensearch-project/k-NN#2376); SQfp16 decodes the stored halves back to float32 for that
  product (https://docs.opensearch.org/latest/vector-search/optimizing-storage/faiss-16-bit-quantization/).
  So the index holds `fp16(normalise(v))` and the query stays float32.
- `byte`: `data_type: byte`, 1 byte a dimension, quantised here before it is sent (documents
  *and* queries must be integers in [-128, 127],
  https://docs.opensearch.org/latest/mappings/supported-field-types/knn-memory-optimized/).
  faiss refuses `cosinesimil` with byte vectors (it cannot normalise them; k-NN#3002), so
  the field uses `innerproduct`: one fixed scale for every vector keeps the ranking of unit
  vectors, and the inner product of the two byte vectors divided by the scale squared is
  the cosine the index answers with.

`as_stored` and `query_as_sent` are exactly what the index scores with, so the bench can
measure recall under an encoding without a collection.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class VectorEncoding(StrEnum):
    FLOAT32 = "float32"
    FP16 = "fp16"
    BYTE = "byte"

    @property
    def bytes_per_dimension(self) -> int:
        return {"float32": 4, "fp16": 2, "byte": 1}[self.value]


# A unit vector's component of ±BYTE_RANGE is ±127; larger ones are clipped. Unit embeddings
# spread their length over hundreds of dimensions (MiniLM's largest component on the
# labelled set is 0.23), so one at 0.5 would carry a quarter of the vector's energy.
BYTE_RANGE = 0.5
BYTE_SCALE = 127.0 / BYTE_RANGE


def normalised(vectors: Vectors) -> Vectors:
    """Each vector at unit length (a zero vector stays zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    result: Vectors = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return result


def to_bytes(vectors: Vectors) -> npt.NDArray[np.int8]:
    """The vectors, at unit length, as the signed bytes a `data_type: byte` field takes:
    one scale for all, so inner products keep the cosines' order."""
    scaled = np.rint(normalised(vectors).astype(np.float64) * BYTE_SCALE)
    return np.clip(scaled, -128, 127).astype(np.int8)


def as_stored(vectors: Vectors, encoding: VectorEncoding) -> Vectors:
    """The vectors as the index scores them, as float32 (bytes divided by the scale)."""
    if encoding is VectorEncoding.BYTE:
        stored: Vectors = to_bytes(vectors).astype(np.float32) / np.float32(BYTE_SCALE)
        return stored
    unit = normalised(vectors)
    if encoding is VectorEncoding.FP16:
        halves: Vectors = unit.astype(np.float16).astype(np.float32)
        return halves
    return unit


def query_as_sent(query: Vectors, encoding: VectorEncoding) -> Vectors:
    """The query as the index scores it: bytes for a byte field, else normalised float32."""
    if encoding is VectorEncoding.BYTE:
        return as_stored(query, encoding)
    return normalised(query)


def cosine_from_inner_product(inner_product: float) -> float:
    """The cosine behind the inner product of two byte vectors, clamped against rounding."""
    return max(-1.0, min(1.0, inner_product / BYTE_SCALE**2))
