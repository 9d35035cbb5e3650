"""The read path (API.md "Chat" and "Context"): parse, call a service, shape the response."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from chatmemory.api.identity import user_id_from_event
from chatmemory.api.memories_routes import ERRORS
from chatmemory.api.schemas import (
    BlocksOut,
    ChatRequest,
    ContextOut,
    RememberedOut,
    TurnOut,
)
from chatmemory.api.telemetry import count
from chatmemory.config import container
from chatmemory.services.context import BuiltContext, ContextRequest

router = Router()
_TAGS = ["chat"]


def _user() -> str:
    return user_id_from_event(router.current_event.raw_event)


def context_out(built: BuiltContext) -> ContextOut:
    blocks = built.blocks
    return ContextOut(
        conversation_id=built.conversation.conversation_id if built.conversation else None,
        blocks=BlocksOut(
            system=blocks.system,
            profile=blocks.profile,
            note=blocks.note,
            summary=blocks.summary,
            recent=[TurnOut(role=t.role, content=t.content) for t in blocks.recent],
            memories=[
                RememberedOut(memory_id=m.memory_id, text=m.text, date=m.date)
                for m in blocks.memories
            ],
        ),
        memories_used=built.memories_used,
        prompt_tokens=built.rendered.tokens,
    )


@router.post(
    "/v1/context",
    summary="The context a chat turn would send to the model, without calling it",
    tags=_TAGS,
    responses=ERRORS,
)
def build_context(body: ChatRequest) -> ContextOut:
    built = container().context.build(
        ContextRequest(
            user_id=_user(),
            message=body.message,
            conversation_id=body.conversation_id,
            temporary=body.temporary,
            persona=body.persona,
        )
    )
    if built.degraded:
        count("RecallDegraded")
    return context_out(built)
