"""Turns that happened elsewhere (docs/api.md "Observe"): parse, call the service, shape."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from chatmemory.api.documented import EVERY_CALL, answers, json_content
from chatmemory.api.identity import user_id_from_event
from chatmemory.api.observe_schemas import ObserveBody, ObservedOut
from chatmemory.config import container
from chatmemory.services.observe import ObserveRequest
from chatmemory.telemetry import count

router = Router()
_TAGS = ["chat"]


@router.post(
    "/v1/observe",
    summary="Report a turn after it happened, so memory learns from it as from a chat",
    description=(
        "For an agent with its own model: the user's message and the reply are stored in "
        "the conversation as a chat turn's would be, and the background write learns from "
        "them once the conversation is quiet (memory off, a muted persona or a temporary "
        "chat: never). No model is called. Idempotent by `turn_id`: a retry stores nothing "
        "twice (`200`, `stored: false`); the same id with a different turn is `409`; past "
        "the user's observed turns a minute, `429` with Retry-After."
    ),
    tags=_TAGS,
    responses=answers(
        {
            201: ("Stored", json_content(ObservedOut)),
            200: ("Stored before under this turn id: nothing written", json_content(ObservedOut)),
        },
        (*EVERY_CALL, 404, 409, 429),
    ),
)
def observe(body: ObserveBody) -> tuple[ObservedOut, int]:
    observed = container().observe.observe(
        ObserveRequest(
            user_id=user_id_from_event(router.current_event.raw_event),
            turn_id=body.turn_id,
            user_message=body.user,
            assistant_message=body.assistant,
            conversation_id=body.conversation_id,
            persona=body.persona,
            temporary=body.temporary,
        )
    )
    if not observed.stored:
        return ObservedOut.of(observed), 200
    count("TurnObserved")
    return ObservedOut.of(observed), 201
