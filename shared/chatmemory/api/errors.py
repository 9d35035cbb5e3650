"""Every failure leaves in the contract's shape: {"error": {"code", "message"}}. One place."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as StoreConnectionError

from chatmemory.api.identity import NOT_AUTHENTICATED, Forbidden, InvalidToken, Unauthorized
from chatmemory.config import ConfigurationError
from chatmemory.domain.errors import (
    ConcurrentChange,
    DomainError,
    InstructionRefused,
    InvalidField,
    MemoryDisabled,
    ModelUnavailable,
    NotFound,
    PartlyApplied,
    RateLimited,
    SecretRefused,
    StorageFull,
)
from chatmemory.telemetry import count, logger

MAX_BODY_BYTES = 64 * 1024
_NAMEABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}(?:\.[A-Za-z0-9_]{1,40}){0,3}")
NOT_JSON = "the request body is not valid JSON"


def error_response(
    status: HTTPStatus, code: str, message: str, headers: dict[str, str] | None = None
) -> Response[str]:
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps({"error": {"code": code, "message": message}}),
        headers=headers,
    )


def describe_validation_errors(errors: Sequence[Any]) -> tuple[str, str]:
    """(code, message) for pydantic errors, naming the field and never echoing the input."""
    first = errors[0] if errors else {}
    kind = first.get("type", "")
    location = [str(part) for part in first.get("loc", ())]
    context = first.get("ctx") or {}
    if kind == "json_invalid":
        return "malformed_json", NOT_JSON
    where, field = (location[0], ".".join(location[1:])) if location else ("body", "")
    if where == "body" and not field:
        if kind == "missing":
            return "validation_error", "the request body is required: send a JSON object"
        return "validation_error", "the request body must be a JSON object"
    label = field or where
    if not _NAMEABLE.fullmatch(label):
        # A key the client made up may be anything it typed: name it only if it reads as
        # a field name, so an error never echoes text back.
        label = "(a field not in this API)"
    reason = {
        "missing": "is required",
        "extra_forbidden": "is not a known field",
        "string_too_short": "must not be empty",
        "string_too_long": f"is too long (at most {context.get('max_length')} characters)",
        "string_pattern_mismatch": "has an invalid format",
        "string_type": "must be a string",
        "list_type": "must be a list",
        "too_short": f"must hold at least {context.get('min_length')} item(s)",
        "too_long": f"holds too many items (at most {context.get('max_length')})",
        "model_type": "must be a JSON object",
        "model_attributes_type": "must be a JSON object",
        "bool_type": "must be true or false",
        "bool_parsing": "must be true or false",
        "int_parsing": "must be an integer",
        "int_type": "must be an integer",
        "greater_than_equal": f"must be at least {context.get('ge')}",
        "less_than_equal": f"must be at most {context.get('le')}",
        "enum": "must be one of the allowed values",
        "datetime_parsing": "must be an ISO-8601 timestamp",
        "datetime_from_date_parsing": "must be an ISO-8601 timestamp",
        "timezone_aware": "must carry a timezone (e.g. end with Z)",
        "datetime_type": "must be an ISO-8601 timestamp",
    }.get(kind, "is invalid")
    if isinstance(context.get("error"), InvalidField):  # a domain rule, checked at the door
        reason = context["error"].reason
    suffix = f" ({len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return "validation_error", f"{where} field '{label}' {reason}{suffix}"


INTERNAL_ERROR = (
    HTTPStatus.INTERNAL_SERVER_ERROR,
    "internal_error",
    # Never "not applied": a failure after a write leaves that write standing.
    "something went wrong on our side; part of the request may have been applied",
)
# Most specific first: the first matching type decides.
_MAPPING: tuple[tuple[type[Exception], HTTPStatus, str, Callable[[Any], str]], ...] = (
    (InvalidField, HTTPStatus.BAD_REQUEST, "validation_error", lambda e: f"{e.field} {e.reason}"),
    (SecretRefused, HTTPStatus.BAD_REQUEST, "secret_refused", str),
    (InstructionRefused, HTTPStatus.BAD_REQUEST, "instruction_refused", str),
    # Only the request body is decoded from bytes here: JSON that is not UTF-8 (docs/api.md).
    (UnicodeDecodeError, HTTPStatus.BAD_REQUEST, "malformed_json", lambda _: NOT_JSON),
    # The reason a token failed is for logs; the caller learns only that it did.
    (InvalidToken, HTTPStatus.UNAUTHORIZED, "unauthorized", lambda _: NOT_AUTHENTICATED),
    (Unauthorized, HTTPStatus.UNAUTHORIZED, "unauthorized", str),
    (Forbidden, HTTPStatus.FORBIDDEN, "forbidden", str),
    (NotFound, HTTPStatus.NOT_FOUND, "not_found", lambda e: f"{e.kind} not found"),
    (PartlyApplied, HTTPStatus.INTERNAL_SERVER_ERROR, "partly_applied", str),
    (ConcurrentChange, HTTPStatus.CONFLICT, "conflict", str),
    (MemoryDisabled, HTTPStatus.CONFLICT, "memory_disabled", str),
    (RateLimited, HTTPStatus.TOO_MANY_REQUESTS, "rate_limited", str),
    (StorageFull, HTTPStatus.CONFLICT, "storage_full", str),
    (
        ModelUnavailable,
        HTTPStatus.BAD_GATEWAY,
        "model_unavailable",
        lambda _: "the model could not answer right now; nothing of this turn was kept — try again",
    ),
)


STORAGE_RETRY_AFTER_SECONDS = 10
STORAGE_UNAVAILABLE = (
    HTTPStatus.SERVICE_UNAVAILABLE,
    "storage_unavailable",
    "the store cannot take this request right now; try again shortly",
)
# SQLite's primary result codes for a store that cannot serve now, whatever the request:
# busy past the timeout, read-only, an I/O error, full, cannot open the file. Its messages
# ("disk I/O error", "database or disk is full", "attempt to write a readonly database",
# "unable to open database file", "database is locked") name the same codes.
_SQLITE_OUTAGES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
    }
)
# DynamoDB's answers (an error code, or a transaction's cancellation reason) that say it
# cannot take the request now, after botocore's own retries: throttled, or down.
_DYNAMODB_OUTAGES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ProvisionedThroughputExceeded",
        "ThrottlingException",
        "ThrottlingError",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


def storage_outage(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) says the store cannot take requests right now: a
    full disk, a read-only or missing state folder, a throttled or unreachable table —
    the store's condition, not the request's fault or a bug."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error):
            code = getattr(current, "sqlite_errorcode", None)
            return isinstance(code, int) and code & 0xFF in _SQLITE_OUTAGES
        if isinstance(current, StoreConnectionError | HTTPClientError):
            return True  # the table's endpoint did not answer
        reasons = getattr(current, "cancellation_reasons", None) or []  # PynamoDB's
        if any(getattr(reason, "code", None) in _DYNAMODB_OUTAGES for reason in reasons):
            return True
        if isinstance(current, ClientError):
            response = current.response
            codes = {response.get("Error", {}).get("Code")} | {
                reason.get("Code")
                for reason in response.get("CancellationReasons") or []
                if isinstance(reason, dict)
            }
            return bool(codes & _DYNAMODB_OUTAGES)
        # PynamoDB keeps botocore's error as `cause`; anything else chains it.
        current = getattr(current, "cause", None) or current.__cause__
    return False


# Refusals and outages worth a graph (the code only: never the text that was refused).
_METRICS = {
    "secret_refused": "SecretRefused",
    "instruction_refused": "InstructionRefused",
    "model_unavailable": "ModelUnavailable",
    "rate_limited": "RateLimited",
    "storage_unavailable": "StorageUnavailable",
}


def describe_error(exc: Exception) -> tuple[HTTPStatus, str, str]:
    """(status, code, message) for any exception, in the contract's words."""
    for kind, status, code, message in _MAPPING:
        if isinstance(exc, kind):
            return status, code, message(exc)
    if storage_outage(exc):
        return STORAGE_UNAVAILABLE
    return INTERNAL_ERROR


