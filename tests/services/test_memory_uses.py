"""Uses written for memories that came without them (services/uses.py), on both stores:
queued by the write, never waited on; written by the job over the row as it read it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.local_jobs import Job, QueuedJobs, UsesJob
from chatmemory.config import Settings
from chatmemory.domain import vectors
from chatmemory.domain.errors import MemoryDisabled
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.uses import CATEGORY_USES, MAX_USES
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.uses import HandedOff, UsesWriter, UsesWritten
from tests.support.functions import Wired
from tests.support.product import ALICE, Product
from tests.support.scripted_uses import DEFAULT_USES, ScriptedUses

CELLO = NewMemory(text="Plays the cello in a community orchestra.", category="hobbies")
VEGETARIAN = NewMemory(text="Is vegetarian.", category="diet")
VEGETARIAN_USES = (
    "what should I cook tonight",
    "ordering at a restaurant",
    "is this snack ok for me",
    "a dinner party menu",
    "getting enough protein",
    "snacks for a long train ride",
)


def borrowed_from(category: str, meta: dict[str, object]) -> bool:
    """Whether a row's uses are borrowed, its category's first, then as many of the nearest
    other category's as its budget holds."""
    uses = meta.get("uses")
    own = list(CATEGORY_USES[category])
    return (
        meta.get("uses_from") == "category"
        and isinstance(uses, list)
        and uses[: len(own)] == own
        and len(own) < len(uses) <= MAX_USES
        and not set(uses[len(own) :]) & set(own)
    )


