"""The purge, wired as config wires it, on both stores: after a delete every copy of the
memory goes — its rows, its vectors, the profile and the summaries built from it, the
notices quoting it — and the tombstone is all that is left."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.local_jobs import QueuedJobs
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.config import Container, Settings
from chatmemory.domain.errors import InvalidField, ModelUnavailable
from chatmemory.domain.events import Op
from chatmemory.domain.extraction import run_id_for
from chatmemory.domain.memory import Memory
from chatmemory.domain.prompt import Turn
from chatmemory.domain.purge import PurgeRequest
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatRequest, ChatResult
from chatmemory.services.context import WITHDRAWN_REPLY, ContextRequest
from chatmemory.services.memories import NewMemory
from chatmemory.services.purge import PURGE_GRACE, Purged
from tests.support.fast_moto import quick_transactions

ALICE = "alice"
BOB = "bob"

# Twelve ordinary turns: enough for the window to fold the oldest turns into the summary.
SMALL_TALK = [
    f"Tell me something about {topic} please, I am curious today."
    for topic in (
        "the moon landing",
        "volcanoes in Iceland",
        "the history of tea",
        "how bridges stay up",
        "octopus intelligence",
        "the printing press",
        "jazz in the twenties",
        "desert ecosystems",
        "the first computers",
        "ocean tides",
        "medieval castles",
        "honeybee dances",
    )
]


class Product:
    """The container production code runs on, with this test's store and clock."""

    def __init__(self, stores: Stores, clock: ManualClock, state_dir: Path) -> None:
        self.container = Container(Settings(state_dir=state_dir, embedder="hashing"), clock)
        self.container.__dict__["stores"] = stores  # the parametrized store, both adapters
        self.stores, self.clock = stores, clock
        jobs = self.container.jobs
        assert isinstance(jobs, QueuedJobs)
        self.jobs = jobs

    def say(self, message: str, conversation_id: str | None = None, user: str = ALICE) -> str:
        *_, result = self.container.chat.turn(
            ChatRequest(user_id=user, message=message, conversation_id=conversation_id)
        )
        assert isinstance(result, ChatResult)
        self.clock.advance(timedelta(seconds=20))
        self.jobs.run_pending()  # folds run off the request path
        return result.conversation_id

    def remember(self, text: str, user: str = ALICE) -> Memory:
        return self.container.memories.create(user, NewMemory(text=text)).memory

    def memory_with(self, fragment: str, user: str = ALICE) -> Memory:
        (memory,) = [
            m
            for m in self.stores.memories.iter_memories(user)
            if fragment.lower() in m.text.lower()
        ]
        return memory

    def summary(self, conversation_id: str, user: str = ALICE) -> str:
        conversation = self.stores.conversations.get_conversation(user, conversation_id)
        assert conversation is not None
        return conversation.summary

    def context_text(self, message: str, conversation_id: str | None = None) -> str:
        built = self.container.context.build(
            ContextRequest(user_id=ALICE, message=message, conversation_id=conversation_id)
        )
        blocks = built.blocks
        parts = [blocks.profile, blocks.note, blocks.summary]
        parts += [turn.content for turn in blocks.recent]
        parts += [line.text for line in blocks.memories]
        return "\n".join(parts)

    def unpurged(self, user: str = ALICE) -> list[str]:
        return [
            t.memory_id for t in self.stores.tombstones.list_tombstones(user, unpurged_only=True)
        ]


@pytest.fixture
def product(stores: Stores, clock: ManualClock, tmp_path: Path) -> Iterator[Product]:
    yield Product(stores, clock, tmp_path)


def folded_conversation(product: Product, fact: str) -> str:
    """A conversation that opens by asking to remember `fact`, then talks long enough
    for that opening turn to be folded into the summary."""
    conversation_id = product.say(f"Please remember that {fact}.")
    for line in SMALL_TALK:
        product.say(line, conversation_id)
    return conversation_id


