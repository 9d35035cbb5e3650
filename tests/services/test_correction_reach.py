"""A corrected memory keeps the reach of the version it replaced (domain/reach.py), on both
stores: a question that found the old words finds the correction, only the new words are
ever sent, and deleting the old version takes its words out of the vectors for real."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.domain import reach, vectors
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.purge import PurgeRequest
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.stores import Stores
from chatmemory.services import memories as memories_module
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.purge import PurgePipeline
from chatmemory.services.reindex import Reindexer
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever

ALICE = "alice"
COMMUTE = NewMemory(text="Commutes to the office by bike.", category="work")
AT_HOME = "Works from home now."
# Facts about her that compete with whatever a question needs.
OTHERS = [
    ("Works as a nurse on the night shift.", "work"),
    ("Has a dog named Bruno.", "pets"),
    ("Plays the guitar in a weekend band.", "hobbies"),
    ("Is learning Japanese.", "language"),
    ("Drives a 2015 Honda Civic.", "general"),
]


class Flaky:
    """An embedder that fails while `down`, as a throttled Bedrock would."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.down = inner, False
        self.name, self.dimensions = inner.name, inner.dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.down:
            raise TimeoutError("embedder unavailable")
        vectors_: Vectors = self.inner.embed(texts)
        return vectors_


@dataclass
class World:
    stores: Stores
    clock: ManualClock
    embedder: Flaky
    index: ExactIndex
    memories: MemoryService
    retriever: Retriever

    def row(self, memory_id: str, user: str = ALICE) -> Memory:
        found = self.stores.memories.get_memory(user, memory_id)
        assert found is not None
        return found

    def rows(self, memory_id: str) -> int:
        embedding = self.row(memory_id).embedding
        assert embedding is not None
        return len(vectors.unpack_rows(embedding))

    def indexed_uses(self, memory_id: str) -> int:
        """How many vectors besides its words the index scores the memory by."""
        query = self.embedder.embed(["anything at all"])[0]
        [hit] = [h for h in self.index.search(ALICE, query, k=50) if h.memory_id == memory_id]
        return len(hit.uses)

    def most_rows(self) -> int:
        """The most vectors a row holds: its words and as many uses as fit its budget."""
        return 1 + MemoryIndexer(self.embedder, self.index).max_uses

    def reach_row(self, memory_id: str) -> Any:
        embedding = self.row(memory_id).embedding
        assert embedding is not None
        return vectors.unpack_rows(embedding)[reach.REACH_ROW]

    def closeness(self, vector: Any, text: str) -> float:
        [other] = self.embedder.embed([text])
        return float(vector @ other / (abs(vector @ vector) ** 0.5 * abs(other @ other) ** 0.5))

    def recalled(self, message: str) -> list[Memory]:
        return [item.memory for item in self.retriever.recall(ALICE, message)]

    def purge(self) -> None:
        def no_folder() -> Any:
            raise AssertionError("no summary to rewrite here")

        pipeline = PurgePipeline(self.stores, self.clock, index=self.index, folder=no_folder)
        pipeline.run(PurgeRequest(user_id=ALICE, as_of=self.clock.now()))


def make_world(stores: Stores, clock: ManualClock, embedder: Any) -> World:
    flaky = Flaky(embedder)
    index = ExactIndex(stores.recall)
    relevance = RelevanceModel(flaky, params_for(flaky.name))
    return World(
        stores,
        clock,
        flaky,
        index,
        MemoryService(stores, clock, MemoryIndexer(flaky, index)),
        Retriever(stores, flaky, index, clock, relevance),
    )


@pytest.fixture
def world(stores: Stores, clock: ManualClock) -> World:
    return make_world(stores, clock, HashingEmbedder())


# ---- what the user notices, with the real local model ------------------------------------


