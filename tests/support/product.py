"""The chat service and the write pipeline wired as config wires them, driven by a clock."""

from __future__ import annotations

from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.local_jobs import (
    FoldJob,
    IdleJob,
    Job,
    ProfileJob,
    QueuedJobs,
    RoomQuietJob,
)
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.ports.jobs import Jobs
from chatmemory.ports.model import Model
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatRequest, ChatResult, ChatService
from chatmemory.services.context import ContextService
from chatmemory.services.folding import Folder
from chatmemory.services.idle import IdleTrigger
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.notices import NoticeService
from chatmemory.services.pipeline import InProcessPipeline, WritePipeline
from chatmemory.services.profile import ProfileRebuilds
from chatmemory.services.quotas import QuotaGuard
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever
from chatmemory.services.room_service import RoomService
from chatmemory.services.room_writes import RoomWrites
from chatmemory.services.rooms import RoomBlocks
from chatmemory.services.threads import ThreadKeeper

ALICE = "alice"
IDLE = timedelta(minutes=10)


class Product:
    """Chat + the write pipeline, wired as config wires them (hashing vectors, a queue)."""

    def __init__(
        self,
        stores: Stores,
        clock: ManualClock,
        model: Model | None = None,
        *,
        uses_jobs: Jobs | None = None,
        quotas: QuotaGuard | None = None,
    ) -> None:
        embedder = HashingEmbedder()
        model = model or OfflineModel()
        index = ExactIndex(stores.recall)
        self.stores, self.clock = stores, clock
        self.jobs = QueuedJobs(clock)
        self.profiles = ProfileRebuilds(stores, clock, self.jobs)
        self.memories = MemoryService(
            stores,
            clock,
            MemoryIndexer(embedder, index),
            uses_jobs=uses_jobs,
            profiles=self.profiles,
            quotas=quotas,
        )
        self.settings = SettingsService(stores, clock)
        self.notices = NoticeService(stores, clock, self.memories)
        relevance = RelevanceModel(embedder, params_for(embedder.name, threshold=0.25))
        self.context = ContextService(
            stores,
            clock,
            Retriever(stores, embedder, index, clock, relevance),
            profiles=self.profiles,
        )
        context = self.context
        self.pipeline = WritePipeline(
            stores, clock, model=model, memories=self.memories, embedder=embedder, index=index
        )
        self.idle = IdleTrigger(stores, clock, InProcessPipeline(self.pipeline), idle_after=IDLE)
        folder = Folder(stores, clock, model)
        self.room_blocks = RoomBlocks(stores, clock, embedder)
        self.rooms = RoomService(
            stores, clock, self.room_blocks, self.jobs, model, quiet_after=IDLE, quotas=quotas
        )
        self.room_writes = RoomWrites(
            stores, clock, model=model, embedder=embedder, memories=self.memories, quiet_after=IDLE
        )
        self.threads = ThreadKeeper(stores, clock, self.memories)

        def run(job: Job) -> None:
            if isinstance(job, FoldJob):
                folder.fold(job.user_id, job.conversation_id)
            elif isinstance(job, IdleJob):
                self.idle.check(job.user_id, job.conversation_id)
            elif isinstance(job, RoomQuietJob):
                self.room_writes.check(job.room_id)
            elif isinstance(job, ProfileJob):
                self.profiles.rebuild(job.user_id, job.persona)

        self.jobs.bind(run)
        self.chat = ChatService(
            stores,
            clock,
            context=context,
            model=model,
            memories=self.memories,
            jobs=self.jobs,
            idle_after=IDLE,
            quotas=quotas,
        )

    def say(
        self, message: str, conversation_id: str | None = None, **request: object
    ) -> ChatResult:
        *_, result = self.chat.turn(
            ChatRequest(user_id=ALICE, message=message, conversation_id=conversation_id, **request)
        )  # type: ignore[arg-type]
        assert isinstance(result, ChatResult)
        self.clock.advance(timedelta(seconds=20))
        return result

    def go_quiet(self) -> int:
        """Let the idle timers fire (no sleeping: the clock moves)."""
        self.clock.advance(IDLE + timedelta(seconds=1))
        return self.jobs.run_due()

    def active(self) -> list[str]:
        return sorted(m.text for m in self.stores.memories.iter_memories(ALICE))
