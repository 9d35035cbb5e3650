"""Export and import (docs/api.md "Export and import"): parse, call the service, shape the
document or the report."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from chatmemory.api.documented import answers, json_content
from chatmemory.api.identity import user_id_from_event
from chatmemory.api.portability_schemas import ExportDocument, ImportBatch, ImportReportOut
from chatmemory.config import container
from chatmemory.domain.portability import EXPORT_PAGE_MAX
from chatmemory.telemetry import count

router = Router()

_TAGS = ["memories"]
#: rows per export page unless `limit` says otherwise
EXPORT_PAGE_DEFAULT = 200


def _user() -> str:
    return user_id_from_event(router.current_event.raw_event)


# Declared before /v1/memories/{memory_id} is ever matched: the resolver tries static
# paths first, and so does API Gateway.
@router.get(
    "/v1/memories/export",
    summary="Export your memories: every version, with your settings (one page)",
    description=(
        "A `chatmemory.export/1` document: your settings and up to `limit` memories of "
        "every status, newest first, never a deleted one. Follow `next` for the rest. A "
        "page has the shape `POST /v1/memories/import` takes, in slices of up to 100."
    ),
    tags=_TAGS,
    responses=answers({200: ("One page of your export", json_content(ExportDocument))}),
)
def export_memories(
    *,
    limit: Annotated[int, Query(ge=1, le=EXPORT_PAGE_MAX)] = EXPORT_PAGE_DEFAULT,
    next: Annotated[str | None, Query(max_length=2048)] = None,
) -> ExportDocument:
    page = container().portability.export_page(_user(), limit=limit, cursor=next)
    return ExportDocument.of(page)


@router.post(
    "/v1/memories/import",
    summary="Import memories from an export (idempotent: what is already here is left)",
    description=(
        "Takes a `chatmemory.export/1` document of at most 100 memories (a page of an "
        "export, or a slice of one). The whole batch is validated before anything is "
        "written; a memory the write filter refuses, or one that cannot land here, is "
        "skipped with its reason, and the rest are imported. History comes back as history."
    ),
    tags=_TAGS,
    responses=answers(
        {200: ("What was imported, left, and skipped", json_content(ImportReportOut))}
    ),
)
def import_memories(body: ImportBatch) -> ImportReportOut:
    user_id = _user()
    rows = body.rows(user_id)
    settings = body.user.settings.to_import() if body.user is not None else None
    report = container().portability.import_batch(user_id, rows, settings)
    count("MemoryImported", report.imported)
    return ImportReportOut.of(report)
