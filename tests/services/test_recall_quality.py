"""Per-turn recall with the real local model, as a user meets it: the memory a question needs
comes back, a second one it also needs comes with it, and a question that needs none gets
none. A reranker, when one is configured, reorders what qualified and nothing more."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.local_jobs import QueuedJobs
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.ports.reranker import Reranked, Reranker, RerankerUnavailable
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatRequest, ChatResult, ChatService
from chatmemory.services.context import ContextRequest, ContextService
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever

ALICE = "alice"
# Facts about one person that compete with whatever a question needs.
OTHERS = [
    ("Works as a nurse on the night shift.", "work"),
    ("Has a dog named Bruno.", "pets"),
    ("Plays the guitar in a weekend band.", "hobbies"),
    ("Is learning Japanese.", "language"),
    ("Drives a 2015 Honda Civic.", "general"),
]


@dataclass
class Wired:
    memories: MemoryService
    retriever: Retriever

    def remember(self, *facts: tuple[str, str]) -> dict[str, str]:
        return {
            text: self.memories.create(
                ALICE, NewMemory(text=text, category=category)
            ).memory.memory_id
            for text, category in facts
        }

    def recalled(self, message: str) -> list[str]:
        return [item.memory.text for item in self.retriever.recall(ALICE, message)]


def wire(
    stores: Stores, clock: ManualClock, embedder: Any, reranker: Reranker | None = None
) -> Wired:
    index = ExactIndex(stores.recall)
    relevance = RelevanceModel(embedder, params_for(embedder.name))
    return Wired(
        MemoryService(stores, clock, MemoryIndexer(embedder, index)),
        Retriever(stores, embedder, index, clock, relevance, reranker=reranker),
    )


def test_a_question_about_the_askers_own_place_recalls_where_they_live(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given where Alice lives among other things about her
    wired = wire(stores, clock, minilm)
    wired.remember(("Lives in Alfama, Lisbon.", "location"), *OTHERS)

    # When she asks something only her home answers, in words the examples never use
    recalled = wired.recalled("which metro station is closest to my place?")

    # Then her home is in the prompt
    assert "Lives in Alfama, Lisbon." in recalled


def test_a_question_that_needs_two_facts_gets_both(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given two facts a dinner plan must respect, among others
    wired = wire(stores, clock, minilm)
    wired.remember(("Is vegetarian.", "diet"), ("Is allergic to peanuts.", "diet"), *OTHERS)

    # When she asks for a dinner plan
    recalled = wired.recalled("What could I cook for friends coming over on Saturday?")

    # Then both are there, not one of them and its paraphrases
    assert {"Is vegetarian.", "Is allergic to peanuts."} <= set(recalled)


def test_facts_typed_under_the_apps_own_category_names_are_recalled_as_the_recommended_ones(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given an app that files facts under names of its own, and one under none at all
    wired = wire(stores, clock, minilm)
    wired.remember(
        ("Is lactose intolerant.", "food"),
        ("Keeps two guinea pigs, Pip and Squeak.", "small_animals"),
        ("Is training for a half marathon in May.", "general"),
        *OTHERS,
    )

    # When she asks what each one bears on, in words none of them use
    dinner = wired.recalled("any quick dinner ideas for two tonight?")
    treats = wired.recalled("which vegetables can I give mine as a treat?")

    # Then each is found by what it is for, as if it had been typed as diet or pets
    # ("small_animals" stands for pets by its second word)
    assert "Is lactose intolerant." in dinner
    assert "Keeps two guinea pigs, Pip and Squeak." in treats


def test_a_general_question_on_a_remembered_topic_recalls_nothing(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    wired = wire(stores, clock, minilm)
    wired.remember(("Has a cat named Miso.", "pets"), ("Is vegetarian.", "diet"), *OTHERS)

    assert wired.recalled("What is the capital of France?") == []
    assert wired.recalled("How many legs does a spider have?") == []


def test_a_memory_corrected_from_vegetarian_to_vegan_is_recalled_for_dinner_ideas(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given the README's walk-through: "remember that I am vegetarian" in chat, then the
    # memory corrected through the API
    index = ExactIndex(stores.recall)
    memories = MemoryService(stores, clock, MemoryIndexer(minilm, index))
    relevance = RelevanceModel(minilm, params_for(minilm.name))
    context = ContextService(stores, clock, Retriever(stores, minilm, index, clock, relevance))
    chat = ChatService(
        stores,
        clock,
        context=context,
        model=OfflineModel(),
        memories=memories,
        jobs=QueuedJobs(clock),
    )
    *_, result = chat.turn(ChatRequest(user_id=ALICE, message="remember that I am vegetarian"))
    assert isinstance(result, ChatResult) and len(result.saved) == 1
    vegan = memories.correct(ALICE, result.saved[0], text="Is vegan.")

    # When a new conversation asks for dinner ideas
    built = context.build(
        ContextRequest(user_id=ALICE, message="Can you give me some dinner ideas?")
    )

    # Then the corrected memory is what the prompt carries, and the old one is not
    assert built.memories_used == [vegan.memory_id]
    assert [line.text for line in built.blocks.memories] == ["Is vegan."]


class Reversed(Reranker):
    """A reranker that reads the documents backwards: honest about what it was shown."""

    name = "reversed"

    def __init__(self) -> None:
        self.shown: list[Sequence[str]] = []

    def rerank(self, query: str, documents: Sequence[str], *, top_n: int) -> list[Reranked]:
        self.shown.append(list(documents))
        order = list(reversed(range(len(documents))))[:top_n]
        return [Reranked(index, 1.0 - rank / 10) for rank, index in enumerate(order)]


class Broken(Reranker):
    name = "broken"

    def rerank(self, query: str, documents: Sequence[str], *, top_n: int) -> list[Reranked]:
        raise RerankerUnavailable("the reranker is unavailable: ThrottlingException")


def test_a_reranker_reorders_what_qualified_and_never_adds_to_it(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given the same memories recalled without and with a reranker
    plain = wire(stores, clock, minilm)
    plain.remember(("Is vegetarian.", "diet"), ("Is allergic to peanuts.", "diet"), *OTHERS)
    message = "What could I cook for friends coming over on Saturday?"
    ours = plain.recalled(message)
    reranker = Reversed()
    with_reranker = Retriever(
        stores,
        minilm,
        ExactIndex(stores.recall),
        clock,
        RelevanceModel(minilm, params_for(minilm.name)),
        reranker=reranker,
    )

    # When the reranker judges them
    reranked = [item.memory.text for item in with_reranker.recall(ALICE, message)]

    # Then it saw only what qualified, and its order is the turn's
    assert set(reranker.shown[0]) == set(ours)
    assert reranked == list(reversed(reranker.shown[0]))[: len(reranked)]
    assert set(reranked) <= set(ours)


@pytest.mark.parametrize("reranker", [Broken(), None], ids=["broken reranker", "none"])
def test_a_failing_reranker_leaves_recall_as_it_would_be_without_one(
    stores: Stores, clock: ManualClock, minilm: Any, reranker: Reranker | None
) -> None:
    plain = wire(stores, clock, minilm)
    plain.remember(("Is vegetarian.", "diet"), *OTHERS)
    message = "Any ideas for dinner tonight?"
    expected = plain.recalled(message)
    degraded = wire(stores, clock, minilm, reranker=reranker)

    assert degraded.recalled(message) == expected != []
