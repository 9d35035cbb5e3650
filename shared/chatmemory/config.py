"""The ONE place that reads the environment and chooses adapters.

Everything else receives its collaborators; nothing else reads `os.environ`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

from chatmemory.adapters.clock import SystemClock
from chatmemory.domain.errors import InvalidField
from chatmemory.ports import Clock, Embedder, Store, VectorIndex
from chatmemory.services.context import ContextService
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.notices import NoticeService
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever

StoreKind = Literal["sqlite", "dynamodb"]
EmbedderKind = Literal["auto", "minilm", "hashing", "titan"]
IndexKind = Literal["exact", "opensearch"]
SQLITE_FILE = "chatmemory.sqlite3"

log = logging.getLogger(__name__)


def default_state_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_STATE_HOME/chatmemory`, else `~/.local/state/chatmemory`."""
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "chatmemory"


def default_model_cache(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/chatmemory/models`: derived model files, safe to delete."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chatmemory" / "models"


def _package_project_root() -> Path:
    """The source checkout this package runs from (shared/chatmemory/ → the repo root)."""
    return Path(__file__).resolve().parents[2]


def _offline_models() -> None:
    """Model libraries must never reach for a hub: the weights ship with the package."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _single_threaded_blas() -> None:
    """numpy's scoring is tiny; a multi-threaded BLAS pool only fights the model for the CPU
    (measured: recall p95 103 ms with it, 19 ms without, on 2 cores)."""
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415
    except ImportError:
        return
    threadpool_limits(limits=1, user_api="blas")


def quiet_local_runtime() -> None:
    """Locally there is no CloudWatch: keep powertools from printing metric blobs."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


@dataclass(frozen=True, slots=True)
class Settings:
    """Typed configuration, read once."""

    store: StoreKind = "sqlite"
    state_dir: Path = field(default_factory=lambda: default_state_dir(os.environ))
    table_name: str | None = None
    region: str | None = None
    dynamodb_endpoint: str | None = None
    local_token_secret: str | None = None
    project_root: Path = field(default_factory=_package_project_root)
    embedder: EmbedderKind = "auto"
    titan_dimensions: int = 1024
    index: IndexKind = "exact"
    opensearch_endpoint: str | None = None
    opensearch_index: str = "memories"
    recall_threshold: float | None = None
    model_cache: Path = field(default_factory=lambda: default_model_cache(os.environ))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        store = env.get("CHATMEMORY_STORE", "sqlite")
        if store not in ("sqlite", "dynamodb"):
            raise InvalidField("CHATMEMORY_STORE", "must be sqlite or dynamodb")
        state_dir = env.get("CHATMEMORY_STATE_DIR")
        embedder = env.get("CHATMEMORY_EMBEDDER", "auto")
        if embedder not in ("auto", "minilm", "hashing", "titan"):
            raise InvalidField("CHATMEMORY_EMBEDDER", "must be auto, minilm, hashing or titan")
        index = env.get("CHATMEMORY_INDEX", "exact")
        if index not in ("exact", "opensearch"):
            raise InvalidField("CHATMEMORY_INDEX", "must be exact or opensearch")
        threshold = env.get("CHATMEMORY_RECALL_THRESHOLD")
        settings = cls(
            embedder=embedder,  # type: ignore[arg-type]  # checked just above
            titan_dimensions=int(env.get("CHATMEMORY_TITAN_DIMENSIONS", "1024")),
            index=index,  # type: ignore[arg-type]
            opensearch_endpoint=env.get("CHATMEMORY_OPENSEARCH_ENDPOINT"),
            opensearch_index=env.get("CHATMEMORY_OPENSEARCH_INDEX", "memories"),
            recall_threshold=float(threshold) if threshold else None,
            model_cache=Path(env["CHATMEMORY_MODEL_CACHE"]).expanduser()
            if env.get("CHATMEMORY_MODEL_CACHE")
            else default_model_cache(env),
            store=store,  # type: ignore[arg-type]  # checked just above
            state_dir=Path(state_dir).expanduser() if state_dir else default_state_dir(env),
            table_name=env.get("CHATMEMORY_TABLE_NAME"),
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
            dynamodb_endpoint=env.get("CHATMEMORY_DYNAMODB_ENDPOINT"),
            local_token_secret=env.get("CHATMEMORY_LOCAL_SECRET"),
            project_root=Path(env["CHATMEMORY_PROJECT_ROOT"]).expanduser()
            if env.get("CHATMEMORY_PROJECT_ROOT")
            else _package_project_root(),
        )
        if settings.index == "opensearch" and not (
            settings.opensearch_endpoint and settings.region
        ):
            raise InvalidField(
                "CHATMEMORY_OPENSEARCH_ENDPOINT",
                "the opensearch index needs an endpoint and AWS_REGION",
            )
        if settings.store == "dynamodb" and not (settings.table_name and settings.region):
            raise InvalidField(
                "CHATMEMORY_TABLE_NAME", "the dynamodb store needs a table name and AWS_REGION"
            )
        return settings

    @property
    def sqlite_path(self) -> Path:
        return self.state_dir / SQLITE_FILE


class Container:
    """Builds each collaborator on first use, once per process (a Lambda cold start)."""

    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()

    @cached_property
    def store(self) -> Store:
        if self.settings.store == "dynamodb":
            from chatmemory.adapters.dynamodb_store import DynamoDbStore  # noqa: PLC0415

            assert self.settings.table_name and self.settings.region  # checked in from_env
            return DynamoDbStore(
                table_name=self.settings.table_name,
                region=self.settings.region,
                clock=self.clock,
                host=self.settings.dynamodb_endpoint,
            )
        from chatmemory.adapters.sqlite_store import SqliteStore  # noqa: PLC0415

        return SqliteStore(self.settings.sqlite_path, clock=self.clock)

    @cached_property
    def embedder(self) -> Embedder:
        kind = self.settings.embedder
        if kind == "titan":
            import boto3  # noqa: PLC0415

            from chatmemory.adapters.titan_embedder import TitanEmbedder  # noqa: PLC0415

            client = boto3.client("bedrock-runtime", region_name=self.settings.region)
            return TitanEmbedder(client, dimensions=self.settings.titan_dimensions)
        from chatmemory.adapters.minilm_embedder import (  # noqa: PLC0415
            MiniLMEmbedder,
            minilm_available,
        )

        if kind == "minilm" or (kind == "auto" and minilm_available()):
            _offline_models()
            _single_threaded_blas()
            return MiniLMEmbedder(cache_dir=self.settings.model_cache)
        from chatmemory.adapters.hashing_embedder import HashingEmbedder  # noqa: PLC0415

        if kind == "auto":
            log.warning("the local model is not installed; using the hashing embedder")
        return HashingEmbedder()

    @cached_property
    def index(self) -> VectorIndex:
        if self.settings.index == "opensearch":
            from chatmemory.adapters.opensearch_index import (  # noqa: PLC0415
                OpenSearchIndex,
                connect_serverless,
            )

            assert self.settings.opensearch_endpoint and self.settings.region  # from_env
            client = connect_serverless(self.settings.opensearch_endpoint, self.settings.region)
            # One index per embedder: vectors of different models never share a space.
            index = OpenSearchIndex(
                client=client,
                index_name=f"{self.settings.opensearch_index}-{self.embedder.name}",
                dimensions=self.embedder.dimensions,
                clock=self.clock,
            )
            index.ensure_index()  # once per cold start
            return index
        from chatmemory.adapters.exact_index import ExactIndex  # noqa: PLC0415

        return ExactIndex(self.store)

    @cached_property
    def indexer(self) -> MemoryIndexer:
        return MemoryIndexer(self.embedder, self.index)

    @cached_property
    def retriever(self) -> Retriever:
        params = params_for(self.embedder.name, self.settings.recall_threshold)
        relevance = RelevanceModel(self.embedder, params)
        return Retriever(self.store, self.embedder, self.index, self.clock, relevance)

    @cached_property
    def context(self) -> ContextService:
        return ContextService(self.store, self.clock, self.retriever)

    @cached_property
    def memories(self) -> MemoryService:
        return MemoryService(self.store, self.clock, self.indexer)

    @cached_property
    def memory_settings(self) -> SettingsService:
        return SettingsService(self.store, self.clock)

    @cached_property
    def notices(self) -> NoticeService:
        return NoticeService(self.store, self.clock, self.memories)


_current: Container | None = None


def container() -> Container:
    """The process-wide container, built from the environment on first use."""
    global _current  # noqa: PLW0603 - one container per process is the point
    if _current is None:
        _current = Container(Settings.from_env())
    return _current


def use_container(replacement: Container | None) -> None:
    """Install a container (the local server, tests); None goes back to the environment's."""
    global _current  # noqa: PLW0603
    _current = replacement
