"""Compact vectors: int8 with one float32 scale, so a row with its vector stays under 2 KB."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from chatmemory.domain.errors import InvalidField

_HEADER = struct.Struct("<Hf")  # dims, scale


def pack(vector: Sequence[float] | npt.NDArray[np.floating]) -> bytes:
    """int8 codes plus a scale: 384 dims → 390 bytes, cosine error well under 1 %."""
    values = np.asarray(vector, dtype=np.float32)
    if values.ndim != 1 or values.size == 0 or values.size > 65535:
        raise InvalidField("embedding", "must be a non-empty 1-d vector")
    if not np.all(np.isfinite(values)):
        raise InvalidField("embedding", "must be finite")
    peak = float(np.max(np.abs(values)))
    # A vector this close to zero has no direction worth keeping (and its scale would
    # underflow); it packs as zeros.
    scale = peak / 127.0 if peak > 1e-30 else 1.0
    codes = np.clip(np.rint(values / scale), -127, 127).astype(np.int8)
    header: bytes = _HEADER.pack(values.size, scale)
    body: bytes = codes.tobytes()
    return header + body


def unpack(blob: bytes) -> npt.NDArray[np.float32]:
    """The float32 vector `pack` stored (up to quantisation)."""
    if len(blob) < _HEADER.size:
        raise InvalidField("embedding", "is not a packed vector")
    dims, scale = _HEADER.unpack_from(blob)
    codes = np.frombuffer(blob, dtype=np.int8, offset=_HEADER.size)
    if codes.size != dims:
        raise InvalidField("embedding", "is truncated")
    return codes.astype(np.float32) * np.float32(scale)


def dimensions(blob: bytes) -> int:
    dims: int = _HEADER.unpack_from(blob)[0]
    return dims


def packed_size(dimensions: int) -> int:
    """Bytes one packed vector of this size takes."""
    return _HEADER.size + dimensions


def pack_rows(rows: npt.NDArray[np.floating] | Sequence[Sequence[float]]) -> bytes:
    """Several vectors in one blob (e.g. what a memory says, then what it is useful for)."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise InvalidField("embedding", "must be a non-empty list of vectors")
    return b"".join(pack(row) for row in matrix)


def unpack_rows(blob: bytes) -> npt.NDArray[np.float32]:
    """Every vector `pack_rows` (or `pack`) stored, as the rows of one matrix."""
    rows = []
    offset = 0
    while offset < len(blob):
        dims, scale = _HEADER.unpack_from(blob, offset)
        start = offset + _HEADER.size
        codes = np.frombuffer(blob, dtype=np.int8, count=dims, offset=start)
        rows.append(codes.astype(np.float32) * np.float32(scale))
        offset = start + dims
    if not rows:
        raise InvalidField("embedding", "is not a packed vector")
    return np.stack(rows)


def said_vector(blob: bytes) -> npt.NDArray[np.float32]:
    """What a memory says, from its packed vectors (the first; the rest are its uses)."""
    first: npt.NDArray[np.float32] = unpack_rows(blob)[0]
    return first


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity; 0 when either vector has no direction."""
    left, right = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norm = float(np.linalg.norm(left) * np.linalg.norm(right))
    return float(np.dot(left, right) / norm) if norm else 0.0