def test_a_question_the_old_words_answered_finds_the_correction_until_they_are_deleted(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given Alice's commute among other things about her, then her correction of it
    world = make_world(stores, clock, minilm)
    for text, category in OTHERS:
        world.memories.create(ALICE, NewMemory(text=text, category=category))
    old = world.memories.create(ALICE, COMMUTE).memory
    question = "Will it rain on my ride to the office tomorrow?"
    assert COMMUTE.text in [m.text for m in world.recalled(question)]
    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)

    # When she asks what her commute answered, in words the correction no longer uses
    recalled = world.recalled(question)

    # Then the correction is what comes back first, and only its words: the old ones never
    assert recalled[0].memory_id == corrected.memory_id
    assert all(COMMUTE.text not in m.text for m in recalled)

    # When she deletes the old version from the history
    reached = world.retriever.candidates(ALICE, question)[corrected.memory_id]
    world.memories.delete(ALICE, old.memory_id)

    # Then its words reach nothing any more: the correction matches the question only by
    # its own words and uses, as a memory that never replaced anything would
    left = world.retriever.candidates(ALICE, question)[corrected.memory_id]
    assert left < reached - 0.1
    assert world.row(corrected.memory_id).text == AT_HOME


# ---- what the row holds ---------------------------------------------------------------------


def test_the_corrected_row_embeds_the_words_it_replaced_after_its_own(world: World) -> None:
    old = world.memories.create(ALICE, COMMUTE).memory
    own_rows = world.rows(old.memory_id)

    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)

    # one more row than a memory of its own (in place of its last use when its uses fill
    # the row's budget), the replaced words in it, marked as such
    assert world.rows(corrected.memory_id) == min(own_rows + 1, world.most_rows())
    assert world.closeness(world.reach_row(corrected.memory_id), COMMUTE.text) > 0.99
    assert world.row(corrected.memory_id).meta[reach.REACH] == reach.REPLACED
    assert world.indexed_uses(corrected.memory_id) == world.rows(corrected.memory_id) - 1
    # the history row is left as it was
    history = world.row(old.memory_id)
    assert history.status is Status.SUPERSEDED and history.embedding == old.embedding
    assert reach.REACH not in history.meta


def test_a_correction_of_a_correction_reaches_only_the_version_it_replaced(world: World) -> None:
    first = world.memories.create(ALICE, COMMUTE).memory
    second = world.memories.correct(ALICE, first.memory_id, text="Commutes by train now.")

    third = world.memories.correct(ALICE, second.memory_id, text=AT_HOME)

    assert world.rows(third.memory_id) == min(world.rows(first.memory_id) + 1, world.most_rows())
    assert world.closeness(world.reach_row(third.memory_id), "Commutes by train now.") > 0.99
    assert world.closeness(world.reach_row(third.memory_id), COMMUTE.text) < 0.99


def test_a_rewording_that_changes_only_case_and_stops_keeps_no_second_copy(world: World) -> None:
    old = world.memories.create(ALICE, COMMUTE).memory

    same = world.memories.correct(ALICE, old.memory_id, text="commutes to the office by bike")

    assert world.rows(same.memory_id) == world.rows(old.memory_id)
    assert reach.REACH not in world.row(same.memory_id).meta


def test_the_reach_survives_a_reindex_while_the_old_version_is_kept(world: World) -> None:
    old = world.memories.create(ALICE, COMMUTE).memory
    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)
    before = world.row(corrected.memory_id)

    Reindexer(world.stores, MemoryIndexer(world.embedder, world.index)).reindex_user(
        ALICE, reembed=True
    )

    after = world.row(corrected.memory_id)
    assert after.meta == before.meta
    assert world.rows(corrected.memory_id) == len(vectors.unpack_rows(before.embedding or b""))
    assert world.closeness(world.reach_row(corrected.memory_id), COMMUTE.text) > 0.99


def test_a_correction_written_while_the_embedder_is_down_gets_its_reach_on_the_reindex(
    world: World,
) -> None:
    # Given a correction stored while the embedder failed: the words, no vectors, no mark
    old = world.memories.create(ALICE, COMMUTE).memory
    world.embedder.down = True
    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)
    assert corrected.embedding is None and reach.REACH not in corrected.meta

    # When the re-index embeds it, the old version still kept
    world.embedder.down = False
    Reindexer(world.stores, MemoryIndexer(world.embedder, world.index)).reindex_user(ALICE)

    # Then it reaches the old words like any correction
    assert world.row(corrected.memory_id).meta[reach.REACH] == reach.REPLACED
    assert world.closeness(world.reach_row(corrected.memory_id), COMMUTE.text) > 0.99


