"""The user's controls (docs/api.md "Memories"): parse, call a service, shape the response."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from chatmemory.api.documented import EVERY_CALL, answers, json_content
from chatmemory.api.identity import user_id_from_event
from chatmemory.api.schemas import (
    EventOut,
    Grouping,
    HistoryOut,
    KindFilter,
    MemoryCorrection,
    MemoryCreate,
    MemoryOut,
    MemoryPage,
    NoticeOut,
    NoticesOut,
    PersonaGroupOut,
    PersonaGroupsOut,
    PersonaName,
    SettingsOut,
    SettingsUpdate,
    StatusFilter,
    UndoOut,
)
from chatmemory.config import container
from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Kind, Status
from chatmemory.domain.time import as_of_instant
from chatmemory.services.memories import NewMemory
from chatmemory.services.persona_view import PersonaView
from chatmemory.telemetry import count

router = Router()

MemoryId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
NoticeId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
_WITH_ID = (*EVERY_CALL, 404)
_WRITE = (*EVERY_CALL, 409)
_WRITE_WITH_ID = (*EVERY_CALL, 404, 409)
_TAGS = ["memories"]


def _user() -> str:
    return user_id_from_event(router.current_event.raw_event)


def _no_content() -> Response[str]:
    return Response(status_code=204, body="")  # no body, so no Content-Type either


@router.get(
    "/v1/memories",
    summary="List your memories (or, with group=persona, what each persona remembers)",
    description=(
        "`group=persona`: every memory of the `status` asked, grouped by the persona that "
        "holds it, each group with the meter of the block that persona would build for you "
        "alone; closed and superseded ones carry their `arc`. Not paged: `limit` and `next` "
        "are for the flat listing."
    ),
    tags=_TAGS,
    responses=answers(
        {
            200: (
                "A page of your memories; grouped by persona when asked",
                {"application/json": {"model": MemoryPage | PersonaGroupsOut}},
            )
        }
    ),
)
def list_memories(
    *,
    persona: Annotated[PersonaName | None, Query()] = None,
    status: Annotated[StatusFilter, Query()] = StatusFilter.ACTIVE,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    next: Annotated[str | None, Query(max_length=2048)] = None,
    group: Annotated[Grouping | None, Query()] = None,
    kind: Annotated[KindFilter | None, Query()] = None,
    as_of: Annotated[str | None, Query(max_length=40)] = None,
) -> MemoryPage | PersonaGroupsOut:
    archived = status is StatusFilter.ARCHIVED
    wanted = (
        None if status is StatusFilter.ALL else Status.ACTIVE if archived else Status(status.value)
    )
    at = _as_of(as_of, status)
    if group is Grouping.PERSONA:
        if next is not None:
            raise InvalidField("next", "does not apply: the grouped view is not paged")
        if kind is not None:
            raise InvalidField("kind", "does not apply: the grouped view shows every kind")
        if at is not None:
            raise InvalidField("as_of", "does not apply: the grouped view shows today")
        groups = _persona_view().by_persona(_user(), status=wanted, persona=persona)
        now = _now()
        return PersonaGroupsOut(personas=[PersonaGroupOut.of(g, now) for g in groups])
    page = container().memories.list_memories(
        _user(),
        status=wanted,
        archived=archived,
        persona=persona,
        kind=Kind(kind.value) if kind is not None else None,
        as_of=at,
        limit=limit,
        cursor=next,
    )
    seen = at or _now()
    return MemoryPage(memories=[MemoryOut.of(m, seen) for m in page.items], next=page.next_cursor)


def _as_of(text: str | None, status: StatusFilter) -> datetime | None:
    """The instant an `as_of` names: a date alone means the end of that day (UTC), so
    `as_of=2026-09-15` is what was believed on the 15th."""
    if text is None:
        return None
    if status is not StatusFilter.ACTIVE:
        raise InvalidField("status", "does not apply with as_of: it lists what was believed")
    return as_of_instant(text)


def _now() -> datetime:
    """The instant memories are read at (the service's clock, so tests can move it):
    shelf life and retention move with it, and a thread's state is read for its day."""
    return container().clock.now()


def _persona_view() -> PersonaView:
    return container().persona_view


@router.post(
    "/v1/memories",
    summary="Remember something you state",
    tags=_TAGS,
    responses=answers(
        {
            201: ("Remembered: the new memory", json_content(MemoryOut)),
            200: ("Already remembered in these words: the memory kept", json_content(MemoryOut)),
        },
        _WRITE,
    ),
)
def create_memory(body: MemoryCreate) -> tuple[MemoryOut, int]:
    created = container().memories.create(
        _user(),
        NewMemory(
            text=body.text,
            category=body.category,
            persona=body.persona or rules.DEFAULT_PERSONA,
            valid_until=body.valid_until,
        ),
    )
    if not created.created:  # the same memory already exists: say so, with the one kept
        return MemoryOut.of(created.memory, _now()), 200
    count("MemoryCreated")
    return MemoryOut.of(created.memory, _now()), 201


@router.delete(
    "/v1/memories",
    summary="Forget everything",
    tags=_TAGS,
    responses=answers({204: ("Forgotten; the purge of every copy follows", None)}),
)
def forget_everything() -> Response[str]:
    forgotten = container().memories.forget_everything(_user())
    count("ForgetEverything")
    count("MemoryDeleted", forgotten)
    return _no_content()


@router.get(
    "/v1/memories/<memory_id>",
    summary="One memory",
    tags=_TAGS,
    responses=answers({200: ("The memory", json_content(MemoryOut))}, _WITH_ID),
)
def get_memory(memory_id: MemoryId) -> MemoryOut:
    return MemoryOut.of(container().memories.get(_user(), memory_id), _now())


@router.patch(
    "/v1/memories/<memory_id>",
    summary="Correct a memory (the old version is kept as history)",
    tags=_TAGS,
    responses=answers(
        {200: ("The corrected memory (a new version)", json_content(MemoryOut))}, _WRITE_WITH_ID
    ),
)
def correct_memory(memory_id: MemoryId, body: MemoryCorrection) -> MemoryOut:
    corrected = container().memories.correct(
        _user(), memory_id, text=body.text, category=body.category, valid_until=body.valid_until
    )
    count("MemoryCorrected")
    return MemoryOut.of(corrected, _now())


@router.delete(
    "/v1/memories/<memory_id>",
    summary="Delete a memory",
    tags=_TAGS,
    responses=answers({204: ("Deleted; the purge of every copy follows", None)}, _WITH_ID),
)
def delete_memory(memory_id: MemoryId) -> Response[str]:
    container().memories.delete(_user(), memory_id)
    count("MemoryDeleted")
    return _no_content()


@router.get(
    "/v1/memories/<memory_id>/history",
    summary="What happened to a memory",
    tags=_TAGS,
    responses=answers({200: ("What happened to it", json_content(HistoryOut))}, _WITH_ID),
)
def memory_history(memory_id: MemoryId) -> HistoryOut:
    events = container().memories.history(_user(), memory_id)
    return HistoryOut(events=[EventOut.of(event) for event in events])


@router.get(
    "/v1/memory/settings",
    summary="Your memory settings",
    tags=["settings"],
    responses=answers({200: ("Your settings", json_content(SettingsOut))}),
)
def get_settings() -> SettingsOut:
    return SettingsOut.of(container().memory_settings.get(_user()))


@router.put(
    "/v1/memory/settings",
    summary="Switch memory on or off; set your note; mute personas",
    tags=["settings"],
    responses=answers({200: ("Your settings, changed", json_content(SettingsOut))}),
)
def put_settings(body: SettingsUpdate) -> SettingsOut:
    muted = None if body.muted_personas is None else frozenset(body.muted_personas)
    updated = container().memory_settings.update(
        _user(),
        enabled=body.enabled,
        note=body.note,
        muted_personas=muted,
        timezone=body.timezone,
    )
    return SettingsOut.of(updated)


@router.get(
    "/v1/notices",
    summary="Memories noted in the background",
    tags=["notices"],
    responses=answers({200: ("Notices not yet undone", json_content(NoticesOut))}),
)
def list_notices() -> NoticesOut:
    notices = container().notices.pending(_user())
    return NoticesOut(notices=[NoticeOut.of(notice) for notice in notices])


@router.post(
    "/v1/notices/<notice_id>/undo",
    summary="Undo a notice: delete what it announced",
    tags=["notices"],
    responses=answers({200: ("What was undone", json_content(UndoOut))}, _WITH_ID),
)
def undo_notice(notice_id: NoticeId) -> UndoOut:
    deleted = container().notices.undo(_user(), notice_id)
    count("MemoryDeleted", len(deleted))
    return UndoOut(notice_id=notice_id, deleted=deleted)
