"""The read path (docs/api.md "Chat"): parse, call a service, shape the response."""

from __future__ import annotations

from collections.abc import Sequence

from aws_lambda_powertools.event_handler.api_gateway import Router

from chatmemory.api.documented import EVERY_CALL, Content, answers, json_content
from chatmemory.api.identity import user_id_from_event
from chatmemory.api.schemas import (
    BlocksOut,
    ChatOut,
    ChatRequest,
    ContextOut,
    ContextRequestBody,
    RememberedOut,
    ThreadLineOut,
    TurnOut,
    UsedMemoryOut,
)
from chatmemory.config import container
from chatmemory.domain.prompt import UsedMemory
from chatmemory.domain.time import as_of_instant
from chatmemory.ports.model import ReplyDelta
from chatmemory.services.chat import ChatRequest as ChatTurn
from chatmemory.services.chat import ChatResult
from chatmemory.services.context import BuiltContext, ContextRequest
from chatmemory.telemetry import count

router = Router()
_TAGS = ["chat"]
# A conversation id that is not yours is 404; a temporary turn on a kept conversation 409.
_TURN_ERRORS = (*EVERY_CALL, 404, 409)
# The same call asked for `Accept: text/event-stream` (locally; on AWS the streaming URL).
_STREAMED: Content = {
    "text/event-stream": {
        "schema": {
            "type": "string",
            "description": (
                'Server-Sent Events: `event: token` with `data: {"text": …}` for each '
                "piece of the reply, then one `event: done` whose data is the JSON object "
                'of this response; `event: error` with `data: {"error": {…}}` if the '
                "turn fails after streaming began (nothing of it is kept)."
            ),
        }
    }
}


def _user() -> str:
    return user_id_from_event(router.current_event.raw_event)


def used_out(used: Sequence[UsedMemory]) -> list[UsedMemoryOut]:
    return [UsedMemoryOut(memory_id=item.memory_id, block=item.block.value) for item in used]


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
                RememberedOut(memory_id=m.memory_id, text=m.text, date=m.date, due=m.due)
                for m in blocks.memories
            ],
            threads=[
                ThreadLineOut(memory_id=t.memory_id, text=t.text, line=t.line)
                for t in blocks.threads
            ],
            kickoff=blocks.kickoff,
        ),
        memories_used=built.memories_used,
        memories_used_in=used_out(built.used),
        prompt_tokens=built.rendered.tokens,
    )


@router.post(
    "/v1/context",
    summary="The context a chat turn would send to the model, without calling it",
    tags=_TAGS,
    responses=answers(
        {200: ("The blocks and the memories a turn would use", json_content(ContextOut))},
        _TURN_ERRORS,
    ),
)
def build_context(body: ContextRequestBody) -> ContextOut:
    built = container().context.build(
        ContextRequest(
            user_id=_user(),
            message=body.message,
            conversation_id=body.conversation_id,
            temporary=body.temporary,
            persona=body.persona,
            as_of=None if body.as_of is None else as_of_instant(body.as_of),
        )
    )
    if built.degraded:
        count("RecallDegraded")
    return context_out(built)


def chat_turn(user_id: str, body: ChatRequest) -> ChatTurn:
    return ChatTurn(
        user_id=user_id,
        message=body.message,
        conversation_id=body.conversation_id,
        temporary=body.temporary,
        persona=body.persona,
    )


def chat_out(result: ChatResult) -> ChatOut:
    return ChatOut(
        conversation_id=result.conversation_id,
        message_id=result.message_id,
        reply=result.reply,
        memories_used=result.memories_used,
        memories_used_in=used_out(result.used_in),
        saved=result.saved,
        model=result.model,
    )


@router.post(
    "/v1/chat",
    summary="One chat turn: the reply, with what was remembered and saved",
    description=(
        "With `Accept: text/event-stream` the same call streams `token` events and then one "
        "`done` event carrying this object (served by the streaming endpoint)."
    ),
    tags=_TAGS,
    responses=answers(
        {200: ("The reply", {**json_content(ChatOut), **_STREAMED})},
        (*_TURN_ERRORS, 429, 502),
    ),
)
def chat(body: ChatRequest) -> ChatOut:
    result: ChatResult | None = None
    for event in container().chat.turn(chat_turn(_user(), body)):
        if not isinstance(event, ReplyDelta):
            result = event
    assert result is not None  # turn() always ends with its result or raises
    count("ChatTurn")
    if result.memories_used:
        count("ChatTurnWithMemories")
    return chat_out(result)
