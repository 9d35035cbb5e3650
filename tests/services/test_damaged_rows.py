"""A memory row damaged in place (a time an older release stored as it could not read it
back, a kind no rule knows) never keeps its owner from deleting it, from forgetting
everything, or from being told the truth about an import, on both stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.api.portability_schemas import ExportDocument, ImportBatch
from chatmemory.domain.errors import PartlyApplied
from chatmemory.domain.memory import Memory
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.portability import PortabilityService
from tests.support.damaged import SQLITE_FILE, YEAR_ONE_AS_STORED, damage_memory

ALICE = "alice"


@pytest.fixture
def memories(stores: Stores, clock: ManualClock) -> MemoryService:
    return MemoryService(stores, clock, MemoryIndexer(HashingEmbedder(), ExactIndex(stores.recall)))


@pytest.fixture
def portability(stores: Stores, clock: ManualClock, memories: MemoryService) -> PortabilityService:
    return PortabilityService(stores, clock, memories)


def damaged(stores: Stores, memories: MemoryService, tmp_path: Path, text: str) -> Memory:
    """A memory of Alice's whose learned-at time and kind no longer read."""
    memory = memories.create(ALICE, NewMemory(text=text)).memory
    damage_memory(
        stores,
        tmp_path / SQLITE_FILE,
        ALICE,
        memory.memory_id,
        created_at=YEAR_ONE_AS_STORED,
        kind="no-such-kind",
    )
    return memory


def listed(memories: MemoryService) -> list[str]:
    return [m.text for m in memories.list_memories(ALICE, status=None, limit=100).items]


def test_a_damaged_memory_is_deleted_like_any_other(
    stores: Stores, memories: MemoryService, tmp_path: Path
) -> None:
    # Given Alice keeps one memory, and another is damaged in the store
    memories.create(ALICE, NewMemory(text="Is vegetarian."))
    broken = damaged(stores, memories, tmp_path, "Has a cat named Miso.")

    # When she deletes the damaged one
    tombstone = memories.delete(ALICE, broken.memory_id)

    # Then it is gone from every read, and she can list and export what she keeps
    assert tombstone.versions == (broken.memory_id,)
    assert stores.tombstones.get_tombstone(ALICE, broken.memory_id) is not None
    assert stores.visibility.traces(ALICE, [broken.memory_id]) == []
    assert listed(memories) == ["Is vegetarian."]


def test_forget_everything_forgets_a_damaged_memory_too(
    stores: Stores,
    clock: ManualClock,
    memories: MemoryService,
    portability: PortabilityService,
    tmp_path: Path,
) -> None:
    # Given Alice keeps one memory, and another is damaged in the store
    memories.create(ALICE, NewMemory(text="Is vegetarian."))
    broken = damaged(stores, memories, tmp_path, "Has a cat named Miso.")

    # When she forgets everything
    forgotten = memories.forget_everything(ALICE)

    # Then both are forgotten, the damaged one tombstoned for the purge, and her listing
    # and export answer, empty
    assert forgotten == 2
    assert stores.tombstones.get_tombstone(ALICE, broken.memory_id) is not None
    assert stores.visibility.traces(ALICE) == []
    assert listed(memories) == []
    assert portability.export_page(ALICE, limit=100, cursor=None).memories == []


def test_an_import_that_fails_after_landing_says_what_stands(
    stores: Stores,
    clock: ManualClock,
    memories: MemoryService,
    portability: PortabilityService,
    tmp_path: Path,
) -> None:
    # Given a memory of Alice's damaged in the store, which the import reads back when it
    # settles what the new rows make untrue
    broken = damaged(stores, memories, tmp_path, "Has a cat named Miso.")
    row = {
        "memory_id": "mem_imported_1",
        "text": "Lives in Pune.",
        "category": "location",
        "kind": "fact",
        "persona": "assistant",
        "stated_by": "user",
        "status": "active",
        "created_at": "2025-06-01T10:00:00.000000Z",
        "updated_at": "2025-06-01T10:00:00.000000Z",
    }
    batch = ImportBatch.model_validate({"schema": "chatmemory.export/1", "memories": [row]})

    # When she imports a batch, and it fails once its row has landed
    with pytest.raises(PartlyApplied) as failed:
        portability.import_batch(ALICE, batch.rows(ALICE))

    # Then she is told what was imported and kept, and that the same batch again is safe
    assert "1 memory(ies) of the batch were imported; they are kept" in str(failed.value)
    assert "again is safe" in str(failed.value)
    assert stores.memories.id_in_use(ALICE, "mem_imported_1")
    # And once the damaged row is deleted, the same batch again finds the row it landed
    memories.delete(ALICE, broken.memory_id)
    again = portability.import_batch(ALICE, batch.rows(ALICE))
    assert (again.imported, again.unchanged) == (0, 1)
    exported = ExportDocument.of(portability.export_page(ALICE, limit=100, cursor=None))
    assert [m.text for m in exported.memories] == ["Lives in Pune."]