class Recorded(QueuedJobs):
    """The local queue, which runs uses jobs through the writer and keeps every one it was
    given (what the SQS message would have named)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.uses_jobs: list[UsesJob] = []

    def enqueue(self, job: Job) -> bool:
        if isinstance(job, UsesJob):
            self.uses_jobs.append(job)
        return super().enqueue(job)


@dataclass
class World:
    stores: Stores
    clock: ManualClock
    model: ScriptedUses
    jobs: Recorded
    memories: MemoryService
    writer: UsesWriter
    index: ExactIndex
    embedder: HashingEmbedder

    def row(self, memory_id: str) -> Memory:
        found = self.stores.memories.get_memory(ALICE, memory_id)
        assert found is not None
        return found

    def borrowed(self, memory_id: str) -> bool:
        [digest] = [d for d in self.stores.recall.memory_digests(ALICE) if d.memory_id == memory_id]
        return digest.borrowed_uses

    def indexed(self, memory_id: str) -> tuple[int, bool | None]:
        """How many use vectors the in-process index scores the memory by, and whether it
        takes them for borrowed: what its cached matrix holds."""
        query = self.embedder.embed(["anything at all"])[0]
        [hit] = [h for h in self.index.search(ALICE, query, k=50) if h.memory_id == memory_id]
        return len(hit.uses), hit.borrowed_uses


@pytest.fixture
def world(stores: Stores, clock: ManualClock) -> World:
    embedder = HashingEmbedder()
    index = ExactIndex(stores.recall)
    indexer = MemoryIndexer(embedder, index)
    model = ScriptedUses({VEGETARIAN.text: VEGETARIAN_USES})
    writer = UsesWriter(stores, model, indexer)
    jobs = Recorded(clock)

    def run(job: Job) -> None:
        if isinstance(job, UsesJob):
            writer.write(job.user_id, job.memory_ids)

    jobs.bind(run)
    memories = MemoryService(stores, clock, indexer, uses_jobs=jobs)
    return World(stores, clock, model, jobs, memories, writer, index, embedder)


# ---- a typed memory ---------------------------------------------------------------------


def test_a_typed_memory_is_stored_at_once_and_gets_its_own_uses_when_the_job_runs(
    world: World,
) -> None:
    # Given a memory the user typed, with no uses of its own
    memory = world.memories.create(ALICE, VEGETARIAN).memory

    # Then it is stored at once with its category's uses, and the model was not asked:
    # the request never waits for it; a job naming only the user and the memory waits
    assert world.model.asked == []
    assert borrowed_from("diet", memory.meta)
    assert world.borrowed(memory.memory_id)
    assert world.jobs.uses_jobs == [UsesJob(ALICE, (memory.memory_id,))]
    assert world.indexed(memory.memory_id) == (len(memory.meta["uses"]), True)

    # When the job runs
    world.jobs.run_pending()

    # Then the model was asked once, by its words and category, and its uses landed with
    # their vectors, which recall now scores it by
    [[asked]] = world.model.asked
    assert (asked.text, asked.category) == (VEGETARIAN.text, "diet")
    stored = world.row(memory.memory_id)
    assert stored.meta == {"uses": list(VEGETARIAN_USES)}
    assert stored.embedding is not None
    assert len(vectors.unpack_rows(stored.embedding)) == 1 + len(VEGETARIAN_USES)
    assert not world.borrowed(memory.memory_id)
    assert world.indexed(memory.memory_id) == (len(VEGETARIAN_USES), False)
    # and nothing about what the memory says changed
    assert (stored.text, stored.updated_at, stored.status) == (
        memory.text,
        memory.updated_at,
        Status.ACTIVE,
    )


def test_running_the_job_again_changes_nothing_and_asks_no_model(world: World) -> None:
    memory = world.memories.create(ALICE, VEGETARIAN).memory
    world.jobs.run_pending()
    written = world.row(memory.memory_id)

    again = world.writer.write(ALICE, [memory.memory_id])

    assert again == UsesWritten()
    assert len(world.model.asked) == 1
    assert world.row(memory.memory_id) == written


def test_stating_a_memory_again_queues_nothing_more(world: World) -> None:
    world.memories.create(ALICE, VEGETARIAN)
    world.memories.create(ALICE, VEGETARIAN)

    assert len(world.jobs.uses_jobs) == 1


# ---- saved in a chat ----------------------------------------------------------------------


def test_a_memory_the_chat_saved_without_uses_gets_them_and_one_with_uses_keeps_its_own(
    world: World,
) -> None:
    # Given one save_memory call without uses, and one with the model's own
    bare = world.memories.remember_from_chat(ALICE, CELLO)
    given = world.memories.remember_from_chat(
        ALICE, NewMemory(text="Lives in Pune.", category="location", uses=("weather in Pune",) * 3)
    )

    # Then only the first waits for uses, and gets them once the job runs
    assert world.jobs.uses_jobs == [UsesJob(ALICE, (bare.memory_id,))]
    world.jobs.run_pending()
    assert world.row(bare.memory_id).meta == {"uses": list(DEFAULT_USES)}
    assert world.row(given.memory_id).meta == given.meta


def test_a_chat_correction_without_uses_gets_them(world: World) -> None:
    pune = world.memories.create(ALICE, NewMemory(text="Lives in Pune.", key="home_city")).memory
    world.jobs.run_pending()

    moved = world.memories.remember_from_chat(
        ALICE, NewMemory(text="Moved to Bengaluru.", category="location", key="home_city")
    )

    assert moved.supersedes == pune.memory_id
    assert world.jobs.uses_jobs[-1] == UsesJob(ALICE, (moved.memory_id,))
    world.jobs.run_pending()
    # its own uses, and still the reach of the words it replaced (domain/reach.py)
    assert world.row(moved.memory_id).meta == {"uses": list(DEFAULT_USES), "reach": "replaced"}


# ---- corrected --------------------------------------------------------------------------


def test_a_correction_carries_the_old_uses_marked_carried_then_gets_its_own(
    world: World,
) -> None:
    # Given a memory with uses of its own
    memory = world.memories.create(ALICE, VEGETARIAN).memory
    world.jobs.run_pending()

    # When the user corrects it, in the same category
    corrected = world.memories.correct(ALICE, memory.memory_id, text="Is vegan.")

    # Then the new version is stored at once with the old uses, marked as carried, which
    # recall still counts as the memory's own, beside the reach of the words it replaced;
    # and a job waits for uses of its own words
    assert corrected.meta == {
        "uses": list(VEGETARIAN_USES),
        "uses_from": "carried",
        "reach": "replaced",
    }
    assert not world.borrowed(corrected.memory_id)
    assert world.jobs.uses_jobs[-1] == UsesJob(ALICE, (corrected.memory_id,))
    world.jobs.run_pending()
    assert world.model.asked[-1][0].text == "Is vegan."
    assert world.row(corrected.memory_id).meta == {"uses": list(DEFAULT_USES), "reach": "replaced"}
    # and the version it replaced, now history, was never written over
    [history] = world.stores.memories.get_memories(ALICE, [memory.memory_id])
    assert history.status is Status.SUPERSEDED and history.meta == {"uses": list(VEGETARIAN_USES)}


def test_a_correction_into_another_category_borrows_that_ones_and_gets_its_own(
    world: World,
) -> None:
    memory = world.memories.create(ALICE, VEGETARIAN).memory
    world.jobs.run_pending()

    corrected = world.memories.correct(
        ALICE, memory.memory_id, text="Is allergic to peanuts.", category="health"
    )

    assert borrowed_from("health", corrected.meta)
    assert corrected.meta["reach"] == "replaced"
    world.jobs.run_pending()
    assert world.row(corrected.memory_id).meta == {"uses": list(DEFAULT_USES), "reach": "replaced"}


# ---- races: whatever the user did meanwhile wins --------------------------------------------


def _while_the_model_writes(world: World, change: Callable[[str], object]) -> tuple[str, object]:
    """A typed memory whose job runs while `change(memory_id)` happens mid-call."""
    memory_id = world.memories.create(ALICE, VEGETARIAN).memory.memory_id
    outcome: list[object] = []
    world.model.during = lambda: outcome.append(change(memory_id))
    written = world.writer.write(ALICE, [memory_id])
    world.model.during = None
    return memory_id, (written, *outcome)


def test_a_correction_between_the_read_and_the_write_wins(world: World) -> None:
    # Given the uses job reading a memory, and the user correcting it before the model
    # has answered
    memory_id, (written, corrected) = _while_the_model_writes(
        world, lambda memory_id: world.memories.correct(ALICE, memory_id, text="Is vegan.")
    )

    # Then nothing was written over the corrected row: its history keeps what it had, and
    # the correction is the belief, waiting for uses of its own words
    assert isinstance(corrected, Memory) and isinstance(written, UsesWritten)
    assert (written.asked, written.written, written.changed) == (1, 0, 1)
    [history] = world.stores.memories.get_memories(ALICE, [memory_id])
    assert history.status is Status.SUPERSEDED
    assert borrowed_from("diet", history.meta)
    assert [m.text for m in world.stores.memories.iter_memories(ALICE)] == ["Is vegan."]
    assert world.jobs.uses_jobs[-1] == UsesJob(ALICE, (corrected.memory_id,))


def test_a_delete_between_the_read_and_the_write_wins(world: World) -> None:
    memory_id, (written, _) = _while_the_model_writes(
        world, lambda memory_id: world.memories.delete(ALICE, memory_id)
    )

    assert isinstance(written, UsesWritten) and written.changed == 1
    assert world.stores.memories.get_memories(ALICE, [memory_id]) == []
    assert world.stores.recall.memory_digests(ALICE) == []
    query = world.embedder.embed(["what should I cook tonight"])[0]
    assert world.index.search(ALICE, query, k=5) == []


def test_a_use_between_the_read_and_the_write_does_not_stop_it(world: World) -> None:
    memory_id, (written, _) = _while_the_model_writes(
        world,
        lambda memory_id: world.stores.memories.record_use(ALICE, [memory_id], world.clock.now()),
    )

    assert isinstance(written, UsesWritten) and written.written == 1
    assert world.row(memory_id).meta == {"uses": list(VEGETARIAN_USES)}
    assert world.row(memory_id).recall_count == 1


# ---- failures: the borrowed uses stay, nothing breaks -------------------------------------


def test_a_model_failure_leaves_the_category_uses_and_raises_nothing(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a model that cannot answer
    world.model.failing = True
    memory = world.memories.create(ALICE, VEGETARIAN).memory

    # When the job runs
    with caplog.at_level(logging.INFO, logger="chatmemory"):
        written = world.writer.write(ALICE, [memory.memory_id])

    # Then the memory keeps its category's uses, and the failure is logged by kind and
    # count only, never with the memory's words
    assert (written.asked, written.unwritten) == (1, 1)
    assert world.row(memory.memory_id) == memory
    failures = [r for r in caplog.records if r.getMessage() == "memory uses not written"]
    assert [r.__dict__["error_type"] for r in failures] == ["ModelUnavailable"]
    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "vegetarian" not in logged.casefold()
    # and a later run, the model back, catches it up
    world.model.failing = False
    assert world.writer.catch_up().written == 1
    assert world.row(memory.memory_id).meta == {"uses": list(VEGETARIAN_USES)}


def test_the_sweep_hands_a_failed_uses_job_back_and_it_runs(world: World) -> None:
    # Given a memory whose uses job ran while the model failed (its queue keeps no retry)
    world.model.failing = True
    memory = world.memories.create(ALICE, VEGETARIAN).memory
    world.jobs.run_pending()
    assert world.borrowed(memory.memory_id)

    # When the daily sweep hands the waiting rows back to the queue, the model back
    world.model.failing = False
    handed = world.writer.hand_off(world.jobs)
    world.jobs.run_pending()

    # Then its uses are its own now, and nothing waits any more
    assert handed == HandedOff(rows=1)
    assert world.row(memory.memory_id).meta == {"uses": list(VEGETARIAN_USES)}
    assert world.writer.hand_off(world.jobs) == HandedOff()


def test_a_memory_the_model_could_not_index_keeps_its_category_uses(world: World) -> None:
    world.model.uses = {VEGETARIAN.text: ()}
    memory = world.memories.create(ALICE, VEGETARIAN).memory

    written = world.writer.write(ALICE, [memory.memory_id])

    assert (written.asked, written.unwritten) == (1, 1)
    assert world.row(memory.memory_id) == memory


def test_a_queue_that_fails_never_fails_the_write(world: World) -> None:
    class Broken(Recorded):
        def uses_later(self, user_id: str, memory_ids: Sequence[str]) -> None:
            raise ConnectionError("the queue is down")

    indexer = MemoryIndexer(world.embedder, world.index)
    memories = MemoryService(world.stores, world.clock, indexer, uses_jobs=Broken(world.clock))

    memory = memories.create(ALICE, VEGETARIAN).memory

    assert world.row(memory.memory_id) == memory


# ---- memory off, temporary chats, the offline model: no job, no model call ---------------


def test_memory_switched_off_before_the_job_runs_sends_nothing_to_the_model(
    world: World,
) -> None:
    memory = world.memories.create(ALICE, VEGETARIAN).memory
    SettingsService(world.stores, world.clock).update(ALICE, enabled=False)

    world.jobs.run_pending()

    assert world.model.asked == []
    assert world.row(memory.memory_id) == memory


def test_with_memory_off_nothing_is_stored_and_no_job_queued(world: World) -> None:
    SettingsService(world.stores, world.clock).update(ALICE, enabled=False)

    with pytest.raises(MemoryDisabled):
        world.memories.create(ALICE, VEGETARIAN)

    assert world.jobs.uses_jobs == [] and world.model.asked == []


def test_a_temporary_chat_or_memory_off_queues_no_uses_job(
    stores: Stores, clock: ManualClock
) -> None:
    # Given the chat wired as config wires it, with a queue that records uses jobs
    jobs = Recorded(clock)
    product = Product(stores, clock, uses_jobs=jobs)

    # When the user asks a temporary chat to remember something, and then a normal chat
    # with memory switched off
    product.say("Remember that I play the cello.", temporary=True)
    product.settings.update(ALICE, enabled=False)
    product.say("Remember that I play the cello.")

    # Then nothing was stored and no uses job was queued
    assert product.active() == [] and jobs.uses_jobs == []

    # While with memory on, the same words are saved and their uses job queued
    product.settings.update(ALICE, enabled=True)
    saved = product.say("Remember that I play the cello.").saved
    assert saved and jobs.uses_jobs == [UsesJob(ALICE, tuple(saved))]


def test_with_the_offline_model_the_container_queues_no_uses_job(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given the local wiring with no model key: the offline stand-in, which cannot read
    container = Wired(Settings(state_dir=tmp_path, embedder="hashing"), clock)

    # When a memory is typed
    memory = container.memories.create(ALICE, VEGETARIAN).memory

    # Then it keeps its category's uses and no job waits
    assert not container.model_writes_uses
    assert container.jobs_run_here is not None and container.jobs_run_here.run_pending() == 0
    assert memory.meta["uses_from"] == "category"


def test_with_a_model_that_writes_uses_the_local_queue_runs_the_job(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given the local wiring with a Claude key (the model itself scripted)
    settings = Settings(state_dir=tmp_path, embedder="hashing", anthropic_api_key="test-key")
    model = ScriptedUses({VEGETARIAN.text: VEGETARIAN_USES})
    container = Wired(settings, clock, model)

    # When a memory is typed and the dev server's worker (or a test) drains the queue
    memory = container.memories.create(ALICE, VEGETARIAN).memory
    assert container.model_writes_uses and model.asked == []
    assert container.jobs_run_here is not None and container.jobs_run_here.run_pending() == 1

    # Then its own uses landed
    stored = container.stores.memories.get_memory(ALICE, memory.memory_id)
    assert stored is not None and stored.meta == {"uses": list(VEGETARIAN_USES)}


def test_the_catch_up_writes_what_no_job_ran_for_every_user(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Given memories of two users stored while no model could write uses (the offline
    # stand-in), and one written with its own
    offline = Wired(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    typed = [
        offline.memories.create(ALICE, VEGETARIAN).memory,
        offline.memories.create("bob", CELLO).memory,
    ]
    own = offline.memories.create(
        ALICE, NewMemory(text="Lives in Pune.", category="location", uses=("weather",) * 3)
    ).memory

    # When `chatmemory flush` runs with a model that can write them
    settings = Settings(state_dir=tmp_path, embedder="hashing", anthropic_api_key="test-key")
    model = ScriptedUses({VEGETARIAN.text: VEGETARIAN_USES})
    caught_up = Wired(settings, clock, model).uses.catch_up()

    # Then each waiting memory got its own, one call per user, and nothing waits any more
    assert caught_up.written == 2
    assert sorted(len(call) for call in model.asked) == [1, 1]
    for memory in typed:
        stored = offline.stores.memories.get_memory(memory.user_id, memory.memory_id)
        assert stored is not None and "uses_from" not in stored.meta
    assert offline.stores.memories.get_memory(ALICE, own.memory_id) == own
    assert offline.stores.memories.pending_uses() == []
