"""The ONE place that reads the environment and chooses adapters.

Everything else receives its collaborators; nothing else reads `os.environ`.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from chatmemory.adapters.clock import ShiftedClock, SystemClock
from chatmemory.deadline import time_left
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.ids import IdentityKey
from chatmemory.domain.quotas import (
    IMPORTED_ROWS,
    MODEL_TURNS,
    OBSERVED_TURNS,
    ROOM_LINES,
    WRITES,
    Ceiling,
)
from chatmemory.ports.change_feed import ChangeFeed
from chatmemory.ports.clock import Clock
from chatmemory.ports.embedder import Embedder
from chatmemory.ports.jobs import Jobs, JobsRunHere, PipelineStarter, PurgeStarter
from chatmemory.ports.model import Model
from chatmemory.ports.reranker import Reranker
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorIndex
from chatmemory.services.after_turn import AfterTurn
from chatmemory.services.changes import ChangePublisher, ChangeRelay
from chatmemory.services.chat import ChatService
from chatmemory.services.context import ContextService
from chatmemory.services.conversation_deletes import ConversationDeletes
from chatmemory.services.folding import Folder
from chatmemory.services.health import HealthCheck
from chatmemory.services.idle import IdleDelays, IdleTrigger
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.message_masking import StoredMessageMasking
from chatmemory.services.notices import NoticeService
from chatmemory.services.observe import ObserveService
from chatmemory.services.persona_view import PersonaView
from chatmemory.services.pipeline import InProcessPipeline, WritePipeline
from chatmemory.services.portability import PortabilityService
from chatmemory.services.profile import ProfileRebuilds
from chatmemory.services.purge import InProcessPurge, PurgePipeline, PurgeSweep
from chatmemory.services.quotas import QuotaGuard
from chatmemory.services.recall import RecallService
from chatmemory.services.references import ReferenceBooks
from chatmemory.services.reindex import Reindexer
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever
from chatmemory.services.rhythm import RhythmKeeper
from chatmemory.services.room_service import RoomService
from chatmemory.services.room_writes import RoomWrites
from chatmemory.services.rooms import RoomBlocks
from chatmemory.services.threads import ThreadKeeper
from chatmemory.services.uses import UsesWriter

if TYPE_CHECKING:
    from chatmemory.adapters.sqlite import Database

StoreKind = Literal["sqlite", "dynamodb"]
EmbedderKind = Literal["auto", "minilm", "hashing", "titan"]
IndexKind = Literal["exact", "opensearch"]
# How the OpenSearch index stores vectors (domain/vector_encoding.py); bench/encoding.py
# measured fp16 at the same recall as float32.
VectorEncodingKind = Literal["float32", "fp16", "byte"]
ModelKind = Literal["auto", "offline", "claude", "bedrock"]
RerankerKind = Literal["none", "bedrock"]
JobsKind = Literal["local", "sqs"]
PipelineKind = Literal["local", "stepfunctions"]
ChangesKind = Literal["file", "eventbridge", "none"]
SQLITE_FILE = "chatmemory.sqlite3"

log = logging.getLogger(__name__)


def default_state_dir(xdg_state_home: str | None) -> Path:
    """`$XDG_STATE_HOME/chatmemory`, else `~/.local/state/chatmemory`."""
    return Path(xdg_state_home or Path.home() / ".local" / "state") / "chatmemory"


def default_model_cache(xdg_cache_home: str | None) -> Path:
    """`$XDG_CACHE_HOME/chatmemory/models`: derived model files, safe to delete."""
    return Path(xdg_cache_home or Path.home() / ".cache") / "chatmemory" / "models"


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


class ConfigurationError(Exception):
    """The environment asks for something this service cannot run with: the operator's to
    fix, never the caller's. It names each setting and why, never the value it holds."""

    def __init__(self, problems: dict[str, str]) -> None:
        self.problems = problems  # setting → what is wrong with it
        super().__init__("; ".join(f"{name} {reason}" for name, reason in problems.items()))


def _empty_is_unset(value: object) -> object:
    return value or None


def _expand_user(path: Path | None) -> Path | None:
    return path.expanduser() if path else None


def _comma_separated(value: object) -> object:
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


# For these, a variable set to "" counts as unset (as `X= command` means in a shell).
OptionalText = Annotated[str | None, BeforeValidator(_empty_is_unset)]
OptionalNumber = Annotated[float | None, BeforeValidator(_empty_is_unset)]
OptionalPath = Annotated[
    Path | None, BeforeValidator(_empty_is_unset), AfterValidator(_expand_user)
]
# "a, b" is ("a", "b"): a comma-separated list, not JSON.
CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_separated)]


