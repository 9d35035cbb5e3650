"""A memory stored while the embedder failed is kept without vectors, so recall cannot find
it; the uses job embeds it again (services/uses.py), whatever the model, and the daily
sweep or `chatmemory flush` hands it back until its vectors land. On both stores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.local_jobs import Job, QueuedJobs, UsesJob
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.config import Settings
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.model import Model
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.recall import RecallRequest, RecallService
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.uses import HandedOff, UsesWriter, UsesWritten
from tests.support import builders
from tests.support.functions import Wired
from tests.support.product import ALICE
from tests.support.scripted_uses import ScriptedUses

SALMON = NewMemory(text="Cooks salmon every Friday.", category="diet")
QUESTION = "salmon dinner friday"


class SwitchedEmbedder(HashingEmbedder):
    """Hashing vectors, or the failure of a throttled Bedrock while `down`."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.down:
            raise ConnectionError("embedder unreachable")
        return super().embed(texts)


@dataclass
class World:
    stores: Stores
    clock: ManualClock
    embedder: SwitchedEmbedder
    jobs: QueuedJobs
    memories: MemoryService
    writer: UsesWriter

    def recalled(self) -> list[str]:
        relevance = RelevanceModel(self.embedder, params_for(self.embedder.name))
        service = RecallService(
            self.stores, self.embedder, self.clock, relevance, floor=0.3, related_floor=0.05
        )
        return [hit.memory.text for hit in service.recall(RecallRequest(ALICE, QUESTION)).hits]

    def has_vectors(self, memory_id: str) -> bool:
        row = self.stores.memories.get_memory(ALICE, memory_id)
        assert row is not None
        return row.embedding is not None


def _world(stores: Stores, clock: ManualClock, model: Model) -> World:
    embedder = SwitchedEmbedder()
    indexer = MemoryIndexer(embedder, ExactIndex(stores.recall))
    writer = UsesWriter(stores, model, indexer)
    jobs = QueuedJobs(clock)

    def run(job: Job) -> None:
        if isinstance(job, UsesJob):
            writer.write(job.user_id, job.memory_ids)

    jobs.bind(run)
    memories = MemoryService(
        stores, clock, indexer, uses_jobs=jobs, model_writes_uses=not model.offline
    )
    return World(stores, clock, embedder, jobs, memories, writer)


@pytest.fixture
def offline(stores: Stores, clock: ManualClock) -> World:
    """The offline stand-in: it writes no uses, but vectors still get made again."""
    return _world(stores, clock, OfflineModel())


def test_a_memory_typed_while_the_embedder_failed_is_recalled_once_the_job_runs(
    offline: World,
) -> None:
    # Given a memory typed while the embedder failed: kept (201), but invisible to recall
    offline.embedder.down = True
    memory = offline.memories.create(ALICE, SALMON).memory
    offline.embedder.down = False
    assert not offline.has_vectors(memory.memory_id)
    assert offline.recalled() == []

    # When its job runs (the offline model cannot write uses: it embeds all the same)
    assert offline.jobs.run_pending() == 1

    # Then it has its vectors, with its category's uses, and recall finds it
    assert offline.has_vectors(memory.memory_id)
    assert offline.recalled() == [SALMON.text]
    assert offline.stores.memories.pending_vectors() == []
    row = offline.stores.memories.get_memory(ALICE, memory.memory_id)
    assert row is not None and row.meta.get("uses_from") == "category"


def test_an_embedder_still_down_leaves_the_row_waiting_and_the_sweep_hands_it_back(
    offline: World,
) -> None:
    # Given a memory whose job ran while the embedder was still down
    offline.embedder.down = True
    memory = offline.memories.create(ALICE, SALMON).memory
    offline.jobs.run_pending()
    assert not offline.has_vectors(memory.memory_id)
    assert offline.stores.memories.pending_vectors() == [(ALICE, memory.memory_id)]

    # When the daily sweep hands the waiting rows back, the embedder back
    offline.embedder.down = False
    handed = offline.writer.hand_off(offline.jobs)
    offline.jobs.run_pending()

    # Then it is recalled, and it waits for vectors no more (only for the uses a model
    # would write: the sweep queues those whatever the model, its consumer decides)
    assert handed == HandedOff(rows=1, without_vectors=1)
    assert offline.recalled() == [SALMON.text]
    assert offline.stores.memories.pending_vectors() == []


