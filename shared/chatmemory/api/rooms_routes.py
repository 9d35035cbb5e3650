"""The Rooms API (docs/api.md "Rooms"): who may call, parse, call the room service, shape.

The app credential acts for every user of this deployment, in any room. A user's own
token works only in their own private chat (a private room whose one member is them):
they may open one, read it, post in it as themselves or its personas, read a persona's
block and ask for a turn; everything else is `Forbidden`. A room a user is not in is not
found for them, whether it exists or not, so a room id tells a user nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from chatmemory.api.documented import EVERY_CALL, answers, json_content
from chatmemory.api.identity import AppCaller, Caller, Forbidden, UserCaller, caller_from_event
from chatmemory.api.room_schemas import (
    MembersJoin,
    RoomContextOut,
    RoomCreate,
    RoomMessageIn,
    RoomMessageOut,
    RoomMessagesOut,
    RoomMessagesPost,
    RoomOut,
    RoomTurnOut,
    RoomTurnRequest,
    UsageOut,
)
from chatmemory.api.schemas import PersonaName, UsedMemoryOut
from chatmemory.config import container
from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField, RoomNotFound
from chatmemory.domain.prompt import Block
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind
from chatmemory.services.room_service import NewRoom
from chatmemory.telemetry import count

router = Router()
_TAGS = ["rooms"]

RoomId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
UserId = Annotated[str, Path(min_length=1, max_length=rules.USER_ID_MAX)]

_IN_ROOM = (*EVERY_CALL, 404)
_WRITE_IN_ROOM = (*EVERY_CALL, 404, 409)

_OWN_PRIVATE_CHAT_ONLY = (
    "a user's token may only open and use their own private chat "
    "(kind private, its one member themselves); other room calls need the app credential"
)
_APP_NAMES_ROOMS = "only the app credential chooses a room's id"
_APP_SEATS_PEOPLE = "only the app credential changes who is in a room"
_OWN_VOICE = "a user's token speaks only as its own user (u:<you>) or as the room's personas"


def _caller() -> Caller:
    return caller_from_event(router.current_event.raw_event)


def _room_for(caller: Caller, room_id: str) -> Room:
    """The room, if this caller may act in it; RoomNotFound for a room a user is not in."""
    room = container().rooms.get(room_id)
    if isinstance(caller, AppCaller):
        return room
    if caller.user_id not in room.members:
        raise RoomNotFound(room_id)
    if not room.is_private_chat:
        raise Forbidden(_OWN_PRIVATE_CHAT_ONLY)
    return room


def _check_may_open(caller: Caller, body: RoomCreate) -> None:
    if isinstance(caller, AppCaller):
        return
    if body.kind is not RoomKind.PRIVATE or set(body.members) != {caller.user_id}:
        raise Forbidden(_OWN_PRIVATE_CHAT_ONLY)
    if body.room_id is not None:  # a taken id would tell a user that someone's room exists
        raise Forbidden(_APP_NAMES_ROOMS)


def _check_voices(caller: Caller, messages: Sequence[RoomMessageIn]) -> None:
    if isinstance(caller, UserCaller):
        own = f"u:{caller.user_id}"
        if any(m.speaker != own and not m.speaker.startswith("p:") for m in messages):
            raise Forbidden(_OWN_VOICE)


def _seated(room: Room, persona: str | None) -> str:
    """The persona named, or the room's only one when none is."""
    if persona is not None:
        return persona
    if len(room.personas) == 1:
        return next(iter(room.personas))
    raise InvalidField("persona", "is required: this room seats more than one persona")


@router.post(
    "/v1/rooms",
    summary="Open a room: its personas' blocks are built for who is there",
    tags=_TAGS,
    responses=answers({201: ("The room", json_content(RoomOut))}, (*EVERY_CALL, 409)),
)
def open_room(body: RoomCreate) -> tuple[RoomOut, int]:
    _check_may_open(_caller(), body)
    room = container().rooms.open(
        NewRoom(
            kind=body.kind,
            personas=body.personas,
            members=body.members,
            incognito=body.incognito,
            fiction=body.fiction,
            room_id=body.room_id,
        )
    )
    count("RoomOpened")
    return RoomOut.of(room), 201


