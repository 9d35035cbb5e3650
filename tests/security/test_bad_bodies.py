"""Oversized and malformed bodies are refused in the contract's shape, and nothing is written.

The operations and their body schemas come from the served OpenAPI document, so a body
added later is checked by the same rules; the contract's own limits are pinned as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from chatmemory.api.errors import MAX_BODY_BYTES
from chatmemory.config import Container
from tests.support.local_server import Answer, Running
from tests.support.openapi_operations import Operation, field_type, minimal_body
from tests.support.stored import stored_for

pytestmark = pytest.mark.e2e

USER = "alice"
AS_STREAM = {"Accept": "text/event-stream"}
# A number for a string: one that would even read as a future date if taken as epoch seconds.
WRONG_TYPE = {
    "string": 4102444800,
    "boolean": "yes",
    "integer": "many",
    "number": "many",
    "array": "many",
    "object": "many",
}


@pytest.fixture
def token(server: Running) -> str:
    return server.token_for(USER)


@pytest.fixture
def memory_id(server: Running, token: str) -> str:
    """One memory of the user's own, so a refused correction has a real target to spare."""
    created = server.call("POST", "/v1/memories", token=token, body={"text": "Is vegetarian."})
    assert created.status == 201
    memory: str = created.body["memory_id"]
    return memory


@pytest.fixture
def unchanged(container: Container, memory_id: str) -> Iterator[None]:
    """Fails the test if anything the user has was written while it ran."""
    before = stored_for(container.stores, USER)
    yield
    assert stored_for(container.stores, USER) == before, "a refused request wrote something"


def _with_bodies(operations: list[Operation]) -> list[Operation]:
    found = [op for op in operations if op.body_schema]
    assert found, "the document declares no request bodies"
    return found


def _send_raw(
    server: Running, op: Operation, token: str, raw: bytes, memory_id: str, *, stream: bool = False
) -> Answer:
    path = op.url(**dict.fromkeys(op.path_params, memory_id))
    return server.call(op.method, path, token=token, raw=raw, headers=AS_STREAM if stream else {})


def _error_code(answer: Answer) -> str | None:
    if not isinstance(answer.body, dict):
        return None
    code: str | None = answer.body.get("error", {}).get("code")
    return code


@pytest.mark.usefixtures("unchanged")
def test_a_body_over_64_kib_is_refused_on_every_route(
    server: Running, served_operations: list[Operation], token: str, memory_id: str
) -> None:
    # Given a body one byte over the limit (valid JSON, so only its size is wrong)
    padding = MAX_BODY_BYTES + 1 - len(b'{"text": ""}')
    too_big = b'{"text": "' + b"x" * padding + b'"}'
    assert len(too_big) == MAX_BODY_BYTES + 1

    # When it is sent to every route, asking for JSON and for a stream
    answers = {
        (op.label, stream): _send_raw(server, op, token, too_big, memory_id, stream=stream)
        for op in served_operations
        for stream in (False, True)
    }

    # Then each one is 413 in the contract's shape
    wrong = {
        label: (a.status, _error_code(a))
        for label, a in answers.items()
        if (a.status, _error_code(a)) != (413, "payload_too_large")
    }
    assert wrong == {}


@pytest.mark.usefixtures("unchanged")
def test_a_body_of_exactly_64_kib_is_judged_on_its_content(
    server: Running, token: str, memory_id: str
) -> None:
    # Given a body exactly at the limit, whose text is far too long
    padding = MAX_BODY_BYTES - len(b'{"text": ""}')
    at_limit = b'{"text": "' + b"x" * padding + b'"}'

    answer = server.call("POST", "/v1/memories", token=token, raw=at_limit)

    # Then it is read, and refused for its text, not for its size
    assert (answer.status, _error_code(answer)) == (400, "validation_error")
    assert "text" in answer.body["error"]["message"]


MALFORMED = {
    "not JSON": (b"{nope", "malformed_json"),
    "truncated JSON": (b'{"text": "Is veg', "malformed_json"),
    "not UTF-8": (b'{"text": "\xff\xfe"}', "malformed_json"),
    "a list": (b"[]", "validation_error"),
    "a string": (b'"Is vegetarian."', "validation_error"),
    "a number": (b"42", "validation_error"),
    "null": (b"null", "validation_error"),
    "empty": (b"", "validation_error"),
}


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_malformed_body_is_refused_with_400(
    server: Running, served_operations: list[Operation], token: str, memory_id: str, kind: str
) -> None:
    # Given a body that is not a JSON object, or not JSON at all
    raw, code = MALFORMED[kind]

    # When it is sent to every operation that takes a body, asking for JSON and for a stream
    answers = {
        (op.label, stream): _send_raw(server, op, token, raw, memory_id, stream=stream)
        for op in _with_bodies(served_operations)
        for stream in (False, True)
    }

    # Then each is a 400 that says what is wrong
    wrong = {
        label: (a.status, a.body)
        for label, a in answers.items()
        if (a.status, _error_code(a)) != (400, code)
    }
    assert wrong == {}


def _field_cases(
    document: dict[str, Any], operations: list[Operation]
) -> Iterator[tuple[str, Operation, str, dict[str, Any]]]:
    """(what, operation, field, body) for each way to get one field wrong, field by field."""
    for op in _with_bodies(operations):
        assert op.body_schema is not None
        for name, field in op.body_fields.items():
            kind = field_type(document, field)
            body = minimal_body(document, op.body_schema)
            yield "wrong type", op, name, {**body, name: WRONG_TYPE[kind["type"]]}
            if "maxLength" in kind:
                yield "too long", op, name, {**body, name: "a" * (kind["maxLength"] + 1)}
            if kind.get("minLength", 0) > 0:
                yield "empty", op, name, {**body, name: ""}
        if op.body_schema.get("additionalProperties") is False:
            # The user id comes from the token only: a body that names one is refused.
            yield (
                "unknown field",
                op,
                "user_id",
                {**minimal_body(document, op.body_schema), "user_id": "bob"},
            )


