"""mem0 (the `mem0ai` package, 2.x) as a fully offline peer baseline for the retrieval benchmark.

mem0 runs with the same local MiniLM model we use, its own local vector store (faiss or
embedded qdrant), raw adds (`infer=False`, so no LLM is ever called) and its own `search`.
Nothing here reaches the network: telemetry is off, the Hugging Face stack is forced offline,
and the LLM mem0 insists on constructing points at a closed loopback port with a dummy key.

mem0 is an optional dependency (the `bench` extra): importing this module never imports it;
constructing `Mem0Baseline` does, and raises a clear error if it is missing.

Process-wide caveat: mem0 reads `MEM0_DIR` and `MEM0_TELEMETRY` once, when it is first
imported, so the first `Mem0Baseline` in a process fixes them; later instances reuse that
MEM0_DIR (only mem0's `config.json` lives there; each instance's data stays in its workdir).
The offline variables set here (see `_OFFLINE_ENV`) stay set for the rest of the process.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

#: all-MiniLM-L6-v2 embeds to 384 dimensions; mem0 defaults to OpenAI's 1536.
EMBEDDING_DIMS = 384
VECTOR_STORES = ("faiss", "qdrant")

#: The (never used) LLM points here so a stray call fails fast on loopback instead of
#: leaving the machine; port 9 is "discard" and nothing listens on it.
_DEAD_LLM_URL = "http://127.0.0.1:9/v1"

#: Set before mem0 (and huggingface_hub, which reads its offline flag at import) is imported.
_OFFLINE_ENV = {
    "MEM0_TELEMETRY": "False",  # read at import by mem0.memory.telemetry (posthog client)
    "HF_HUB_OFFLINE": "1",  # read at import by huggingface_hub.constants
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


class Mem0Unavailable(RuntimeError):
    """mem0ai (or one of its offline pieces) is not installed in this environment."""


def _import_memory_class(mem0_dir: Path) -> Any:
    """Import mem0's `Memory` after the environment it reads at import time is in place.

    mem0 reads MEM0_DIR at import (and writes `config.json` there straight away, even with
    telemetry off), so without this it would create and write `~/.mem0`.
    """
    for key, value in _OFFLINE_ENV.items():
        os.environ[key] = value
    already_imported = "mem0" in sys.modules
    if not already_imported:
        os.environ["MEM0_DIR"] = str(mem0_dir)
    try:
        main = importlib.import_module("mem0.memory.main")
        telemetry = importlib.import_module("mem0.memory.telemetry")
    except ImportError as exc:
        raise Mem0Unavailable(
            "mem0 baseline needs the bench extra: pip install -e '.[bench]' "
            f"(mem0ai, faiss-cpu, sentence-transformers, torch); import failed: {exc}"
        ) from exc
    if telemetry.MEM0_TELEMETRY:
        raise RuntimeError(
            "mem0 was imported before Mem0Baseline with telemetry on; it would phone home. "
            "Set MEM0_TELEMETRY=False before anything imports mem0."
        )
    return main.Memory


def _vector_store_config(vector_store: str, store_dir: Path) -> dict[str, Any]:
    """Both stores score by cosine, like our own retrieval, so scores are comparable."""
    if vector_store == "faiss":
        return {
            "collection_name": "bench",
            "path": str(store_dir / "faiss"),
            "distance_strategy": "cosine",
            "embedding_model_dims": EMBEDDING_DIMS,
        }
    if vector_store == "qdrant":
        # Embedded qdrant (path=..., no host): cosine distance is mem0's default there.
        return {
            "collection_name": "bench",
            "path": str(store_dir / "qdrant"),
            "embedding_model_dims": EMBEDDING_DIMS,
            "on_disk": True,
        }
    raise ValueError(f"vector_store must be one of {VECTOR_STORES}, not {vector_store!r}")


class Mem0Baseline:
    """One mem0 `Memory` whose every file lives under `workdir`.

    Keys: `add` stores each text as one raw memory. Pass `refs` (our own memory ids) to get
    them back from `search`: mem0 keeps each ref in the memory's metadata. Without refs,
    the keys are mem0's own ids.

    Caveat for multi-user runs with faiss: mem0 filters by user_id *after* the nearest
    neighbour search (it over-fetches 2 * max(4k, 60) across all users), so a user with
    few memories among many others can get fewer than k hits. Use one user per instance,
    or `vector_store="qdrant"`, which filters inside the search.
    """

    def __init__(
        self,
        workdir: Path,
        model_dir: Path,
        vector_store: str = "faiss",
        *,
        threshold: float = 0.0,
    ) -> None:
        """`threshold` 0 returns the top k whatever their score (mem0's default is 0.1)."""
        if vector_store not in VECTOR_STORES:
            raise ValueError(f"vector_store must be one of {VECTOR_STORES}, not {vector_store!r}")
        model_dir = Path(model_dir).resolve()
        if not (model_dir / "modules.json").is_file():
            raise FileNotFoundError(f"no sentence-transformers model in {model_dir}")
        self.workdir = Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.vector_store = vector_store
        self.threshold = threshold

        memory_class = _import_memory_class(self.workdir / "mem0_home")
        config = {
            "embedder": {
                "provider": "huggingface",
                "config": {
                    # A local folder path: SentenceTransformer loads it without the Hub.
                    "model": str(model_dir),
                    "embedding_dims": EMBEDDING_DIMS,
                    "model_kwargs": {"device": "cpu", "local_files_only": True},
                },
            },
            "vector_store": {
                "provider": vector_store,
                "config": _vector_store_config(vector_store, self.workdir),
            },
            # mem0 always builds an LLM client; with infer=False it is never called.
            "llm": {
                "provider": "openai",
                "config": {"api_key": "offline-unused", "openai_base_url": _DEAD_LLM_URL},
            },
            "history_db_path": str(self.workdir / "history.db"),
        }
        try:
            self._memory: Any = memory_class.from_config(config)
        except ImportError as exc:  # mem0 imports each store's client only when it is chosen
            raise Mem0Unavailable(f"mem0's {vector_store} store is not installed: {exc}") from exc

    def add(self, user_id: str, texts: list[str], refs: list[str] | None = None) -> list[str]:
        """Store each text as its own memory (one mem0 `add` each, so each keeps its ref).

        Returns the keys in order: `refs` if given, else mem0's ids.
        """
        if refs is not None and len(refs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(refs)} refs")
        keys: list[str] = []
        for i, text in enumerate(texts):
            metadata = {"ref": refs[i]} if refs is not None else None
            result = self._memory.add(text, user_id=user_id, metadata=metadata, infer=False)
            added = [r for r in result["results"] if r.get("event") == "ADD"]
            if len(added) != 1:
                raise RuntimeError(f"mem0 stored {len(added)} memories for one text: {result}")
            keys.append(refs[i] if refs is not None else str(added[0]["id"]))
        return keys

    def search(self, user_id: str, query: str, k: int = 5) -> list[str]:
        """Keys of this user's k best memories for `query`, best first (embeds the query too)."""
        result = self._memory.search(
            query, top_k=k, filters={"user_id": user_id}, threshold=self.threshold
        )
        keys: list[str] = []
        for hit in result["results"]:
            ref = (hit.get("metadata") or {}).get("ref")
            keys.append(str(ref) if ref is not None else str(hit["id"]))
        return keys

    def close(self) -> None:
        """Close the history db and, for embedded qdrant, release its folder lock."""
        memory = self._memory
        if memory is None:
            return
        self._memory = None
        memory.close()
        client = getattr(memory.vector_store, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()

    def __enter__(self) -> Mem0Baseline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
