"""Seed 002's multi-session task: a fact given in session 1, changed in session 3, needed in
session 5 — recalled as changed, the old one kept only as history, and nothing recalled
for an unrelated question. The real local model and the offline model, on both stores."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.local_jobs import QueuedJobs
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.memory import Status
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatRequest, ChatResult, ChatService
from chatmemory.services.context import ContextRequest, ContextService
from chatmemory.services.idle import IdleTrigger
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService
from chatmemory.services.pipeline import InProcessPipeline, WritePipeline
from chatmemory.services.relevance import RelevanceModel, params_for
from chatmemory.services.retrieval import Retriever

ALICE = "alice"
IDLE = timedelta(minutes=10)


def test_a_changed_fact_is_recalled_as_changed_and_only_when_relevant(
    stores: Stores, clock: ManualClock, minilm: Any
) -> None:
    # Given the product as it runs locally: MiniLM, the exact index, the offline model
    model, index = OfflineModel(), ExactIndex(stores.recall)
    memories = MemoryService(stores, clock, MemoryIndexer(minilm, index))
    relevance = RelevanceModel(minilm, params_for(minilm.name))
    context = ContextService(stores, clock, Retriever(stores, minilm, index, clock, relevance))
    pipeline = WritePipeline(
        stores, clock, model=model, memories=memories, embedder=minilm, index=index
    )
    idle = IdleTrigger(stores, clock, InProcessPipeline(pipeline), idle_after=IDLE)
    jobs = QueuedJobs(clock)
    jobs.bind(lambda job: idle.check(job.user_id, job.conversation_id))
    chat = ChatService(
        stores, clock, context=context, model=model, memories=memories, jobs=jobs, idle_after=IDLE
    )

    def session(*messages: str) -> None:
        conversation = None
        for message in messages:
            *_, result = chat.turn(
                ChatRequest(user_id=ALICE, message=message, conversation_id=conversation)
            )
            assert isinstance(result, ChatResult)
            conversation = result.conversation_id
            clock.advance(timedelta(minutes=1))
        clock.advance(IDLE)
        jobs.run_due()  # the conversation went quiet: the write pipeline reads it
        clock.advance(timedelta(days=3))

    def recalled(message: str) -> list[str]:
        return [
            line.text
            for line in context.build(
                ContextRequest(user_id=ALICE, message=message)
            ).blocks.memories
        ]

    # When: session 1 gives the fact, 2 is unrelated, 3 changes it, 4 is unrelated
    session("Hi! I live in Pune and I work as a teacher at Oakridge School.")
    session("Can you explain how compound interest works?")
    session("Quick update: I moved to Bengaluru last week.")
    session("What's a good way to learn touch typing?")

    # Then in session 5 the new fact is recalled, the old one is history only
    local = recalled("Any good weekend plans you'd suggest around where I live?")
    assert "Lives in Bengaluru." in local and "Lives in Pune." not in local
    history = [
        m.text
        for m in stores.memories.list_memories(ALICE, MemoryQuery(status=Status.SUPERSEDED)).items
    ]
    assert history == ["Lives in Pune."]
    # and an unrelated question recalls neither
    assert recalled("What is the boiling point of water at sea level?") == []