def test_deleting_a_memory_that_shaped_a_summary_rewrites_the_summary_without_it(
    product: Product,
) -> None:
    # Given a conversation whose summary folded in the turn that saved a memory
    conversation_id = folded_conversation(product, "I keep a tortoise called Quizzleberry")
    before = product.summary(conversation_id)
    assert "Quizzleberry" in before, before
    assert "moon landing" in before, before
    memory = product.memory_with("Quizzleberry")

    # When the user deletes the memory
    product.container.memories.delete(ALICE, memory.memory_id)

    # Then, before the purge ran, the summary is withheld from the prompt, not trusted
    assert product.unpurged() == [memory.memory_id]
    assert "Quizzleberry" not in product.context_text("what pets do I have?", conversation_id)

    # When the purge runs (locally: the queued job)
    product.jobs.run_pending()

    # Then the summary was rebuilt from the raw messages without the deleted fact's turn,
    # and keeps the rest of the conversation
    after = product.summary(conversation_id)
    assert "Quizzleberry" not in after, f"before:\n{before}\nafter:\n{after}"
    assert "moon landing" in after, f"before:\n{before}\nafter:\n{after}"
    # And the prompt shows the rebuilt summary again, still without the fact
    assert product.unpurged() == []
    shown = product.context_text("what pets do I have?", conversation_id)
    assert after in shown and "Quizzleberry" not in shown


def test_the_purge_leaves_only_a_tombstone_of_ids_and_times(product: Product) -> None:
    # Given a memory corrected once (two versions carry its words) and then deleted
    first = product.remember("My cousin Vortanek lives in Lyon.")
    corrected = product.container.memories.correct(
        ALICE, first.memory_id, text="My cousin Vortanek lives in Marseille."
    )
    product.container.memories.delete(ALICE, corrected.memory_id)

    # When the purge runs
    product.jobs.run_pending()

    # Then no row of either version is left, under any status, and no vector either
    every = list(product.stores.memories.iter_memories(ALICE, MemoryQuery(status=None)))
    assert every == []
    assert (
        product.stores.recall.memory_embeddings(ALICE, [first.memory_id, corrected.memory_id]) == {}
    )
    # And the tombstone holds ids and times only, marked purged
    tombstone = product.stores.tombstones.get_tombstone(ALICE, corrected.memory_id)
    assert tombstone is not None and tombstone.purged_at is not None
    assert set(tombstone.versions) == {first.memory_id, corrected.memory_id}
    assert "Vortanek" not in repr(tombstone)
    # And the history still tells what happened, without words: deleted, then purged
    ops = [event.op for event in product.container.memories.history(ALICE, corrected.memory_id)]
    assert ops[-2:] == [Op.DELETE, Op.PURGE]


def test_a_profile_built_from_a_deleted_memory_is_rebuilt_without_it(product: Product) -> None:
    # Given a profile built from two stated facts
    product.remember("Is vegetarian.")
    pune = product.remember("Lives in Pune.")
    product.container.pipeline.rebuild_profile(ALICE, "assistant")
    profile = product.stores.user_state.get_profile(ALICE, "assistant")
    assert profile is not None and "Pune" in profile.text

    # When one is deleted, the profile is withheld at once
    product.container.memories.delete(ALICE, pune.memory_id)
    assert "Pune" not in product.context_text("where do I live?")

    # And after the purge it is rebuilt without it, keeping the other fact
    product.jobs.run_pending()
    rebuilt = product.stores.user_state.get_profile(ALICE, "assistant")
    assert rebuilt is not None
    assert "Pune" not in rebuilt.text and "vegetarian" in rebuilt.text.lower()
    assert pune.memory_id not in rebuilt.built_from
    assert "vegetarian" in product.context_text("what should I cook?").lower()


def test_notices_stop_quoting_a_purged_memory(product: Product) -> None:
    # Given a background run that learned two facts and announced them in one notice
    conversation_id = product.say("I'm vegetarian and I live in Pune.")
    product.clock.advance(timedelta(minutes=11))
    product.jobs.run_due()
    (notice,) = product.stores.notices.list_notices(ALICE)
    assert "Pune" in notice.text and "vegetarian" in notice.text.lower()
    pune = product.memory_with("Pune")
    state = product.stores.conversations.get_conversation(ALICE, conversation_id)
    assert state is not None
    run_id = run_id_for(ALICE, conversation_id, state.extracted_upto_seq)
    assert product.stores.runs.get_extraction_run(ALICE, run_id) is not None

    # When the user deletes one of them and the purge runs
    product.container.memories.delete(ALICE, pune.memory_id)
    product.jobs.run_pending()

    # Then the stored notice names only the other one, in its words
    (kept,) = product.stores.notices.notices_about(ALICE, list(notice.memory_ids))
    assert pune.memory_id not in kept.memory_ids
    assert "Pune" not in kept.text and "vegetarian" in kept.text.lower()
    # And the pipeline run whose candidates quoted what was said is gone
    assert product.stores.runs.get_extraction_run(ALICE, run_id) is None


