"""Two-stage recall (docs/api.md "Recall"): parse, call the service, shape the response."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from chatmemory.api.documented import EVERY_CALL, answers, json_content
from chatmemory.api.identity import user_id_from_event
from chatmemory.api.recall_schemas import RecallBody, RecallOut
from chatmemory.config import container
from chatmemory.services.recall import RecallRequest

router = Router()
_TAGS = ["recall"]


@router.post(
    "/v1/recall",
    summary="Your memories for a query: the ranked labels, 3 unasked, the first N expanded",
    description=(
        "Index first, read second: the best `k` memories at or above the relevance floor, "
        "then up to 3 from categories none of them is in (`unasked: true`); the first "
        "`expand` hits also carry why each was stored and the sentences it rests on. A "
        "lookup, not a turn: nothing is recorded as used. Memory switched off, or the "
        "persona muted: no items."
    ),
    tags=_TAGS,
    responses=answers(
        {200: ("The hits, relevant first, then the unasked ones", json_content(RecallOut))},
        EVERY_CALL,
    ),
)
def recall(body: RecallBody) -> RecallOut:
    found = container().recall.recall(
        RecallRequest(
            user_id=user_id_from_event(router.current_event.raw_event),
            query=body.query,
            k=body.k,
            expand=body.expand,
            persona=body.persona,
        )
    )
    return RecallOut.of(found)
