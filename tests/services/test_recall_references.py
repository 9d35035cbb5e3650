"""Recall reads a message with the person's own references: "my husband" reaches the
memory that calls him Chris. The book follows the memories in use — a deleted or corrected
memory takes what it said about who is who with it on the very next turn."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.domain.references import References
from chatmemory.ports.embedder import Embedder
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.recall import RecallRequest, RecallService
from chatmemory.services.references import ReferenceBooks
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever

ALICE = "alice"
BOB = "bob"


def _memories(stores: Stores, clock: ManualClock, embedder: Embedder) -> MemoryService:
    return MemoryService(stores, clock, MemoryIndexer(embedder, ExactIndex(stores.recall)))


def test_the_book_follows_the_memories_in_use(stores: Stores, clock: ManualClock) -> None:
    # Given Alice's memories name her husband and her home, and Bob's name his sister
    memories = _memories(stores, clock, HashingEmbedder())
    married = memories.create(ALICE, NewMemory(text="Is married to Chris.", category="family"))
    memories.create(ALICE, NewMemory(text="Lives in Porto, Portugal.", category="location"))
    memories.create(BOB, NewMemory(text="His sister, Ines, is a pilot.", category="family"))
    books = ReferenceBooks(stores)

    # Then each book holds its own person's references, and no one else's
    assert books.of(ALICE) == References({"spouse": ("Chris",)}, "Porto Portugal")
    assert books.of(BOB) == References({"sister": ("Ines",)})

    # When she corrects who her husband is, the book holds the corrected name at once
    corrected = memories.correct(ALICE, married.memory.memory_id, text="Is married to Rui.")
    assert books.of(ALICE).names == {"spouse": ("Rui",)}

    # When she deletes it, the next read no longer knows who he is
    memories.delete(ALICE, corrected.memory_id)
    assert books.of(ALICE) == References({}, "Porto Portugal")


ALICE_LIFE = [
    ("Is married to Chris, a nurse.", "family"),
    ("Chris collects jazz vinyl records.", "family"),
    ("Her best friend, Tasha, lives in Austin.", "relationships"),
    ("Tasha is training for her first marathon.", "relationships"),
    ("Works as a data analyst at a solar company.", "work"),
    ("Likes gift ideas with a price next to each.", "preferences"),
    ("Her wedding anniversary is June 14.", "family"),
    ("Her son's birthday is November 2.", "family"),
    ("Her mother turns 70 in September.", "family"),
    ("Her colleague Omar is getting married in May.", "work"),
    ("Is running a half marathon in the spring.", "health"),
    ("Has a dog named Bruno.", "pets"),
    ("Plays the guitar in a weekend band.", "hobbies"),
    ("Is learning Japanese.", "language"),
    ("Drives a 2015 Honda Civic.", "general"),
]


def _alice_with_her_life(stores: Stores, clock: ManualClock, minilm: Any) -> RelevanceModel:
    """Alice's memories stored with the real model; the relevance recall judges them by."""
    memories = _memories(stores, clock, minilm)
    for text, category in ALICE_LIFE:
        memories.create(ALICE, NewMemory(text=text, category=category))
    return RelevanceModel(minilm, params_for(minilm.name))


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
def test_a_question_naming_a_relation_recalls_what_is_known_by_name(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given facts about Alice's husband and best friend that use only their names
    relevance = _alice_with_her_life(stores, clock, minilm)
    retriever = Retriever(stores, minilm, ExactIndex(stores.recall), clock, relevance)

    # When she asks about her best friend by relation
    question = "What should I get my best friend for her birthday?"
    recalled = [item.memory.text for item in retriever.recall(ALICE, question)]

    # Then what is known of her by name only is in the prompt (without the book, four
    # birthday and gift memories fill the five places)
    assert "Tasha is training for her first marathon." in recalled


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
def test_two_stage_recall_reads_the_query_with_the_same_references(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given the same memories of Alice's husband, known by name only
    recall = RecallService(stores, minilm, clock, _alice_with_her_life(stores, clock, minilm))

    # When she searches her memories, three at most, by relation
    found = recall.recall(RecallRequest(ALICE, "gift for my husband", k=3))

    # Then what is known of him by name is among the relevant hits (without the book, her
    # guitar band takes its place)
    relevant = [hit.memory.text for hit in found.hits if not hit.unasked]
    assert "Chris collects jazz vinyl records." in relevant