def test_undo_goes_through_the_same_purge(product: Product) -> None:
    # Given a notice announcing what the pipeline learned
    product.say("I'm vegetarian and I live in Pune.")
    product.clock.advance(timedelta(minutes=11))
    product.jobs.run_due()
    (notice,) = product.stores.notices.list_notices(ALICE)

    # When the user undoes it
    undone = product.container.notices.undo(ALICE, notice.notice_id)
    product.jobs.run_pending()

    # Then both memories are purged and no stored notice quotes them
    assert sorted(undone) == sorted(notice.memory_ids)
    assert list(product.stores.memories.iter_memories(ALICE, MemoryQuery(status=None))) == []
    assert product.unpurged() == []
    assert product.stores.notices.notices_about(ALICE, list(notice.memory_ids)) == []


def test_forget_everything_purges_every_memory_and_keeps_later_ones(product: Product) -> None:
    # Given memories, a summary that folded one in, and a profile
    conversation_id = folded_conversation(product, "my bicycle is named Grelmonk")
    for n in range(30):
        product.remember(f"Collects stamps from island number {n}.")
    product.container.pipeline.rebuild_profile(ALICE, "assistant")
    assert "Grelmonk" in product.summary(conversation_id)

    # When the user forgets everything, and then says something new
    product.container.memories.forget_everything(ALICE)
    product.clock.advance(timedelta(seconds=1))
    later = product.remember("Is learning the cello.")
    product.jobs.run_pending()

    # Then every older row is gone, the summary no longer holds the saved fact,
    # and the memory made afterwards is untouched
    rows = list(product.stores.memories.iter_memories(ALICE, MemoryQuery(status=None)))
    assert [m.memory_id for m in rows] == [later.memory_id]
    assert product.unpurged() == []
    assert "Grelmonk" not in product.summary(conversation_id)
    assert product.stores.user_state.get_profile(ALICE, "assistant") is None


def test_a_purge_of_more_deletions_than_one_write_holds_finishes_them_all(
    product: Product,
) -> None:
    # Given 40 memories deleted one by one while no purge ran (a store marks a few dozen
    # tombstones purged in one transaction)
    with quick_transactions():  # seeding only: the purge below runs on moto as it is
        memories = [product.remember(f"Collects stamps from island number {n}.") for n in range(40)]
        for memory in memories:
            product.container.memories.delete(ALICE, memory.memory_id)

    # When one purge covers them all
    purged = product.container.purge.run(PurgeRequest(ALICE, as_of=product.clock.now()))

    # Then every one is purged: nothing pending, no row left
    assert purged.purged == 40
    assert product.unpurged() == []
    assert list(product.stores.memories.iter_memories(ALICE, MemoryQuery(status=None))) == []


