"""Text to vectors: the embedding model behind recall."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(ABC):
    """Turns text into unit vectors. One model per process, loaded once."""

    #: stable name, used to pick per-embedder thresholds ("minilm-l6-v2", "titan-v2-1024", …)
    name: str
    dimensions: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Vectors:
        """An (n, dimensions) float32 array of L2-normalised rows, one per text."""