# ---- deleting the old version ---------------------------------------------------------------


def test_deleting_the_old_version_cuts_its_row_and_leaves_the_rest_byte_for_byte(
    world: World,
) -> None:
    # Given a correction that reaches the words it replaced
    old = world.memories.create(ALICE, COMMUTE).memory
    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)
    before = world.row(corrected.memory_id)
    assert before.embedding is not None
    rows_before = vectors.unpack_rows(before.embedding)

    # When the user deletes the old version
    world.memories.delete(ALICE, old.memory_id)

    # Then the row lost exactly that vector and its mark, at once and in the index
    after = world.row(corrected.memory_id)
    assert after.embedding is not None
    rows_after = vectors.unpack_rows(after.embedding)
    assert len(rows_after) == len(rows_before) - 1
    assert (rows_after[0] == rows_before[0]).all()
    assert (rows_after[1:] == rows_before[2:]).all()
    assert reach.REACH not in after.meta
    assert (after.text, after.meta.get("uses")) == (before.text, before.meta.get("uses"))
    assert world.indexed_uses(corrected.memory_id) == len(rows_after) - 1
    # and the purge that follows finds nothing more to cut
    world.purge()
    assert world.row(corrected.memory_id) == after


def test_deleting_the_oldest_version_cuts_it_from_the_history_row_that_replaced_it(
    world: World,
) -> None:
    first = world.memories.create(ALICE, COMMUTE).memory
    second = world.memories.correct(ALICE, first.memory_id, text="Commutes by train now.")
    third = world.memories.correct(ALICE, second.memory_id, text=AT_HOME)
    current_before = world.row(third.memory_id)
    history_rows = world.rows(second.memory_id)

    world.memories.delete(ALICE, first.memory_id)

    history = world.row(second.memory_id)
    assert history.status is Status.SUPERSEDED
    assert reach.REACH not in history.meta
    assert world.rows(second.memory_id) == history_rows - 1
    # the current row reaches the version it replaced, which is still kept
    assert world.row(third.memory_id) == current_before


def test_a_cut_the_delete_could_not_make_is_made_by_the_purge(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a delete whose cut failed (a store error): the delete still stands
    old = world.memories.create(ALICE, COMMUTE).memory
    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)

    def broken(*_: object, **__: object) -> int:
        raise ConnectionError("store unavailable")

    monkeypatch.setattr(memories_module, "cut_reach_to", broken)
    world.memories.delete(ALICE, old.memory_id)
    assert world.stores.memories.get_memory(ALICE, old.memory_id) is None
    assert reach.reaches_replaced(world.row(corrected.memory_id))

    # When the purge runs
    world.purge()

    # Then the words are out of the row and out of the index
    assert not reach.reaches_replaced(world.row(corrected.memory_id))
    assert world.indexed_uses(corrected.memory_id) == world.rows(corrected.memory_id) - 1


def test_deleting_the_old_version_before_the_uses_are_written_still_cuts_it(
    stores: Stores, clock: ManualClock
) -> None:
    # A correction carries the old uses until its own are written: the cut must not wait.
    world = make_world(stores, clock, HashingEmbedder())
    old = world.memories.create(ALICE, COMMUTE).memory
    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)
    assert corrected.meta.get("uses_from") in {"carried", "category"}

    world.memories.delete(ALICE, old.memory_id)

    after = world.row(corrected.memory_id)
    assert not reach.reaches_replaced(after)
    assert after.meta.get("uses_from") == corrected.meta.get("uses_from")


def test_undoing_the_correction_believes_the_old_words_again_with_no_reach(world: World) -> None:
    old = world.memories.create(ALICE, COMMUTE).memory
    corrected = world.memories.correct(ALICE, old.memory_id, text=AT_HOME)

    assert world.memories.undo_writes(ALICE, [corrected.memory_id]) == [corrected.memory_id]

    restored = world.row(old.memory_id)
    assert restored.status is Status.ACTIVE and restored.text == COMMUTE.text
    assert reach.REACH not in restored.meta
    assert [m.memory_id for m in world.recalled("commutes to the office by bike")] == [
        old.memory_id
    ]