class _Environment(BaseSettings):
    """Every variable this service reads, typed and checked once. The names are the ones
    template.yaml and the README set; case matters, as it does to `os.environ`."""

    model_config = SettingsConfigDict(case_sensitive=True)

    CHATMEMORY_STORE: StoreKind = "sqlite"
    CHATMEMORY_STATE_DIR: OptionalPath = None
    XDG_STATE_HOME: str | None = None
    CHATMEMORY_TABLE_NAME: str | None = None
    AWS_REGION: str | None = None
    AWS_DEFAULT_REGION: str | None = None
    CHATMEMORY_DYNAMODB_ENDPOINT: str | None = None
    CHATMEMORY_LOCAL_SECRET: str | None = Field(default=None, repr=False)
    # The key memory ids are derived with (a keyed hash of a belief's words): given, from
    # Secrets Manager on AWS by name, else the state folder's own (created on first use).
    CHATMEMORY_IDENTITY_SECRET: OptionalText = Field(default=None, repr=False)
    CHATMEMORY_IDENTITY_SECRET_NAME: OptionalText = None
    CHATMEMORY_PROJECT_ROOT: OptionalPath = None
    CHATMEMORY_EMBEDDER: EmbedderKind = "auto"
    CHATMEMORY_TITAN_DIMENSIONS: int = 512
    CHATMEMORY_INDEX: IndexKind = "exact"
    CHATMEMORY_VECTOR_ENCODING: VectorEncodingKind = "fp16"
    CHATMEMORY_OPENSEARCH_ENDPOINT: str | None = None
    CHATMEMORY_OPENSEARCH_INDEX: str = "memories"
    CHATMEMORY_RECALL_THRESHOLD: OptionalNumber = None
    CHATMEMORY_RERANKER: RerankerKind = "none"
    CHATMEMORY_RERANK_MODEL: OptionalText = None
    CHATMEMORY_RERANK_REGION: OptionalText = None
    CHATMEMORY_MODEL_CACHE: OptionalPath = None
    XDG_CACHE_HOME: str | None = None
    CHATMEMORY_MODEL: ModelKind = "auto"
    ANTHROPIC_API_KEY: OptionalText = Field(default=None, repr=False)
    CHATMEMORY_ANTHROPIC_SECRET_NAME: OptionalText = None
    CHATMEMORY_CHAT_MODEL: OptionalText = None
    CHATMEMORY_FAST_MODEL: OptionalText = None
    CHATMEMORY_DEEP_MODEL: OptionalText = None
    CHATMEMORY_JOBS: JobsKind = "local"
    CHATMEMORY_FOLD_QUEUE_URL: OptionalText = None
    CHATMEMORY_IDLE_QUEUE_URL: OptionalText = None
    CHATMEMORY_IDLE_SECONDS: int = 600
    CHATMEMORY_IDLE_COLD_SECONDS: int = 120
    CHATMEMORY_PIPELINE: PipelineKind = "local"
    CHATMEMORY_WRITE_PIPELINE_ARN: OptionalText = None
    CHATMEMORY_PURGE: PipelineKind = "local"
    CHATMEMORY_PURGE_PIPELINE_ARN: OptionalText = None
    CHATMEMORY_JWT_ISSUER: OptionalText = None
    CHATMEMORY_JWT_AUDIENCE: CommaList = ()
    CHATMEMORY_JWT_ALGORITHMS: CommaList = ("RS256",)
    # Per-user quota: model turns (chat, streamed chat, room turns) a user may take a minute.
    CHATMEMORY_QUOTA_TURNS_PER_MINUTE: int = Field(default=30, ge=0)
    # Per-user quota: turns reported through `POST /v1/observe` a user may have a minute.
    CHATMEMORY_QUOTA_OBSERVED_PER_MINUTE: int = Field(default=60, ge=0)
    # Per-user quota: memories typed, corrected or imported (a row each), settings changed.
    CHATMEMORY_QUOTA_WRITES_PER_MINUTE: int = Field(default=120, ge=0)
    # Per-user quota: rows imported a minute (a whole export comes back in a few batches).
    CHATMEMORY_QUOTA_IMPORTED_ROWS_PER_MINUTE: int = Field(default=2_000, ge=0)
    # Per-user quota: room lines a human speaks a minute (posted by them or by the app).
    CHATMEMORY_QUOTA_ROOM_LINES_PER_MINUTE: int = Field(default=120, ge=0)
    # The most one user may have stored: memory versions (history too), messages; 0: none.
    CHATMEMORY_CEILING_MEMORY_ROWS: int = Field(default=20_000, ge=0)
    CHATMEMORY_CEILING_MESSAGES: int = Field(default=200_000, ge=0)
    # `chatmemory mcp`: the API it calls and the bearer token it calls with (an MCP host's
    # config can set them without putting the token on a command line).
    CHATMEMORY_API_URL: OptionalText = None
    CHATMEMORY_TOKEN: OptionalText = Field(default=None, repr=False)
    CHATMEMORY_CHANGES: ChangesKind = "file"
    CHATMEMORY_EVENT_BUS: OptionalText = None
    # The streaming server's port: the Lambda Web Adapter reads AWS_LWA_PORT, then PORT.
    AWS_LWA_PORT: str | None = None
    PORT: str | None = None


_REASONS = {
    "int_parsing": "must be an integer",
    "float_parsing": "must be a number",
    "greater_than_equal": "must be 0 or more",
}


def _refusal(error: ValidationError) -> ConfigurationError:
    """Each setting pydantic refused, in our words; the values set are never quoted."""
    problems: dict[str, str] = {}
    for refused in error.errors(include_url=False, include_input=False):
        name = str(refused["loc"][0])
        if refused["type"] == "literal_error":  # "'sqlite' or 'dynamodb'"
            problems[name] = "must be " + str(refused["ctx"]["expected"]).replace("'", "")
        else:
            problems[name] = _REASONS.get(refused["type"], "is invalid")
    return ConfigurationError(problems)