def challenge(status: HTTPStatus) -> dict[str, str] | None:
    """The headers a refusal carries: a 401 says which scheme to authenticate with."""
    return {"WWW-Authenticate": "Bearer"} if status == HTTPStatus.UNAUTHORIZED else None


def refusal_headers(exc: Exception, status: HTTPStatus) -> dict[str, str] | None:
    """The headers `exc`'s answer carries: the 401 challenge, a 429's Retry-After (the
    seconds until the user's next quota window), or a storage outage's."""
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(exc.retry_after)}
    if status == HTTPStatus.SERVICE_UNAVAILABLE and storage_outage(exc):
        return {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)}
    return challenge(status)


def count_refusal(code: str) -> None:
    """One data point for a refusal worth a graph (the code only, never what was refused)."""
    metric = _METRICS.get(code)
    if metric:
        count(metric)


def register_error_handlers(app: APIGatewayHttpResolver) -> None:
    """Map domain and framework exceptions to the contract, once for every route."""

    @app.exception_handler(RequestValidationError)
    def _invalid_request(exc: RequestValidationError) -> Response[str]:
        code, message = describe_validation_errors(exc.errors())
        return error_response(HTTPStatus.BAD_REQUEST, code, message)

    @app.exception_handler([DomainError, Unauthorized, UnicodeDecodeError])
    def _domain(exc: Exception) -> Response[str]:
        status, code, message = describe_error(exc)
        count_refusal(code)
        return error_response(status, code, message, refusal_headers(exc, status))

    @app.not_found
    def _no_route(_: NotFoundError) -> Response[str]:
        from chatmemory.api.openapi import allowed_methods  # noqa: PLC0415 - every router

        allowed = allowed_methods(app.current_event.path)
        if allowed:
            return error_response(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "method_not_allowed",
                f"{app.current_event.http_method} is not allowed here; use {', '.join(allowed)}",
                {"Allow": ", ".join(allowed)},
            )
        return error_response(HTTPStatus.NOT_FOUND, "not_found", "no such route")

    @app.exception_handler(ConfigurationError)
    def _misconfigured(exc: ConfigurationError) -> Response[str]:
        # The deployment's fault, not the caller's: a 500 that names nothing, while the log
        # tells the operator which settings and why (never their values).
        logger.error("configuration error", extra={"settings": exc.problems})
        return error_response(*INTERNAL_ERROR)

    @app.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response[str]:
        # The type only: exception messages may quote user text, which never goes to logs.
        if storage_outage(exc):
            logger.warning("storage unavailable", extra={"error_type": type(exc).__name__})
            count_refusal(STORAGE_UNAVAILABLE[1])
            return error_response(
                *STORAGE_UNAVAILABLE, {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)}
            )
        logger.error("unhandled error", extra={"error_type": type(exc).__name__})
        return error_response(*INTERNAL_ERROR)
