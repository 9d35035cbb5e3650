"""A deterministic hashing embedder: fast, dependency-free, for unit tests only.

It knows spelling, not meaning; the local default is the MiniLM model whenever it is
installed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from chatmemory.ports.embedder import Embedder, Vectors

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(Embedder):
    """Signed feature hashing of words and character 3-grams, L2-normalised."""

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.name = f"hashing-{dimensions}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        matrix = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dimensions
                sign = 1.0 if digest[4] & 1 else -1.0
                matrix[row, bucket] += sign * weight
            norm = float(np.linalg.norm(matrix[row]))
            if norm > 0:
                matrix[row] /= norm
        return matrix


def _features(text: str) -> list[tuple[str, float]]:
    words = [word.casefold() for word in _WORD.findall(text)]
    features = [(f"w:{word}", 1.0) for word in words]
    for word in words:
        padded = f"<{word}>"
        features.extend((f"c:{padded[i : i + 3]}", 0.5) for i in range(len(padded) - 2))
    return features