def _stream_port(raw: str) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigurationError({"PORT": "must be a TCP port number"})
    return int(raw)


@dataclass(frozen=True, slots=True)
class Settings:
    """Typed configuration, read once (`from_env`); tests and tools build one directly."""

    store: StoreKind = "sqlite"
    state_dir: Path = field(
        default_factory=lambda: default_state_dir(os.environ.get("XDG_STATE_HOME"))
    )
    # Where the CLI looks when no folder is named: a server records itself there, so
    # `token` and `flush` meet the server they are meant for (local/running.py).
    well_known_state_dir: Path = field(
        default_factory=lambda: default_state_dir(os.environ.get("XDG_STATE_HOME"))
    )
    state_dir_chosen: bool = False  # CHATMEMORY_STATE_DIR named one
    table_name: str | None = None
    region: str | None = None
    dynamodb_endpoint: str | None = None
    local_token_secret: str | None = None
    identity_secret: str | None = field(default=None, repr=False)
    identity_secret_name: str | None = None
    project_root: Path = field(default_factory=_package_project_root)
    embedder: EmbedderKind = "auto"
    titan_dimensions: int = 512
    index: IndexKind = "exact"
    vector_encoding: VectorEncodingKind = "fp16"
    opensearch_endpoint: str | None = None
    opensearch_index: str = "memories"
    recall_threshold: float | None = None
    # A cross-encoder that reorders the memories recall chose (off by default): Bedrock's
    # Rerank on AWS, in a region that offers the model (it may differ from the stack's).
    reranker: RerankerKind = "none"
    rerank_model: str | None = None
    rerank_region: str | None = None
    model_cache: Path = field(
        default_factory=lambda: default_model_cache(os.environ.get("XDG_CACHE_HOME"))
    )
    model: ModelKind = "auto"
    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_secret_name: str | None = None
    chat_model: str | None = None
    fast_model: str | None = None
    # The stronger model deep extractions run on ("remember this conversation", the daily
    # sweep); None: the most capable tier the adapter knows.
    deep_model: str | None = None
    jobs: JobsKind = "local"
    fold_queue_url: str | None = None
    idle_queue_url: str | None = None
    idle_seconds: int = 600  # the warm delay: a known user's conversation is read after it
    idle_cold_seconds: int = 120  # the cold delay (< 20 memories), never above the warm one
    pipeline: PipelineKind = "local"
    write_pipeline_arn: str | None = None
    purge: PipelineKind = "local"
    purge_pipeline_arn: str | None = None
    jwt_issuer: str | None = None
    jwt_audiences: tuple[str, ...] = ()
    # The streaming endpoint's allowed signature algorithms (the HTTP API's: RSA only).
    jwt_algorithms: tuple[str, ...] = ("RS256",)
    stream_port: int = 8080
    # Each user's model turns a minute (chat, streamed chat, room turns): a turn past it is
    # answered 429 with Retry-After; 0 switches the quota off (domain/quotas.py).
    quota_turns_per_minute: int = 30
    # Each user's observed turns a minute (`POST /v1/observe`), likewise.
    quota_observed_per_minute: int = 60
    # Each user's writes by hand a minute (a memory typed, corrected or imported; the
    # settings), and room lines they speak a minute; deleting is never counted.
    quota_writes_per_minute: int = 120
    quota_imported_rows_per_minute: int = 2_000
    quota_room_lines_per_minute: int = 120
    # The most one user may have stored (answered 409 storage_full past it); 0: no ceiling.
    ceiling_memory_rows: int = 20_000
    ceiling_messages: int = 200_000
    # Where change events go: `changes.jsonl` in the state folder, an EventBridge bus, or
    # nowhere.
    changes: ChangesKind = "file"
    event_bus_name: str | None = None
    # Local only: the server's clock runs this many days ahead (`chatmemory serve
    # --days-later N`), to try what time does to memories without waiting.
    days_later: int = 0
    # `chatmemory mcp`: the API's base URL and a bearer token (both optional: the running
    # local server and a token minted for --user are the defaults there).
    api_url: str | None = None
    api_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls) -> Settings:
        """The settings the process environment names; ConfigurationError naming every
        setting that is invalid."""
        try:
            env = _Environment()
        except ValidationError as exc:
            raise _refusal(exc) from None  # the chained error would quote the values
        settings = cls(
            store=env.CHATMEMORY_STORE,
            state_dir=env.CHATMEMORY_STATE_DIR or default_state_dir(env.XDG_STATE_HOME),
            well_known_state_dir=default_state_dir(env.XDG_STATE_HOME),
            state_dir_chosen=env.CHATMEMORY_STATE_DIR is not None,
            table_name=env.CHATMEMORY_TABLE_NAME,
            region=env.AWS_REGION or env.AWS_DEFAULT_REGION,
            dynamodb_endpoint=env.CHATMEMORY_DYNAMODB_ENDPOINT,
            local_token_secret=env.CHATMEMORY_LOCAL_SECRET,
            identity_secret=env.CHATMEMORY_IDENTITY_SECRET,
            identity_secret_name=env.CHATMEMORY_IDENTITY_SECRET_NAME,
            project_root=env.CHATMEMORY_PROJECT_ROOT or _package_project_root(),
            embedder=env.CHATMEMORY_EMBEDDER,
            titan_dimensions=env.CHATMEMORY_TITAN_DIMENSIONS,
            index=env.CHATMEMORY_INDEX,
            vector_encoding=env.CHATMEMORY_VECTOR_ENCODING,
            opensearch_endpoint=env.CHATMEMORY_OPENSEARCH_ENDPOINT,
            opensearch_index=env.CHATMEMORY_OPENSEARCH_INDEX,
            recall_threshold=env.CHATMEMORY_RECALL_THRESHOLD,
            reranker=env.CHATMEMORY_RERANKER,
            rerank_model=env.CHATMEMORY_RERANK_MODEL,
            rerank_region=env.CHATMEMORY_RERANK_REGION,
            model_cache=env.CHATMEMORY_MODEL_CACHE or default_model_cache(env.XDG_CACHE_HOME),
            model=env.CHATMEMORY_MODEL,
            anthropic_api_key=env.ANTHROPIC_API_KEY,
            anthropic_secret_name=env.CHATMEMORY_ANTHROPIC_SECRET_NAME,
            chat_model=env.CHATMEMORY_CHAT_MODEL,
            fast_model=env.CHATMEMORY_FAST_MODEL,
            deep_model=env.CHATMEMORY_DEEP_MODEL,
            jobs=env.CHATMEMORY_JOBS,
            fold_queue_url=env.CHATMEMORY_FOLD_QUEUE_URL,
            idle_queue_url=env.CHATMEMORY_IDLE_QUEUE_URL,
            idle_seconds=env.CHATMEMORY_IDLE_SECONDS,
            idle_cold_seconds=env.CHATMEMORY_IDLE_COLD_SECONDS,
            pipeline=env.CHATMEMORY_PIPELINE,
            write_pipeline_arn=env.CHATMEMORY_WRITE_PIPELINE_ARN,
            purge=env.CHATMEMORY_PURGE,
            purge_pipeline_arn=env.CHATMEMORY_PURGE_PIPELINE_ARN,
            jwt_issuer=env.CHATMEMORY_JWT_ISSUER,
            jwt_audiences=env.CHATMEMORY_JWT_AUDIENCE,
            jwt_algorithms=env.CHATMEMORY_JWT_ALGORITHMS,
            stream_port=_stream_port(env.AWS_LWA_PORT or env.PORT or "8080"),
            quota_turns_per_minute=env.CHATMEMORY_QUOTA_TURNS_PER_MINUTE,
            quota_observed_per_minute=env.CHATMEMORY_QUOTA_OBSERVED_PER_MINUTE,
            quota_writes_per_minute=env.CHATMEMORY_QUOTA_WRITES_PER_MINUTE,
            quota_imported_rows_per_minute=env.CHATMEMORY_QUOTA_IMPORTED_ROWS_PER_MINUTE,
            quota_room_lines_per_minute=env.CHATMEMORY_QUOTA_ROOM_LINES_PER_MINUTE,
            ceiling_memory_rows=env.CHATMEMORY_CEILING_MEMORY_ROWS,
            ceiling_messages=env.CHATMEMORY_CEILING_MESSAGES,
            api_url=env.CHATMEMORY_API_URL,
            api_token=env.CHATMEMORY_TOKEN,
            changes=env.CHATMEMORY_CHANGES,
            event_bus_name=env.CHATMEMORY_EVENT_BUS,
        )
        if settings.changes == "eventbridge" and not (settings.event_bus_name and settings.region):
            raise ConfigurationError(
                {"CHATMEMORY_EVENT_BUS": "eventbridge changes need a bus name and AWS_REGION"}
            )
        if settings.index == "opensearch" and not (
            settings.opensearch_endpoint and settings.region
        ):
            needs = "the opensearch index needs an endpoint and AWS_REGION"
            raise ConfigurationError({"CHATMEMORY_OPENSEARCH_ENDPOINT": needs})
        if settings.reranker == "bedrock" and not (settings.rerank_region or settings.region):
            raise ConfigurationError(
                {"CHATMEMORY_RERANK_REGION": "the bedrock reranker needs a region"}
            )
        if settings.store == "dynamodb" and not (settings.table_name and settings.region):
            raise ConfigurationError(
                {"CHATMEMORY_TABLE_NAME": "the dynamodb store needs a table name and AWS_REGION"}
            )
        return settings

    @property
    def sqlite_path(self) -> Path:
        return self.state_dir / SQLITE_FILE


