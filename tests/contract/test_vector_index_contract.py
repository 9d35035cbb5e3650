"""The VectorIndex contract: the exact index and OpenSearch (through opensearch-py against an
executing fake collection) return the same hits for the same writes — OpenSearch in each
vector encoding it can create (float32, fp16, byte), scored as the collection would.

Writes go through the store *and* the index, as the services do; the OpenSearch fake
refreshes after each write here (its refresh lag is covered in test_context_on_indexes).
The tests' 4-d directions are spread over 64 dimensions (each value repeated 16 times):
cosines are unchanged, and no component exceeds what a real embedding's does, which is
what the byte encoding's scale is set for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.opensearch_index import OpenSearchIndex
from chatmemory.adapters.sqlite import Database, sqlite_stores
from chatmemory.domain import vectors
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Memory
from chatmemory.domain.tombstone import Tombstone
from chatmemory.domain.vector_encoding import VectorEncoding
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorIndex
from chatmemory.services.deletions import Deletions
from tests.support import builders
from tests.support.opensearch_fake import FakeCollection

ALICE, BOB = "alice", "bob"
SPREAD = 16
DIMS = 4 * SPREAD


def spread(row: list[float]) -> list[float]:
    return [float(value) for value in np.repeat(np.asarray(row, dtype=np.float32), SPREAD)]


@dataclass
class Indexed:
    stores: Stores
    index: VectorIndex
    clock: ManualClock

    def write(self, user: str, text: str, rows: list[list[float]], **fields: object) -> Memory:
        packed = vectors.pack_rows([spread(row) for row in rows])
        memory = builders.memory(user, text, self.clock.now(), embedding=packed, **fields)  # type: ignore[arg-type]
        self.stores.memories.add_memory(memory)
        self.index.upsert(memory)
        return memory

    def forget(self, memory: Memory) -> None:
        Deletions(self.stores).tombstone_memories(
            memory.user_id,
            [
                Tombstone(
                    user_id=memory.user_id, memory_id=memory.memory_id, deleted_at=self.clock.now()
                )
            ],
        )
        self.index.remove(memory.user_id, [memory.memory_id])


def unit(*values: float) -> Vectors:
    vector = np.asarray(spread(list(values)), dtype=np.float32)
    normalised: Vectors = vector / np.linalg.norm(vector)
    return normalised


@pytest.fixture(params=["exact", *(f"opensearch-{e.value}" for e in VectorEncoding)])
def indexed(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[Indexed]:
    database = Database(tmp_path / "s.sqlite3", clock=clock)
    stores = sqlite_stores(database)
    index: VectorIndex
    if request.param == "exact":
        index = ExactIndex(stores.recall)
    else:
        opensearch = OpenSearchIndex(
            client=FakeCollection(refresh_on_write=True).client(),
            index_name="memories",
            dimensions=DIMS,
            clock=clock,
            encoding=VectorEncoding(request.param.removeprefix("opensearch-")),
        )
        opensearch.ensure_index()
        index = opensearch
    yield Indexed(stores, index, clock)
    database.close()


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.memory_id for hit in hits]


def test_hits_are_the_users_own_best_first_at_most_k(indexed: Indexed) -> None:
    near = indexed.write(ALICE, "near", [[1, 0, 0, 0]])
    middle = indexed.write(ALICE, "middle", [[1, 1, 0, 0]])
    far = indexed.write(ALICE, "far", [[0, 0, 1, 0]])
    indexed.write(BOB, "bob's exact match", [[1, 0, 0, 0]])

    hits = indexed.index.search(ALICE, unit(1, 0, 0, 0), k=2)

    assert ids(hits) == [near.memory_id, middle.memory_id]
    assert hits[0].score == pytest.approx(1.0, abs=0.02)
    assert far.memory_id not in ids(hits)


def test_a_memory_counts_once_with_its_best_row(indexed: Indexed) -> None:
    # Row 0 is what it says, row 1 what it is useful for.
    uses_match = indexed.write(ALICE, "vegetarian", [[0, 0, 1, 0], [1, 0, 0, 0]])
    words_match = indexed.write(ALICE, "other", [[0.9, 0.1, 0, 0]])

    hits = indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5)

    assert ids(hits) == [uses_match.memory_id, words_match.memory_id]
    best = hits[0]
    assert best.useful == pytest.approx(1.0, abs=0.02)
    assert best.said == pytest.approx(0.0, abs=0.02)


def test_persona_scopes_the_search(indexed: Indexed) -> None:
    assistant = indexed.write(ALICE, "assistant's", [[1, 0, 0, 0]])
    warren = indexed.write(ALICE, "warren's", [[1, 0, 0, 0]], persona="warren")

    assert ids(indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5, persona="warren")) == [
        warren.memory_id
    ]
    assert set(ids(indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5))) == {
        assistant.memory_id,
        warren.memory_id,
    }


def test_a_memory_past_its_shelf_life_is_not_found(indexed: Indexed) -> None:
    trip = indexed.write(
        ALICE, "trip", [[1, 0, 0, 0]], valid_until=indexed.clock.now() + timedelta(days=1)
    )
    assert ids(indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5)) == [trip.memory_id]

    indexed.clock.advance(timedelta(days=1, seconds=1))

    assert indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5) == []


def test_a_forgotten_memory_is_not_found(indexed: Indexed) -> None:
    gone = indexed.write(ALICE, "gone", [[1, 0, 0, 0]])
    kept = indexed.write(ALICE, "kept", [[0.8, 0.2, 0, 0]])

    indexed.forget(gone)

    assert ids(indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5)) == [kept.memory_id]


def test_the_digests_a_turn_already_read_give_the_same_hits(indexed: Indexed) -> None:
    # A turn that read the store's digests for the reference book hands them to the search
    indexed.write(ALICE, "near", [[1, 0, 0, 0]])
    indexed.write(ALICE, "warren's", [[0.9, 0.1, 0, 0]], persona="warren")
    gone = indexed.write(ALICE, "gone", [[1, 0, 0, 0]])
    indexed.forget(gone)

    for persona in (None, "warren"):
        visible = indexed.stores.recall.memory_digests(ALICE, persona)
        given = indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5, persona=persona, visible=visible)
        assert given == indexed.index.search(ALICE, unit(1, 0, 0, 0), k=5, persona=persona)
        assert gone.memory_id not in ids(given)


@pytest.mark.parametrize("user", ["", None])
def test_no_search_without_a_user(indexed: Indexed, user: str | None) -> None:
    indexed.write(ALICE, "anything", [[1, 0, 0, 0]])

    with pytest.raises(InvalidField):
        indexed.index.search(user, unit(1, 0, 0, 0), k=5)  # type: ignore[arg-type]
