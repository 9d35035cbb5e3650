"""A request body must say it is JSON: a form, plain text or a body with no Content-Type
at all is refused (415) before anything reads it. Regression: a typeless body was read as
JSON (a browser sends one cross-site with no preflight)."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from chatmemory.api.media_types import refuse_body


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "",
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
    ],
)
def test_a_body_that_does_not_say_it_is_utf8_json_is_refused(content_type: str | None) -> None:
    refused = refuse_body(content_type, has_body=True)
    assert refused is not None and refused.status is HTTPStatus.UNSUPPORTED_MEDIA_TYPE


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "APPLICATION/JSON; charset=UTF-8", "application/vnd.x+json"],
)
def test_json_is_read(content_type: str) -> None:
    assert refuse_body(content_type, has_body=True) is None


def test_no_body_needs_no_type() -> None:
    assert refuse_body(None, has_body=False) is None
