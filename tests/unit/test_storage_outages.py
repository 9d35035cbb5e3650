"""A store that cannot take requests is a 503 storage_unavailable with Retry-After, in the
one error table (api/errors.py); a request's own fault or a bug is not.

The SQLite errors are real ones, made by SQLite itself: a database at its size limit (what
a full disk answers), a read-only one, a file that cannot be opened. DynamoDB's are the
error shapes botocore raises, as PynamoDB wraps them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from pynamodb.exceptions import (
    CancellationReason,
    PutError,
    TransactWriteError,
    VerboseClientError,
)

from chatmemory.api.errors import (
    STORAGE_RETRY_AFTER_SECONDS,
    describe_error,
    refusal_headers,
    storage_outage,
)


def _full(folder: Path) -> None:
    """SQLITE_FULL: "database or disk is full", as a full disk answers a write."""
    connection = sqlite3.connect(folder / "full.sqlite3", isolation_level=None)
    connection.execute("CREATE TABLE t (x BLOB)")
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")
    connection.execute("INSERT INTO t VALUES (randomblob(100000))")


def _read_only(folder: Path) -> None:
    """SQLITE_READONLY: "attempt to write a readonly database"."""
    path = folder / "read-only.sqlite3"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    connection.execute("INSERT INTO t VALUES (1)")


def _cannot_open(folder: Path) -> None:
    """SQLITE_CANTOPEN: "unable to open database file" (its folder is gone)."""
    sqlite3.connect(folder / "gone" / "db.sqlite3").execute("SELECT 1")


def _locked(folder: Path) -> None:
    """SQLITE_BUSY: "database is locked", another writer held it past the timeout."""
    path = folder / "busy.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    sqlite3.connect(path, timeout=0, isolation_level=None).execute("BEGIN IMMEDIATE")


def _raised(make: Callable[[Path], None], folder: Path) -> Exception:
    with pytest.raises(sqlite3.Error) as raised:
        make(folder)
    return raised.value


def _client_error(code: str, operation: str = "PutItem") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "…"}}, operation)


@pytest.mark.parametrize("make", [_full, _read_only, _cannot_open, _locked])
def test_a_store_that_cannot_be_written_is_503_storage_unavailable_with_retry_after(
    make: Callable[[Path], None], tmp_path: Path
) -> None:
    # Given the error SQLite itself raises for a store in that state
    error = _raised(make, tmp_path)

    # When the error table describes it
    status, code, message = describe_error(error)

    # Then it is the store's condition, to try again later — never a 500
    assert (status, code) == (HTTPStatus.SERVICE_UNAVAILABLE, "storage_unavailable")
    assert "try again" in message and "sqlite" not in message.lower()
    assert refusal_headers(error, status) == {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)}


@pytest.mark.parametrize(
    "error",
    [
        PutError("Failed to put item", _client_error("ProvisionedThroughputExceededException")),
        PutError("Failed to put item", _client_error("ThrottlingException")),
        PutError("Failed to put item", _client_error("RequestLimitExceeded")),
        PutError("Failed to put item", _client_error("InternalServerError")),
        _client_error("ServiceUnavailable", "Query"),
        PutError("Failed to put item", EndpointConnectionError(endpoint_url="https://x")),
        PutError("Failed to put item", ReadTimeoutError(endpoint_url="https://x")),
    ],
    ids=lambda error: type(getattr(error, "cause", None) or error).__name__,
)
def test_a_throttled_or_unreachable_table_is_503_storage_unavailable(error: Exception) -> None:
    status, code, _ = describe_error(error)

    assert (status, code) == (HTTPStatus.SERVICE_UNAVAILABLE, "storage_unavailable")
    assert refusal_headers(error, status) == {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)}


def test_a_transaction_cancelled_by_throttling_is_an_outage_and_a_lost_race_is_not() -> None:
    def cancelled(reason: str) -> TransactWriteError:
        # As PynamoDB raises it: botocore's error, reasons and all, inside its own
        response = {
            "Error": {"Code": "TransactionCanceledException", "Message": "…"},
            "CancellationReasons": [{"Code": "None"}, {"Code": reason, "Message": "…"}],
        }
        botocore_error = ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]
        wrapped = VerboseClientError(
            {"Error": response["Error"]},
            "TransactWriteItems",
            cancellation_reasons=[None, CancellationReason(code=reason)],
        )
        wrapped.__cause__ = botocore_error
        return TransactWriteError("Failed to write transaction items", wrapped)

    assert storage_outage(cancelled("ThrottlingError"))
    assert not storage_outage(cancelled("ConditionalCheckFailed"))


@pytest.mark.parametrize(
    "error",
    [
        sqlite3.IntegrityError("UNIQUE constraint failed"),
        sqlite3.ProgrammingError("Cannot operate on a closed database."),
        PutError("Failed to put item", _client_error("ValidationException")),
        _client_error("ConditionalCheckFailedException"),
        RuntimeError("a bug"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_bug_or_a_refused_write_is_not_called_an_outage(error: Exception) -> None:
    status, code, _ = describe_error(error)

    assert (status, code) == (HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error")
    assert refusal_headers(error, status) is None
