"""Request and response models of `POST /v1/recall` (docs/api.md "Recall")."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt

from chatmemory.api.schemas import DueOut, PersonaName
from chatmemory.domain import fading, rules
from chatmemory.domain.labels import RELEVANT, RELEVANT_MAX
from chatmemory.domain.time import to_api
from chatmemory.services.recall import QUERY_MAX, Evidence, Recall, RecallHit


def _query(value: str) -> str:
    return rules.text("query", value, QUERY_MAX)


QueryText = Annotated[str, Field(min_length=1, max_length=QUERY_MAX), AfterValidator(_query)]


class RecallBody(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    query: QueryText = Field(description="What to look up, 1..2000 characters.")
    k: Annotated[StrictInt, Field(ge=1, le=RELEVANT_MAX)] = Field(
        default=RELEVANT, description="How many relevant memories, 1..50."
    )
    expand: Annotated[StrictInt, Field(ge=0, le=RELEVANT_MAX)] = Field(
        default=0,
        description="How many of the first hits come with their reasoning and evidence, 0..k.",
    )
    persona: PersonaName | None = Field(default=None, description='Default "assistant".')


class EvidenceOut(BaseModel):
    message_id: str
    role: str = Field(description="user · assistant")
    text: str = Field(description="As it was said, at most 4,000 characters.")
    created_at: str

    @classmethod
    def of(cls, evidence: Evidence) -> EvidenceOut:
        return cls(
            message_id=evidence.message_id,
            role=evidence.role.value,
            text=evidence.text,
            created_at=to_api(evidence.created_at),
        )


class RecallItemOut(BaseModel):
    rank: int = Field(description="1 is the best; the unasked ones follow the relevant ones.")
    memory_id: str
    label: str = Field(description="The memory's index label: its sentence, ≤ 20 words.")
    category: str
    kind: str
    persona: str
    score: float = Field(
        description="Relevance to the query on the read path's scale, weighed by retention."
    )
    unasked: bool = Field(
        description="true: from a category none of the relevant hits is in (unasked but "
        "related), not a next rank."
    )
    due_in: DueOut
    retention: float = Field(description="exp(-t / S) since the last supporting evidence, 0..1.")
    reasoning: str | None = Field(
        default=None, description="Why it was stored; only on the first `expand` hits."
    )
    evidence: list[EvidenceOut] | None = Field(
        default=None,
        description="The messages it rests on, from your own transcript; only on the first "
        "`expand` hits.",
    )

    @classmethod
    def of(cls, hit: RecallHit, recall: Recall) -> RecallItemOut:
        memory = hit.memory
        return cls(
            rank=hit.rank,
            memory_id=memory.memory_id,
            label=hit.label,
            category=memory.category,
            kind=memory.kind.value,
            persona=memory.persona,
            score=hit.score,
            unasked=hit.unasked,
            due_in=DueOut.of(memory, recall.at),
            retention=round(fading.retention(memory, recall.at), 4),
            reasoning=hit.reasoning,
            evidence=None
            if hit.evidence is None
            else [EvidenceOut.of(item) for item in hit.evidence],
        )


class RecallOut(BaseModel):
    items: list[RecallItemOut]
    hidden: int = Field(
        description="How many more in-use memories matched above the relevance floor."
    )

    @classmethod
    def of(cls, recall: Recall) -> RecallOut:
        return cls(
            items=[RecallItemOut.of(hit, recall) for hit in recall.hits], hidden=recall.hidden
        )