@pytest.mark.usefixtures("unchanged")
def test_a_bad_field_is_refused_with_400_naming_it(
    server: Running,
    document: dict[str, Any],
    served_operations: list[Operation],
    token: str,
    memory_id: str,
) -> None:
    # Given, for every field of every body, a value of the wrong type, one too long or empty
    cases = list(_field_cases(document, served_operations))
    assert {what for what, *_ in cases} == {"wrong type", "too long", "empty", "unknown field"}

    # When each is sent, asking for JSON and for a stream
    wrong = {}
    for what, op, field, body in cases:
        raw = json.dumps(body).encode()
        answer = _send_raw(server, op, token, raw, memory_id)
        streamed = _send_raw(server, op, token, raw, memory_id, stream=True)
        message = answer.body["error"]["message"] if _error_code(answer) else ""
        if (
            (answer.status, _error_code(answer)) != (400, "validation_error")
            or field not in message
            or (streamed.status, streamed.body) != (answer.status, answer.body)
        ):
            wrong[(op.label, field, what)] = (answer.status, answer.body, streamed.body)

    # Then each is refused naming the field, in the same words whether asked for a stream or not
    assert wrong == {}


CONTRACT_LIMITS = [
    # (method, path, field, longest accepted, shortest accepted) — docs/api.md's numbers
    ("POST", "/v1/memories", "text", 500, 1),
    ("PATCH", "/v1/memories/{memory_id}", "text", 500, 1),
    ("PUT", "/v1/memory/settings", "note", 400, 0),
    ("POST", "/v1/chat", "message", 8000, 1),
    ("POST", "/v1/context", "message", 8000, 1),
]


@pytest.mark.parametrize(
    "limit", CONTRACT_LIMITS, ids=[f"{m} {p} {f}" for m, p, f, *_ in CONTRACT_LIMITS]
)
def test_the_contracts_length_limits_hold(
    server: Running,
    container: Container,
    token: str,
    memory_id: str,
    limit: tuple[str, str, str, int, int],
) -> None:
    method, path, field, longest, shortest = limit
    url = path.format(memory_id=memory_id)
    before = stored_for(container.stores, USER)

    # When the field is one character over, and (if it has a minimum) empty
    over = server.call(method, url, token=token, body={field: "a" * (longest + 1)})
    empty = server.call(method, url, token=token, body={field: ""}) if shortest else None

    # Then both are refused naming the field, and nothing was written
    for refused in (over, empty):
        if refused is not None:
            assert (refused.status, _error_code(refused)) == (400, "validation_error")
            assert field in refused.body["error"]["message"]
    assert stored_for(container.stores, USER) == before

    # And at the limit itself it is accepted
    at_limit = server.call(method, url, token=token, body={field: "Is a." + "a" * (longest - 5)})
    assert at_limit.status in (200, 201), at_limit.body


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize(
    "message", [" \n\t ", "ring \x07 bell"], ids=["blank", "control character"]
)
def test_a_chat_message_that_cannot_be_stored_is_refused_before_any_reply(
    server: Running, token: str, message: str
) -> None:
    # Given a message within the length limits that no conversation could store
    body = {"message": message}

    # When it is sent as a chat turn, streamed or not, or for its context
    answers = {
        "chat": server.call("POST", "/v1/chat", token=token, body=body),
        "streamed chat": server.call("POST", "/v1/chat", token=token, body=body, headers=AS_STREAM),
        "context": server.call("POST", "/v1/context", token=token, body=body),
    }

    # Then each is a 400 naming the field, before any reply was streamed
    refused = {
        name: (a.status, _error_code(a), "message" in a.body["error"]["message"])
        for name, a in answers.items()
        if isinstance(a.body, dict)
    }
    assert refused == dict.fromkeys(answers, (400, "validation_error", True))


NOT_JSON_MEDIA_TYPES = [
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
    "application/json; charset=latin-1",
]


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("content_type", NOT_JSON_MEDIA_TYPES)
def test_a_body_sent_as_anything_but_json_is_415_and_never_echoed(
    server: Running,
    served_operations: list[Operation],
    token: str,
    memory_id: str,
    content_type: str,
) -> None:
    # Given a form-looking body holding something private, under a media type that is not JSON
    raw = b"note=my+pin+is+hunter2&text=hunter2"

    # When it is sent to every operation that takes a body, asking for JSON and for a stream
    answers = {
        (op.label, stream): server.call(
            op.method,
            op.url(**dict.fromkeys(op.path_params, memory_id)),
            token=token,
            raw=raw,
            headers={"Content-Type": content_type, **(AS_STREAM if stream else {})},
        )
        for op in _with_bodies(served_operations)
        for stream in (False, True)
    }

    # Then each is a 415 in the contract's shape that repeats nothing of the body
    wrong = {
        label: (a.status, a.body)
        for label, a in answers.items()
        if (a.status, _error_code(a)) != (415, "unsupported_media_type") or "hunter2" in str(a.body)
    }
    assert wrong == {}


def test_media_types_are_read_case_blind(server: Running, token: str) -> None:
    # Given JSON declared in capitals, with a charset
    answer = server.call(
        "POST",
        "/v1/memories",
        token=token,
        body={"text": "Likes green tea."},
        headers={"Content-Type": "APPLICATION/JSON; Charset=UTF-8"},
    )

    # Then it is read as JSON
    assert answer.status == 201 and answer.body["text"] == "Likes green tea."