@router.get(
    "/v1/rooms/<room_id>",
    summary="A room: its switches, cast, members and where its transcript is",
    tags=_TAGS,
    responses=answers({200: ("The room", json_content(RoomOut))}, _IN_ROOM),
)
def get_room(room_id: RoomId) -> RoomOut:
    return RoomOut.of(_room_for(_caller(), room_id))


def _app_only(room_id: str) -> None:
    """Only the app changes who is in a room; a user learns only of rooms they are in."""
    caller = _caller()
    if isinstance(caller, UserCaller):
        _room_for(caller, room_id)
        raise Forbidden(_APP_SEATS_PEOPLE)


@router.post(
    "/v1/rooms/<room_id>/members",
    summary="These humans joined: every persona's block is rebuilt for them",
    tags=_TAGS,
    responses=answers(
        {200: ("The room, with its new members", json_content(RoomOut))}, _WRITE_IN_ROOM
    ),
)
def join_room(room_id: RoomId, body: MembersJoin) -> RoomOut:
    _app_only(room_id)
    room = container().rooms.join(room_id, body.user_ids)
    count("RoomJoined", len(body.user_ids))
    return RoomOut.of(room)


@router.delete(
    "/v1/rooms/<room_id>/members/<user_id>",
    summary="This human left: nothing about them stays in any block of the room",
    tags=_TAGS,
    responses=answers({200: ("The room, without them", json_content(RoomOut))}, _WRITE_IN_ROOM),
)
def leave_room(room_id: RoomId, user_id: UserId) -> RoomOut:
    _app_only(room_id)
    rules.user_id(user_id)
    room = container().rooms.leave(room_id, [user_id])
    count("RoomLeft")
    return RoomOut.of(room)


@router.post(
    "/v1/rooms/<room_id>/messages",
    summary="Add what was said to the room's transcript (it re-arms the quiet timer)",
    tags=_TAGS,
    responses=answers(
        {201: ("The messages as stored, in order", json_content(RoomMessagesOut))}, _WRITE_IN_ROOM
    ),
)
def post_messages(room_id: RoomId, body: RoomMessagesPost) -> tuple[RoomMessagesOut, int]:
    caller = _caller()
    _room_for(caller, room_id)
    _check_voices(caller, body.messages)
    stored = container().rooms.post(
        room_id, [NewRoomMessage(m.speaker, m.text) for m in body.messages]
    )
    count("RoomMessages", len(stored))
    return RoomMessagesOut(messages=[RoomMessageOut.of(m) for m in stored]), 201


@router.get(
    "/v1/rooms/<room_id>/context",
    summary="A persona's block for this room: the same bytes every turn until a join or leave",
    tags=_TAGS,
    responses=answers(
        {200: ("The persona's block and its meter", json_content(RoomContextOut))}, _IN_ROOM
    ),
)
def room_context(
    room_id: RoomId, persona: Annotated[PersonaName | None, Query()] = None
) -> RoomContextOut:
    room = _room_for(_caller(), room_id)
    block = container().rooms.context(room_id, _seated(room, persona))
    return RoomContextOut.of(block, room.version)


@router.post(
    "/v1/rooms/<room_id>/turn",
    summary="A persona speaks: its block and the room's recent lines go to the model",
    tags=_TAGS,
    responses=answers(
        {200: ("The persona's reply, as stored", json_content(RoomTurnOut))},
        (*_WRITE_IN_ROOM, 429, 502),
    ),
)
def room_turn(room_id: RoomId, body: RoomTurnRequest) -> RoomTurnOut:
    caller = _caller()
    room = _room_for(caller, room_id)
    charged_to = caller.user_id if isinstance(caller, UserCaller) else None
    turn = container().rooms.turn(room_id, _seated(room, body.persona), charged_to=charged_to)
    count("RoomTurn")
    block = turn.block
    used = list(block.memory_ids) if block else []
    return RoomTurnOut(
        message=RoomMessageOut.of(turn.message),
        memory_ids=used,
        memories_used=used,
        memories_used_in=[
            UsedMemoryOut(memory_id=memory_id, block=Block.PERSONA_BLOCK.value)
            for memory_id in used
        ],
        meter=block.meter if block else None,
        usage=UsageOut.of(turn.usage),
        model=turn.model,
    )
