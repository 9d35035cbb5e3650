"""The ONE place that reads the environment and chooses adapters.

Everything else receives its collaborators; nothing else reads `os.environ`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from chatmemory.adapters.clock import SystemClock
from chatmemory.domain.errors import InvalidField
from chatmemory.ports import (
    Clock,
    Embedder,
    Jobs,
    Model,
    PipelineStarter,
    PurgeStarter,
    Store,
    VectorIndex,
)
from chatmemory.services.chat import ChatService
from chatmemory.services.context import ContextService
from chatmemory.services.folding import Folder
from chatmemory.services.idle import IdleTrigger
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.notices import NoticeService
from chatmemory.services.pipeline import InProcessPipeline, WritePipeline
from chatmemory.services.purge import InProcessPurge, PurgePipeline, PurgeSweep
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever

StoreKind = Literal["sqlite", "dynamodb"]
EmbedderKind = Literal["auto", "minilm", "hashing", "titan"]
IndexKind = Literal["exact", "opensearch"]
ModelKind = Literal["auto", "offline", "claude", "bedrock"]
JobsKind = Literal["local", "sqs"]
PipelineKind = Literal["local", "stepfunctions"]
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


def _stream_port(env: Mapping[str, str]) -> int:
    """The streaming server's port: the Lambda Web Adapter reads AWS_LWA_PORT, then PORT."""
    raw = env.get("AWS_LWA_PORT") or env.get("PORT") or "8080"
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise InvalidField("PORT", "must be a TCP port number")
    return int(raw)


