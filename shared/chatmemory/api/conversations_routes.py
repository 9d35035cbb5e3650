"""Deleting conversations (docs/api.md "Conversations"): one, or all of the caller's."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from chatmemory.api.documented import EVERY_CALL, answers
from chatmemory.api.identity import user_id_from_event
from chatmemory.config import container
from chatmemory.telemetry import count

router = Router()

ConversationId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
_TAGS = ["conversations"]
_GONE = (
    "The conversation, its messages and summary, its observed turns and its extraction "
    "runs are gone from the very next request (a chat or context naming it is `404`, and "
    "recall quotes none of its messages). Memories learned from it stay: they are yours "
    "to delete."
)


def _user() -> str:
    return user_id_from_event(router.current_event.raw_event)


def _no_content() -> Response[str]:
    return Response(status_code=204, body="")  # no body, so no Content-Type either


@router.delete(
    "/v1/conversations",
    summary="Delete every conversation you have",
    description=_GONE,
    tags=_TAGS,
    responses=answers({204: ("Deleted, each conversation purged", None)}),
)
def delete_conversations() -> Response[str]:
    deleted = container().conversation_deletes.delete_all(_user())
    count("ConversationDeleted", deleted)
    return _no_content()


@router.delete(
    "/v1/conversations/<conversation_id>",
    summary="Delete a conversation",
    description=_GONE,
    tags=_TAGS,
    responses=answers({204: ("Deleted and purged", None)}, (*EVERY_CALL, 404)),
)
def delete_conversation(conversation_id: ConversationId) -> Response[str]:
    container().conversation_deletes.delete(_user(), conversation_id)
    count("ConversationDeleted")
    return _no_content()