def test_the_job_reports_what_it_embedded_and_what_still_waits(offline: World) -> None:
    offline.embedder.down = True
    first = offline.memories.create(ALICE, SALMON).memory
    second = offline.memories.create(ALICE, NewMemory(text="Lives in Pune.")).memory
    ids = [first.memory_id, second.memory_id]

    assert offline.writer.write(ALICE, ids) == UsesWritten(unembedded=2)
    offline.embedder.down = False
    assert offline.writer.write(ALICE, ids) == UsesWritten(embedded=2)
    assert offline.writer.write(ALICE, ids) == UsesWritten()  # nothing left to do


def test_a_memory_deleted_before_the_job_runs_gets_no_vectors(offline: World) -> None:
    offline.embedder.down = True
    memory = offline.memories.create(ALICE, SALMON).memory
    offline.embedder.down = False
    offline.memories.delete(ALICE, memory.memory_id)

    assert offline.jobs.run_pending() == 1
    assert offline.stores.memories.get_memory(ALICE, memory.memory_id) is None
    assert offline.recalled() == []


def test_memory_switched_off_before_the_job_runs_is_not_embedded(offline: World) -> None:
    offline.embedder.down = True
    memory = offline.memories.create(ALICE, SALMON).memory
    offline.embedder.down = False
    SettingsService(offline.stores, offline.clock).update(ALICE, enabled=False)

    offline.jobs.run_pending()

    assert not offline.has_vectors(memory.memory_id)


def test_with_a_model_the_job_embeds_the_row_then_writes_its_own_uses(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a model that writes uses, and a memory typed while the embedder failed
    model = ScriptedUses({SALMON.text: ("what to cook on friday", "a fish supper")})
    world = _world(stores, clock, model)
    world.embedder.down = True
    memory = world.memories.create(ALICE, SALMON).memory
    world.embedder.down = False

    # When its job runs
    world.jobs.run_pending()

    # Then the row has vectors and its own uses, in one job
    row = stores.memories.get_memory(ALICE, memory.memory_id)
    assert row is not None and row.embedding is not None
    assert row.meta == {"uses": ["what to cook on friday", "a fish supper"]}
    assert stores.memories.pending_vectors() == [] and stores.memories.pending_uses() == []
    assert world.recalled() == [SALMON.text]


def test_a_memory_the_pipeline_learned_without_vectors_is_healed_by_the_catch_up(
    offline: World,
) -> None:
    # Given a memory the background pipeline wrote with its own uses while the embedder
    # failed (no job is queued from the pipeline: the sweep or `flush` finds it)
    offline.embedder.down = True
    learned = builders.memory(
        ALICE, SALMON.text, offline.clock.now(), category="diet", meta={"uses": ["fish"] * 3}
    )
    assert offline.memories.add_extracted(learned)
    offline.embedder.down = False

    # When `chatmemory flush` catches up
    caught_up = offline.writer.catch_up()

    # Then its vectors landed with its own uses kept
    assert caught_up.embedded == 1
    row = offline.stores.memories.get_memory(ALICE, learned.memory_id)
    assert row is not None and row.embedding is not None
    assert row.meta["uses"] == ["fish"] * 3 and "uses_from" not in row.meta


def test_the_local_server_heals_a_typed_memory_with_the_offline_model(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given the local wiring with no model key, its embedder failing for one write
    container = Wired(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    embedder = container.indexer.embedder
    real = embedder.embed
    embedder.embed = _unreachable  # type: ignore[method-assign]
    memory = container.memories.create(ALICE, SALMON).memory
    embedder.embed = real  # type: ignore[method-assign]

    # When the dev server's worker (or a test) drains the queue
    assert container.jobs_run_here is not None and container.jobs_run_here.run_pending() == 1

    # Then the row has its vectors
    row = container.stores.memories.get_memory(ALICE, memory.memory_id)
    assert row is not None and row.embedding is not None


def _unreachable(texts: Sequence[str]) -> Vectors:
    raise ConnectionError("embedder unreachable")