class Container:
    """Builds each collaborator on first use, once per process (a Lambda cold start)."""

    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or (
            ShiftedClock(timedelta(days=settings.days_later))
            if settings.days_later
            else SystemClock()
        )
        self._model_lock = threading.Lock()
        self._embedder: Embedder | None = None

    @cached_property
    def stores(self) -> Stores:
        if self.settings.store == "dynamodb":
            from chatmemory.adapters.dynamodb import dynamodb_stores  # noqa: PLC0415

            assert self.settings.table_name and self.settings.region  # checked in from_env
            return dynamodb_stores(
                table_name=self.settings.table_name,
                region=self.settings.region,
                clock=self.clock,
                host=self.settings.dynamodb_endpoint,
            )
        from chatmemory.adapters.sqlite import sqlite_stores  # noqa: PLC0415

        return sqlite_stores(self._sqlite_database)

    @cached_property
    def _sqlite_database(self) -> Database:
        """The one SQLite file the embedded stores (and the change relay) share."""
        from chatmemory.adapters.sqlite import Database  # noqa: PLC0415

        return Database(self.settings.sqlite_path, clock=self.clock)

    @cached_property
    def health(self) -> HealthCheck:
        """What `/v1/health` asks: a write to the SQLite file, a read of the table."""
        if self.settings.store == "dynamodb":
            from chatmemory.adapters.dynamodb.items import bind_items  # noqa: PLC0415
            from chatmemory.adapters.dynamodb.probe import DynamoStoreProbe  # noqa: PLC0415

            assert self.settings.table_name and self.settings.region  # checked in from_env
            items = bind_items(
                self.settings.table_name, self.settings.region, self.settings.dynamodb_endpoint
            )
            return HealthCheck(DynamoStoreProbe(items.connection))
        from chatmemory.adapters.sqlite.probe import SqliteStoreProbe  # noqa: PLC0415

        return HealthCheck(SqliteStoreProbe(lambda: self._sqlite_database))

    @property
    def embedder(self) -> Embedder:
        # The dev server warms the model on a thread; a request may ask at the same time.
        with self._model_lock:
            if self._embedder is None:
                self._embedder = self._build_embedder()
            return self._embedder

    def warm_up(self) -> None:
        """Build everything a first request would, now: the store, the embedding model (and
        its ONNX export, once per cache folder) with a first forward pass, the recall gate's
        examples, the categories a typed memory borrows uses from, and the chat model. The
        local server reports ready only after this."""
        _ = self.stores
        self.embedder.embed(["warming up"])
        self.relevance.warm_up()
        self.indexer.warm_up()
        _ = (self.context, self.memories, self.chat, self.notices, self.memory_settings)

    def _build_embedder(self) -> Embedder:
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
                index_name,
            )
            from chatmemory.domain.vector_encoding import VectorEncoding  # noqa: PLC0415

            assert self.settings.opensearch_endpoint and self.settings.region  # from_env
            client = connect_serverless(self.settings.opensearch_endpoint, self.settings.region)
            # One index per embedder and encoding: vectors never share a space.
            encoding = VectorEncoding(self.settings.vector_encoding)
            index = OpenSearchIndex(
                client=client,
                index_name=index_name(self.settings.opensearch_index, self.embedder.name, encoding),
                dimensions=self.embedder.dimensions,
                clock=self.clock,
                encoding=encoding,
            )
            index.ensure_index()  # once per cold start
            return index
        from chatmemory.adapters.exact_index import ExactIndex  # noqa: PLC0415

        return ExactIndex(self.stores.recall)

    @cached_property
    def indexer(self) -> MemoryIndexer:
        # The embedder is fetched on first use: listing, deleting or undoing never waits
        # for a model to load.
        return MemoryIndexer(lambda: self.embedder, lambda: self.index)

    @cached_property
    def relevance(self) -> RelevanceModel:
        params = params_for(self.embedder.name, self.settings.recall_threshold)
        return RelevanceModel(self.embedder, params)

    @cached_property
    def reranker(self) -> Reranker | None:
        """The cross-encoder recall's few qualified memories go through, if one is chosen."""
        if self.settings.reranker != "bedrock":
            return None
        import boto3  # noqa: PLC0415 - AWS only
        from botocore.config import Config  # noqa: PLC0415

        from chatmemory.adapters.bedrock_reranker import (  # noqa: PLC0415
            DEFAULT_MODEL_ID,
            BedrockReranker,
            model_arn,
        )

        region = self.settings.rerank_region or self.settings.region
        assert region  # from_env refuses a bedrock reranker without one
        # Recall waits on it: a slow answer is dropped for recall's own order.
        client = boto3.client(
            "bedrock-agent-runtime",
            region_name=region,
            config=Config(connect_timeout=1, read_timeout=2, retries={"max_attempts": 1}),
        )
        model = self.settings.rerank_model or DEFAULT_MODEL_ID
        return BedrockReranker(client, model_arn=model_arn(region, model))

    @cached_property
    def reference_books(self) -> ReferenceBooks:
        """Each user's book of references, shared by both recalls (one cache per process)."""
        return ReferenceBooks(self.stores)

    @cached_property
    def retriever(self) -> Retriever:
        return Retriever(
            self.stores,
            self.embedder,
            self.index,
            self.clock,
            self.relevance,
            reranker=self.reranker,
            books=self.reference_books,
        )

    @cached_property
    def recall(self) -> RecallService:
        return RecallService(
            self.stores, self.embedder, self.clock, self.relevance, books=self.reference_books
        )

    @cached_property
    def context(self) -> ContextService:
        return ContextService(self.stores, self.clock, self.retriever, profiles=self.profiles)

    @cached_property
    def profiles(self) -> ProfileRebuilds:
        """Each profile kept a function of the active memories: rebuilt, debounced, after
        any write to them (the jobs thread locally, the fold queue on AWS)."""
        return ProfileRebuilds(self.stores, self.clock, self.jobs)

    @cached_property
    def memories(self) -> MemoryService:
        # Uses are written off the request path only by a model that can write them;
        # vectors the embedder could not make are asked for whatever the model.
        return MemoryService(
            self.stores,
            self.clock,
            self.indexer,
            self.purge_starter,
            uses_jobs=self.jobs,
            model_writes_uses=self.model_writes_uses,
            profiles=self.profiles,
            identities=lambda: self.identity_key,
            quotas=self.quotas,
        )

    @cached_property
    def identity_key(self) -> IdentityKey:
        """This deployment's key for memory ids: the configured secret, Secrets Manager's
        on AWS, else the state folder's (created 0600 on first use). A DynamoDB store
        with none configured keeps the public key, and says so."""
        if self.settings.identity_secret:
            return IdentityKey(self.settings.identity_secret.encode("utf-8"))
        if self.settings.identity_secret_name:
            from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415

            secret = parameters.get_secret(self.settings.identity_secret_name, max_age=3600)
            return IdentityKey(str(secret).strip().encode("utf-8"))
        if self.settings.store == "sqlite":
            from chatmemory.local.tokens import (  # noqa: PLC0415
                IDENTITY_KEY_FILE,
                load_or_create_secret,
            )

            found = load_or_create_secret(self.settings.state_dir, file_name=IDENTITY_KEY_FILE)
            return IdentityKey(found.encode("utf-8"))
        log.warning("no identity key is configured: memory ids use the public one")
        return IdentityKey()

    @cached_property
    def reindexer(self) -> Reindexer:
        """Vectors for memories recall cannot compare, and a fresh index filled."""
        return Reindexer(self.stores, self.indexer)

    @cached_property
    def uses(self) -> UsesWriter:
        """Writes the uses of memories stored without their own (the uses jobs)."""
        return UsesWriter(self.stores, lambda: self.model, self.indexer)

    @property
    def model_writes_uses(self) -> bool:
        """Whether the configured model can write a memory's uses: any but the offline
        stand-in. Read from the settings, so a function that only queues the job (the
        memories routes) never builds a model client or reads its key."""
        return self._model_kind() != "offline"

    def _model_kind(self) -> ModelKind:
        kind = self.settings.model
        if kind == "auto":
            has_key = bool(self.settings.anthropic_api_key or self.settings.anthropic_secret_name)
            return "claude" if has_key else "offline"
        return kind

    @cached_property
    def model(self) -> Model:
        kind = self._model_kind()
        if kind == "offline":
            from chatmemory.adapters.offline_model import OfflineModel  # noqa: PLC0415

            return OfflineModel()
        from chatmemory.adapters import claude  # noqa: PLC0415

        # The SDK logs whole request bodies at DEBUG: prompts never go to logs.
        logging.getLogger("anthropic").setLevel(max(logging.INFO, logging.getLogger().level))

        if kind == "bedrock":
            assert self.settings.region, "AWS_REGION is required for Bedrock"
            # Current Claude models on Bedrock speak the Messages API ("mantle" client).
            client: Any = claude.bedrock_mantle_client(self.settings.region)
            chat = self.settings.chat_model or claude.DEFAULT_BEDROCK_CHAT_MODEL
            fast = self.settings.fast_model or claude.DEFAULT_BEDROCK_FAST_MODEL
            deep = self.settings.deep_model or claude.DEFAULT_BEDROCK_DEEP_MODEL
        else:
            client = claude.anthropic_client(self._anthropic_key())
            chat = self.settings.chat_model or claude.DEFAULT_CHAT_MODEL
            fast = self.settings.fast_model or claude.DEFAULT_FAST_MODEL
            deep = self.settings.deep_model or claude.DEFAULT_DEEP_MODEL
        return claude.ClaudeModel(
            client=client,
            chat_model=chat,
            fast_model=fast,
            deep_model=deep,
            time_left=time_left,
        )

    def _anthropic_key(self) -> str:
        """The key from the environment locally; on AWS from Secrets Manager (cached)."""
        if self.settings.anthropic_api_key:
            return self.settings.anthropic_api_key
        if not self.settings.anthropic_secret_name:
            raise ConfigurationError({"ANTHROPIC_API_KEY": "is required for the claude model"})
        from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415

        secret = parameters.get_secret(self.settings.anthropic_secret_name, max_age=3600)
        return str(secret).strip()

    @cached_property
    def jobs(self) -> Jobs:
        if self.settings.jobs == "sqs":
            import boto3  # noqa: PLC0415

            from chatmemory.adapters.sqs_jobs import SqsJobs  # noqa: PLC0415

            assert self.settings.fold_queue_url, "CHATMEMORY_FOLD_QUEUE_URL is required"
            return SqsJobs(
                boto3.client("sqs", region_name=self.settings.region),
                fold_queue_url=self.settings.fold_queue_url,
                idle_queue_url=self.settings.idle_queue_url,
                clock=self.clock,
            )
        from chatmemory.adapters.local_jobs import (  # noqa: PLC0415
            FoldJob,
            IdleJob,
            Job,
            ProfileJob,
            QueuedJobs,
            RoomQuietJob,
            UsesJob,
        )

        jobs = QueuedJobs(self.clock)

        def run(job: Job) -> None:
            if isinstance(job, FoldJob):
                self.folder.fold(job.user_id, job.conversation_id)
            elif isinstance(job, IdleJob):
                self.idle.check(job.user_id, job.conversation_id)
            elif isinstance(job, RoomQuietJob):
                self.room_writes.check(job.room_id)
            elif isinstance(job, UsesJob):
                self.uses.write(job.user_id, job.memory_ids)
            elif isinstance(job, ProfileJob):
                self.profiles.rebuild(job.user_id, job.persona)
            else:
                self.purge.run(job.request)

        jobs.bind(run)
        return jobs

    @property
    def jobs_run_here(self) -> JobsRunHere | None:
        """The jobs, when this process must run them itself (the local queue: a worker
        thread for `serve`, one pass for `flush`); None when a queue runs them elsewhere."""
        from chatmemory.adapters.local_jobs import QueuedJobs  # noqa: PLC0415

        jobs = self.jobs
        return jobs if isinstance(jobs, QueuedJobs) else None

    @staticmethod
    def read_fold_job(body: str) -> tuple[str, str]:
        """(user_id, conversation_id) a fold-queue message names; ValueError if it is no job.
        The queue's adapter wrote the message, so it reads it: handlers never import one."""
        from chatmemory.adapters.sqs_jobs import parse_job  # noqa: PLC0415

        _, user_id, conversation_id = parse_job(body)
        return user_id, conversation_id

    @staticmethod
    def read_profile_job(body: str) -> tuple[str, str] | None:
        """(user_id, persona) a fold-queue message names when it asks for a profile
        rebuild; None when it is another job; ValueError if it asks but names none."""
        from chatmemory.adapters.sqs_jobs import parse_profile_job  # noqa: PLC0415

        return parse_profile_job(body)

    @staticmethod
    def read_uses_job(body: str) -> tuple[str, tuple[str, ...]] | None:
        """(user_id, memory_ids) a fold-queue message names when it asks for uses; None
        when it is another job; ValueError if it asks for uses but names none."""
        from chatmemory.adapters.sqs_jobs import parse_uses_job  # noqa: PLC0415

        return parse_uses_job(body)

    @staticmethod
    def read_idle_check(body: str) -> tuple[str, str]:
        """(user_id, conversation_id) an idle-queue message names; ValueError if it is none."""
        from chatmemory.adapters.sqs_jobs import parse_idle_check  # noqa: PLC0415

        return parse_idle_check(body)

    @staticmethod
    def read_room_quiet(body: str) -> str | None:
        """The room an idle-queue message names, or None if it names a conversation."""
        from chatmemory.adapters.sqs_jobs import parse_room_quiet  # noqa: PLC0415

        return parse_room_quiet(body)

    @cached_property
    def pipeline(self) -> WritePipeline:
        return WritePipeline(
            self.stores,
            self.clock,
            model=lambda: self.model,
            memories=lambda: self.memories,
            embedder=lambda: self.embedder,
            index=lambda: self.index,
        )

    @cached_property
    def pipeline_starter(self) -> PipelineStarter:
        if self.settings.pipeline == "stepfunctions":
            import boto3  # noqa: PLC0415

            from chatmemory.adapters.stepfunctions_starter import (  # noqa: PLC0415
                StepFunctionsStarter,
            )

            assert self.settings.write_pipeline_arn, "CHATMEMORY_WRITE_PIPELINE_ARN is required"
            return StepFunctionsStarter(
                boto3.client("stepfunctions", region_name=self.settings.region),
                state_machine_arn=self.settings.write_pipeline_arn,
            )
        return InProcessPipeline(self.pipeline)

    @cached_property
    def purge(self) -> PurgePipeline:
        return PurgePipeline(
            self.stores, self.clock, index=lambda: self.index, folder=lambda: self.folder
        )

    @cached_property
    def purge_starter(self) -> PurgeStarter:
        if self.settings.purge == "stepfunctions":
            import boto3  # noqa: PLC0415

            from chatmemory.adapters.stepfunctions_starter import (  # noqa: PLC0415
                StepFunctionsPurgeStarter,
            )

            assert self.settings.purge_pipeline_arn, "CHATMEMORY_PURGE_PIPELINE_ARN is required"
            return StepFunctionsPurgeStarter(
                boto3.client("stepfunctions", region_name=self.settings.region),
                state_machine_arn=self.settings.purge_pipeline_arn,
            )
        from chatmemory.adapters.local_jobs import QueuedJobs, QueuedPurges  # noqa: PLC0415

        jobs = self.jobs
        if isinstance(jobs, QueuedJobs):
            return QueuedPurges(jobs)
        return InProcessPurge(self.purge)  # no local queue: purge before answering

    @cached_property
    def purge_sweep(self) -> PurgeSweep:
        return PurgeSweep(self.stores, self.clock, self.purge_starter)

    @cached_property
    def conversation_deletes(self) -> ConversationDeletes:
        return ConversationDeletes(self.stores)

    @cached_property
    def message_masking(self) -> StoredMessageMasking:
        return StoredMessageMasking(self.stores)

    @cached_property
    def idle(self) -> IdleTrigger:
        return IdleTrigger(
            self.stores,
            self.clock,
            self.pipeline_starter,
            idle_after=timedelta(seconds=self.settings.idle_seconds),
            idle_cold_after=timedelta(seconds=self.settings.idle_cold_seconds),
        )

    @cached_property
    def folder(self) -> Folder:
        return Folder(self.stores, self.clock, self.model)

    @cached_property
    def quotas(self) -> QuotaGuard:
        """Each user's quotas, counted in the store's own table or file."""
        limits = {
            MODEL_TURNS: self.settings.quota_turns_per_minute,
            OBSERVED_TURNS: self.settings.quota_observed_per_minute,
            WRITES: self.settings.quota_writes_per_minute,
            IMPORTED_ROWS: self.settings.quota_imported_rows_per_minute,
            ROOM_LINES: self.settings.quota_room_lines_per_minute,
        }
        ceiling = Ceiling(
            memory_rows=self.settings.ceiling_memory_rows,
            messages=self.settings.ceiling_messages,
        )
        return QuotaGuard(self.stores.quotas, self.clock, limits, ceiling)

    @cached_property
    def chat(self) -> ChatService:
        return ChatService(
            self.stores,
            self.clock,
            context=self.context,
            model=self.model,
            memories=self.memories,
            jobs=self.jobs,
            idle_after=timedelta(seconds=self.settings.idle_seconds),
            idle_cold_after=timedelta(seconds=self.settings.idle_cold_seconds),
            rhythm=RhythmKeeper(self.stores, self.memories),
            quotas=self.quotas,
        )

    @cached_property
    def observe(self) -> ObserveService:
        """Turns that happened elsewhere, followed up exactly as a chat turn is."""
        idle = IdleDelays(
            self.stores,
            warm=timedelta(seconds=self.settings.idle_seconds),
            cold=timedelta(seconds=self.settings.idle_cold_seconds),
        )
        after = AfterTurn(self.stores, self.jobs, idle, RhythmKeeper(self.stores, self.memories))
        return ObserveService(self.stores, self.clock, after, quotas=self.quotas)

    @cached_property
    def room_blocks(self) -> RoomBlocks:
        return RoomBlocks(self.stores, self.clock, lambda: self.embedder)

    @cached_property
    def rooms(self) -> RoomService:
        return RoomService(
            self.stores,
            self.clock,
            self.room_blocks,
            self.jobs,
            lambda: self.model,
            quiet_after=timedelta(seconds=self.settings.idle_seconds),
            quotas=self.quotas,
        )

    @cached_property
    def room_writes(self) -> RoomWrites:
        return RoomWrites(
            self.stores,
            self.clock,
            model=lambda: self.model,
            embedder=lambda: self.embedder,
            memories=lambda: self.memories,
            quiet_after=timedelta(seconds=self.settings.idle_seconds),
        )

    @cached_property
    def threads(self) -> ThreadKeeper:
        """The nightly review's service (the write paths build their own keeper)."""
        return ThreadKeeper(self.stores, self.clock, lambda: self.memories)

    @cached_property
    def persona_view(self) -> PersonaView:
        return PersonaView(self.stores, self.clock)

    @cached_property
    def memory_settings(self) -> SettingsService:
        return SettingsService(self.stores, self.clock, self.quotas)

    @cached_property
    def notices(self) -> NoticeService:
        return NoticeService(self.stores, self.clock, self.memories)

    @cached_property
    def portability(self) -> PortabilityService:
        """Export and import; an imported belief without its own uses asks for them as a
        typed one does."""
        return PortabilityService(
            self.stores,
            self.clock,
            self.memories,
            self.indexer,
            uses_jobs=self.jobs,
            model_writes_uses=self.model_writes_uses,
            profiles=self.profiles,
        )

    # ---- change events (metadata only, never text) ------------------------------------

    @cached_property
    def change_feed(self) -> ChangeFeed:
        """Where change events go: EventBridge on AWS, `changes.jsonl` in the state folder."""
        if self.settings.changes == "eventbridge":
            import boto3  # noqa: PLC0415 - AWS only

            from chatmemory.adapters.eventbridge_changes import (  # noqa: PLC0415
                EventBridgeChangeFeed,
            )

            assert self.settings.event_bus_name  # from_env
            return EventBridgeChangeFeed(
                boto3.client("events", region_name=self.settings.region),
                bus_name=self.settings.event_bus_name,
            )
        from chatmemory.adapters.jsonl_changes import (  # noqa: PLC0415
            CHANGES_FILE,
            JsonLinesChangeFeed,
        )

        return JsonLinesChangeFeed(self.settings.state_dir / CHANGES_FILE)

    @cached_property
    def change_publisher(self) -> ChangePublisher:
        return ChangePublisher(lambda: self.change_feed)

    @cached_property
    def change_relay(self) -> ChangeRelay | None:
        """The relay that tails the embedded audit log into the feed (the local server's
        worker and `chatmemory flush` run it); None when changes are off, or on DynamoDB,
        where the table's stream feeds the changes function instead."""
        if self.settings.changes == "none" or self.settings.store != "sqlite":
            return None
        from chatmemory.adapters.sqlite.audit_tail import SqliteAuditTail  # noqa: PLC0415

        _ = self.stores  # the database, migrated
        return ChangeRelay(SqliteAuditTail(self._sqlite_database), self.change_publisher)

    @staticmethod
    def read_stream_audit_event(image: dict[str, Any]) -> MemoryEvent | None:
        """The audit event a DynamoDB Streams record's new image holds, or None when the
        item is none. The table's adapter wrote the item, so it reads it."""
        from chatmemory.adapters.dynamodb.events import event_from_stream_image  # noqa: PLC0415

        return event_from_stream_image(image)


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