@dataclass(frozen=True, slots=True)
class Settings:
    """Typed configuration, read once."""

    store: StoreKind = "sqlite"
    state_dir: Path = field(default_factory=lambda: default_state_dir(os.environ))
    # Where the CLI looks when no folder is named: a server records itself there, so
    # `token` and `flush` meet the server they are meant for (local/running.py).
    well_known_state_dir: Path = field(default_factory=lambda: default_state_dir(os.environ))
    state_dir_chosen: bool = False  # CHATMEMORY_STATE_DIR named one
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
    model: ModelKind = "auto"
    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_secret_name: str | None = None
    chat_model: str | None = None
    fast_model: str | None = None
    jobs: JobsKind = "local"
    fold_queue_url: str | None = None
    idle_queue_url: str | None = None
    idle_seconds: int = 600
    pipeline: PipelineKind = "local"
    write_pipeline_arn: str | None = None
    purge: PipelineKind = "local"
    purge_pipeline_arn: str | None = None
    jwt_issuer: str | None = None
    jwt_audiences: tuple[str, ...] = ()
    stream_port: int = 8080

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
        model = env.get("CHATMEMORY_MODEL", "auto")
        if model not in ("auto", "offline", "claude", "bedrock"):
            raise InvalidField("CHATMEMORY_MODEL", "must be auto, offline, claude or bedrock")
        jobs = env.get("CHATMEMORY_JOBS", "local")
        if jobs not in ("local", "sqs"):
            raise InvalidField("CHATMEMORY_JOBS", "must be local or sqs")
        pipeline = env.get("CHATMEMORY_PIPELINE", "local")
        if pipeline not in ("local", "stepfunctions"):
            raise InvalidField("CHATMEMORY_PIPELINE", "must be local or stepfunctions")
        purge = env.get("CHATMEMORY_PURGE", "local")
        if purge not in ("local", "stepfunctions"):
            raise InvalidField("CHATMEMORY_PURGE", "must be local or stepfunctions")
        settings = cls(
            model=model,  # type: ignore[arg-type]  # checked just above
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            anthropic_secret_name=env.get("CHATMEMORY_ANTHROPIC_SECRET_NAME") or None,
            chat_model=env.get("CHATMEMORY_CHAT_MODEL") or None,
            fast_model=env.get("CHATMEMORY_FAST_MODEL") or None,
            jobs=jobs,  # type: ignore[arg-type]
            fold_queue_url=env.get("CHATMEMORY_FOLD_QUEUE_URL") or None,
            idle_queue_url=env.get("CHATMEMORY_IDLE_QUEUE_URL") or None,
            idle_seconds=int(env.get("CHATMEMORY_IDLE_SECONDS", "600")),
            pipeline=pipeline,  # type: ignore[arg-type]  # checked just above
            write_pipeline_arn=env.get("CHATMEMORY_WRITE_PIPELINE_ARN") or None,
            purge=purge,  # type: ignore[arg-type]  # checked just above
            purge_pipeline_arn=env.get("CHATMEMORY_PURGE_PIPELINE_ARN") or None,
            jwt_issuer=env.get("CHATMEMORY_JWT_ISSUER") or None,
            jwt_audiences=tuple(
                audience.strip()
                for audience in env.get("CHATMEMORY_JWT_AUDIENCE", "").split(",")
                if audience.strip()
            ),
            stream_port=_stream_port(env),
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
            well_known_state_dir=default_state_dir(env),
            state_dir_chosen=bool(state_dir),
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
        self._model_lock = threading.Lock()
        self._embedder: Embedder | None = None

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
        examples and the chat model. The local server reports ready only after this."""
        _ = self.store
        self.embedder.embed(["warming up"])
        self.relevance.warm_up()
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
        # The embedder is fetched on first use: listing, deleting or undoing never waits
        # for a model to load.
        return MemoryIndexer(lambda: self.embedder, lambda: self.index)

    @cached_property
    def relevance(self) -> RelevanceModel:
        params = params_for(self.embedder.name, self.settings.recall_threshold)
        return RelevanceModel(self.embedder, params)

    @cached_property
    def retriever(self) -> Retriever:
        return Retriever(self.store, self.embedder, self.index, self.clock, self.relevance)

    @cached_property
    def context(self) -> ContextService:
        return ContextService(self.store, self.clock, self.retriever)

    @cached_property
    def memories(self) -> MemoryService:
        return MemoryService(self.store, self.clock, self.indexer, self.purge_starter)

    @cached_property
    def model(self) -> Model:
        kind = self.settings.model
        if kind == "auto":
            has_key = bool(self.settings.anthropic_api_key or self.settings.anthropic_secret_name)
            kind = "claude" if has_key else "offline"
        if kind == "offline":
            from chatmemory.adapters.offline_model import OfflineModel  # noqa: PLC0415

            return OfflineModel()
        from chatmemory.adapters import claude_model  # noqa: PLC0415

        # The SDK logs whole request bodies at DEBUG: prompts never go to logs.
        logging.getLogger("anthropic").setLevel(max(logging.INFO, logging.getLogger().level))

        if kind == "bedrock":
            assert self.settings.region, "AWS_REGION is required for Bedrock"
            # Current Claude models on Bedrock speak the Messages API ("mantle" client).
            client: Any = claude_model.bedrock_mantle_client(self.settings.region)
            chat = self.settings.chat_model or claude_model.DEFAULT_BEDROCK_CHAT_MODEL
            fast = self.settings.fast_model or claude_model.DEFAULT_BEDROCK_FAST_MODEL
        else:
            client = claude_model.anthropic_client(self._anthropic_key())
            chat = self.settings.chat_model or claude_model.DEFAULT_CHAT_MODEL
            fast = self.settings.fast_model or claude_model.DEFAULT_FAST_MODEL
        return claude_model.ClaudeModel(client=client, chat_model=chat, fast_model=fast)

    def _anthropic_key(self) -> str:
        """The key from the environment locally; on AWS from Secrets Manager (cached)."""
        if self.settings.anthropic_api_key:
            return self.settings.anthropic_api_key
        if not self.settings.anthropic_secret_name:
            raise InvalidField("ANTHROPIC_API_KEY", "is required for the claude model")
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
            QueuedJobs,
        )

        jobs = QueuedJobs(self.clock)

        def run(job: Job) -> None:
            if isinstance(job, FoldJob):
                self.folder.fold(job.user_id, job.conversation_id)
            elif isinstance(job, IdleJob):
                self.idle.check(job.user_id, job.conversation_id)
            else:
                self.purge.run(job.request)

        jobs.bind(run)
        return jobs

    @cached_property
    def pipeline(self) -> WritePipeline:
        return WritePipeline(
            self.store,
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
            self.store, self.clock, index=lambda: self.index, folder=lambda: self.folder
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
        return PurgeSweep(self.store, self.clock, self.purge_starter)

    @cached_property
    def idle(self) -> IdleTrigger:
        return IdleTrigger(
            self.store,
            self.clock,
            self.pipeline_starter,
            idle_after=timedelta(seconds=self.settings.idle_seconds),
        )

    @cached_property
    def folder(self) -> Folder:
        return Folder(self.store, self.clock, self.model)

    @cached_property
    def chat(self) -> ChatService:
        return ChatService(
            self.store,
            self.clock,
            context=self.context,
            model=self.model,
            memories=self.memories,
            jobs=self.jobs,
            idle_after=timedelta(seconds=self.settings.idle_seconds),
        )

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
