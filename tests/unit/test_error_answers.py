"""What a failure answers: a failure after a write is told as such, and an unexpected one
never claims that nothing was applied (one error table, api/errors.py)."""

from __future__ import annotations

from http import HTTPStatus

from chatmemory.api.errors import describe_error
from chatmemory.domain.errors import PartlyApplied


def test_an_unexpected_failure_never_says_the_request_was_not_applied() -> None:
    status, code, message = describe_error(RuntimeError("boom"))

    assert (status, code) == (HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error")
    assert "not applied" not in message
    assert "may have been applied" in message


def test_a_failure_after_part_of_a_request_was_written_says_what_stands() -> None:
    told = "2 memory(ies) were imported; they are kept, and importing again is safe"

    status, code, message = describe_error(PartlyApplied(told))

    assert (status, code, message) == (HTTPStatus.INTERNAL_SERVER_ERROR, "partly_applied", told)