def test_a_failed_purge_is_recorded_keeps_filtering_and_the_sweep_finishes_it(
    product: Product, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a deleted memory whose summary rewrite fails (the model is down)
    conversation_id = folded_conversation(product, "my kite is called Zumbrella")
    memory = product.memory_with("Zumbrella")
    folder = product.container.folder

    def down(*_: object, **__: object) -> None:
        raise ModelUnavailable("overloaded")

    working = folder.rewrite_without_deleted
    monkeypatch.setattr(folder, "rewrite_without_deleted", down)
    product.container.memories.delete(ALICE, memory.memory_id)
    product.jobs.run_pending()

    # Then the tombstone records the failure's kind and stays unpurged
    tombstone = product.stores.tombstones.get_tombstone(ALICE, memory.memory_id)
    assert tombstone is not None
    assert (tombstone.purge_error, tombstone.purged_at) == ("ModelUnavailable", None)
    # And the read path keeps withholding the summary that still holds the fact
    assert "Zumbrella" in product.summary(conversation_id)
    assert "Zumbrella" not in product.context_text("what do I fly?", conversation_id)
    # And the sweep leaves a fresh failure alone for a while
    assert product.container.purge_sweep.sweep() == 0

    # When the model is back and the sweep runs after the grace period
    monkeypatch.setattr(folder, "rewrite_without_deleted", working)
    product.clock.advance(PURGE_GRACE + timedelta(minutes=1))
    assert product.container.purge_sweep.sweep() == 1
    product.jobs.run_pending()

    # Then the purge finished: purged, error cleared, summary clean and shown again
    tombstone = product.stores.tombstones.get_tombstone(ALICE, memory.memory_id)
    assert tombstone is not None and tombstone.purged_at is not None
    assert tombstone.purge_error is None
    assert "Zumbrella" not in product.summary(conversation_id)


def test_a_purge_run_twice_changes_nothing_the_second_time(product: Product) -> None:
    # Given a purged memory
    conversation_id = folded_conversation(product, "my boat is named Plinkaroo")
    memory = product.memory_with("Plinkaroo")
    tombstone = product.container.memories.delete(ALICE, memory.memory_id)
    product.jobs.run_pending()
    summary = product.summary(conversation_id)
    purged = product.stores.tombstones.get_tombstone(ALICE, memory.memory_id)

    # When the same purge is run again (a repeated execution, a retried step)
    again = product.container.purge.run(
        PurgeRequest(user_id=ALICE, as_of=tombstone.deleted_at, memory_ids=(memory.memory_id,))
    )

    # Then there was nothing left to do
    assert again == Purged(purged=0, latency_ms=0)
    assert product.summary(conversation_id) == summary
    assert product.stores.tombstones.get_tombstone(ALICE, memory.memory_id) == purged


def test_a_deleted_memorys_turn_is_never_folded_in_later(product: Product) -> None:
    # Given a memory saved on the first turn and deleted (and purged) before any fold
    conversation_id = product.say("Please remember that my parrot is called Frinkolo.")
    memory = product.memory_with("Frinkolo")
    product.container.memories.delete(ALICE, memory.memory_id)
    product.jobs.run_pending()
    assert product.summary(conversation_id) == ""

    # When the conversation goes on long enough to fold that turn
    for line in SMALL_TALK:
        product.say(line, conversation_id)

    # Then the summary folded the other turns but not that one
    summary = product.summary(conversation_id)
    assert "moon landing" in summary
    assert "Frinkolo" not in summary


def test_a_fold_that_read_the_summary_before_the_rewrite_cannot_put_it_back(
    product: Product,
) -> None:
    # Given a summary holding a fact, and a fold about to apply on top of it
    conversation_id = folded_conversation(product, "my goat is named Sprocketta")
    state = product.stores.conversations.get_conversation(ALICE, conversation_id)
    assert state is not None and "Sprocketta" in state.summary
    memory = product.memory_with("Sprocketta")

    # When the purge rewrites the summary first
    product.container.memories.delete(ALICE, memory.memory_id)
    product.jobs.run_pending()

    # Then the stale fold (what it read is the old state) is refused
    stale = product.stores.conversations.update_summary(
        ALICE,
        conversation_id,
        summary=state.summary + "\n- more",
        upto_seq=state.summary_upto_seq,
        expected_upto_seq=state.summary_upto_seq,
        fold_count=state.fold_count + 1,
        expected_fold_count=state.fold_count,
        at=product.clock.now(),
    )
    assert stale is False
    assert "Sprocketta" not in product.summary(conversation_id)


def test_one_users_purge_never_touches_another_users_copies(product: Product) -> None:
    # Given Alice and Bob each saved the same words, and a summary each
    alices = folded_conversation(product, "my lizard is called Gobbledorf")
    bobs = product.say("Please remember that my lizard is called Gobbledorf.", user=BOB)
    for line in SMALL_TALK:
        product.say(line, bobs, user=BOB)
    bob_before = product.summary(bobs, user=BOB)

    # When Alice deletes hers and the purge runs
    product.container.memories.delete(ALICE, product.memory_with("Gobbledorf").memory_id)
    product.jobs.run_pending()

    # Then Bob's memory and summary are as they were
    assert "Gobbledorf" not in product.summary(alices)
    assert product.memory_with("Gobbledorf", user=BOB).text
    assert product.summary(bobs, user=BOB) == bob_before


def test_a_purge_covers_only_deletions_up_to_its_time(product: Product) -> None:
    # Given two deletions, the second after the first's purge was asked for
    first = product.remember("Owns a unicycle named Trundlebop.")
    second = product.remember("Owns a kayak named Splashwick.")
    tombstone = product.container.memories.delete(ALICE, first.memory_id)
    product.clock.advance(timedelta(seconds=1))
    product.container.memories.delete(ALICE, second.memory_id)

    # When a purge for everything up to the first deletion runs
    result = product.container.purge.run(PurgeRequest(user_id=ALICE, as_of=tombstone.deleted_at))

    # Then only the first is purged; the second waits for its own purge
    assert result.purged == 1
    assert product.unpurged() == [second.memory_id]
    product.jobs.run_pending()
    assert product.unpurged() == []


def test_a_delete_stands_even_if_the_purge_cannot_start(
    product: Product, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the purge cannot be started (the workflow service is down)
    memory = product.remember("Has a telescope named Starwhisk.")
    starter = product.container.purge_starter

    def refuse(*_: object, **__: object) -> bool:
        raise ConnectionError("unreachable")

    working = starter.start_purge
    monkeypatch.setattr(starter, "start_purge", refuse)

    # When the user deletes the memory
    product.container.memories.delete(ALICE, memory.memory_id)

    # Then it is gone from every read at once, and waits for the sweep
    assert product.stores.memories.get_memory(ALICE, memory.memory_id) is None
    assert "Starwhisk" not in product.context_text("what do I look at the sky with?")
    assert product.unpurged() == [memory.memory_id]
    monkeypatch.setattr(starter, "start_purge", working)
    product.clock.advance(PURGE_GRACE + timedelta(seconds=1))
    assert product.container.purge_sweep.sweep() == 1
    product.jobs.run_pending()
    assert product.unpurged() == []
    stale = dataclasses.replace(memory)
    assert product.stores.memories.add_memory(stale) is False  # an id is never reused


class QuotingSummarizer(OfflineModel):
    """Summarizes replies too, as Claude does (the stand-in keeps only the user's words)."""

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        said = super().summarize(summary, turns, max_tokens=max_tokens)
        recalled = [
            "- The assistant recalled: " + t.content.split("taking into account: ")[1][:120]
            for t in turns
            if t.role != "user" and "taking into account: " in t.content
        ]
        return "\n".join([*recalled, said])


def test_a_reply_that_used_a_deleted_memory_is_withdrawn_and_rewritten_out(
    product: Product,
) -> None:
    # Given a memory recalled in another conversation, whose reply quoted it and was
    # folded into that conversation's summary by a summarizer that keeps replies
    product.container.__dict__["model"] = QuotingSummarizer()
    memory = product.remember("My tortoise is called Quizzleberry.")
    asking = product.say("What is my tortoise called?")
    assert "Quizzleberry" in product.context_text("and then?", asking)  # the reply quotes it
    for line in SMALL_TALK:
        product.say(line, asking)
    assert "Quizzleberry" in product.summary(asking)

    # When the memory is deleted, before any purge
    product.container.memories.delete(ALICE, memory.memory_id)

    # Then neither the reply nor the summary reaches the prompt
    assert "Quizzleberry" not in product.context_text("and then?", asking)

    # And the purge rewrites that summary without the turn whose reply used it
    product.jobs.run_pending()
    assert "Quizzleberry" not in product.summary(asking)
    assert "moon landing" in product.summary(asking)
    assert "Quizzleberry" not in product.context_text("and then?", asking)


def test_a_reply_that_used_a_deleted_memory_is_withdrawn_from_the_recent_turns(
    product: Product,
) -> None:
    # Given a reply, still in the verbatim window, that used a memory
    memory = product.remember("My tortoise is called Quizzleberry.")
    conversation_id = product.say("What is my tortoise called?")
    assert "Quizzleberry" in product.context_text("thanks", conversation_id)

    # When the memory is deleted and purged
    product.container.memories.delete(ALICE, memory.memory_id)
    product.jobs.run_pending()

    # Then the reply is withdrawn from what the model sees; the user's own words stay
    built = product.container.context.build(
        ContextRequest(user_id=ALICE, message="thanks", conversation_id=conversation_id)
    )
    assert [turn.content for turn in built.blocks.recent] == [
        "What is my tortoise called?",
        WITHDRAWN_REPLY,
    ]


def test_temporary_cannot_be_switched_on_inside_a_kept_conversation(product: Product) -> None:
    # Given a kept conversation
    conversation_id = product.say("Let's plan my week.")

    # When a turn in it asks to be temporary
    with pytest.raises(InvalidField) as refused:
        product.container.context.build(
            ContextRequest(
                user_id=ALICE,
                message="off the record",
                conversation_id=conversation_id,
                temporary=True,
            )
        )

    # Then it is refused (a kept conversation is read later and never expires)
    assert refused.value.field == "temporary"
