"""The memories Lambda, driven by the sample events in events/memories/ (API Gateway's shape)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.ports.memories import MemoryQuery
from tests.support.functions import EVENTS, invoke, load_handler, sample_event

API_ROUTES = {
    ("post", "/v1/context"),
    ("get", "/v1/memories"),
    ("post", "/v1/memories"),
    ("delete", "/v1/memories"),
    ("get", "/v1/memories/{memory_id}"),
    ("patch", "/v1/memories/{memory_id}"),
    ("delete", "/v1/memories/{memory_id}"),
    ("get", "/v1/memories/{memory_id}/history"),
    ("get", "/v1/memories/export"),
    ("post", "/v1/memories/import"),
    ("get", "/v1/memory/settings"),
    ("put", "/v1/memory/settings"),
    ("get", "/v1/notices"),
    ("post", "/v1/notices/{notice_id}/undo"),
    ("delete", "/v1/conversations"),
    ("delete", "/v1/conversations/{conversation_id}"),
    ("get", "/v1/health"),
    ("get", "/v1/openapi.json"),
}


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("memories")


def event(name: str) -> dict[str, Any]:
    return sample_event("memories", name)


def create(handler: Any, text: str = "Is vegetarian.", user: str = "user-123") -> dict[str, Any]:
    reply = invoke(handler, event("create_memory"), user=user, body={"text": text})
    assert reply.status == 201, reply.body
    created: dict[str, Any] = reply.body
    return created


def stored_count(container: Container, user: str = "user-123") -> int:
    return sum(1 for _ in container.stores.memories.iter_memories(user, MemoryQuery(status=None)))


# ---- every sample event --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.stem for p in (EVENTS / "memories").glob("*.json")))
def test_every_sample_event_gets_an_answer_in_the_contracts_shape(
    handler: Any, container: Container, name: str
) -> None:
    reply = invoke(handler, event(name))

    assert reply.status < 500
    if reply.status >= 400:
        assert reply.error_code and reply.body["error"]["message"]


# ---- the whole life of a memory ------------------------------------------------------


def test_a_memory_is_created_read_corrected_and_deleted(handler: Any, container: Container) -> None:
    created = create(handler)
    ids = {"memory_id": created["memory_id"]}
    assert created["stated_by"] == "user" and created["status"] == "active"
    assert created["created_at"].endswith("Z")

    listed = invoke(handler, event("list_memories"))
    assert [m["memory_id"] for m in listed.body["memories"]] == [created["memory_id"]]
    assert invoke(handler, event("get_memory"), path_ids=ids).body == created

    corrected = invoke(handler, event("correct_memory"), path_ids=ids, body={"text": "Is vegan."})
    assert corrected.status == 200
    assert (
        corrected.body["text"] == "Is vegan."
        and corrected.body["supersedes"] == created["memory_id"]
    )
    history = invoke(handler, event("list_memories"), query={"status": "superseded"})
    assert [m["text"] for m in history.body["memories"]] == ["Is vegetarian."]

    new_ids = {"memory_id": corrected.body["memory_id"]}
    events = invoke(handler, event("memory_history"), path_ids=new_ids).body["events"]
    assert [e["op"] for e in events] == ["add", "update", "add"]

    assert invoke(handler, event("delete_memory"), path_ids=new_ids).status == 204
    assert invoke(handler, event("get_memory"), path_ids=new_ids).status == 404
    assert invoke(handler, event("get_memory"), path_ids=ids).status == 404
    everything = invoke(handler, event("list_memories"), query={"status": "all"})
    assert everything.body["memories"] == []


def test_forget_everything_empties_every_listing(handler: Any, container: Container) -> None:
    for text in ("Is vegetarian.", "Lives in Pune.", "Has a cat named Miso."):
        create(handler, text)

    assert invoke(handler, event("forget_everything")).status == 204

    for status in ("active", "superseded", "closed", "all"):
        assert (
            invoke(handler, event("list_memories"), query={"status": status}).body["memories"] == []
        )


def test_pages_follow_the_next_cursor(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    for index in range(5):
        create(handler, f"Fact number {index}.")
        clock.advance(timedelta(seconds=1))

    first = invoke(handler, event("list_memories"), query={"limit": "2"})
    second = invoke(
        handler, event("list_memories"), query={"limit": "2", "next": first.body["next"]}
    )

    assert [m["text"] for m in first.body["memories"]] == ["Fact number 4.", "Fact number 3."]
    assert [m["text"] for m in second.body["memories"]] == ["Fact number 2.", "Fact number 1."]


def test_settings_switch_memory_off_and_keep_the_note(handler: Any, container: Container) -> None:
    reply = invoke(handler, event("put_settings"), body={"enabled": False, "note": "Call me Sam."})
    assert reply.status == 200 and reply.body == {
        "enabled": False,
        "note": "Call me Sam.",
        "muted_personas": [],
        "timezone": "UTC",
    }

    refused = invoke(handler, event("create_memory"), body={"text": "Is vegetarian."})

    assert (refused.status, refused.error_code) == (409, "memory_disabled")
    assert stored_count(container) == 0
    assert invoke(handler, event("get_settings")).body == {
        "enabled": False,
        "note": "Call me Sam.",
        "muted_personas": [],
        "timezone": "UTC",
    }


# ---- identity and isolation ----------------------------------------------------------


def test_without_verified_claims_every_route_is_401(handler: Any, container: Container) -> None:
    for name in ("list_memories", "create_memory", "get_memory", "put_settings", "list_notices"):
        reply = invoke(handler, event(name), user=None)
        assert (reply.status, reply.error_code) == (401, "unauthorized"), name
    assert stored_count(container) == 0


def test_another_users_memory_is_404_on_every_verb(handler: Any, container: Container) -> None:
    alices = {"memory_id": create(handler, user="alice")["memory_id"]}

    for name, body in (
        ("get_memory", ...),
        ("correct_memory", {"text": "Eats meat."}),
        ("delete_memory", ...),
        ("memory_history", ...),
    ):
        reply = invoke(handler, event(name), user="mallory", path_ids=alices, body=body)
        assert (reply.status, reply.error_code) == (404, "not_found"), name
    assert invoke(handler, event("undo_notice"), user="mallory").status == 404
    assert invoke(handler, event("get_memory"), user="alice", path_ids=alices).status == 200


def test_an_id_nobody_created_is_404_on_every_verb(handler: Any, container: Container) -> None:
    for name, body in (
        ("get_memory", ...),
        ("correct_memory", {"text": "Eats meat."}),
        ("delete_memory", ...),
        ("memory_history", ...),
    ):
        assert invoke(handler, event(name), body=body).status == 404, name


# ---- bad input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "x" * 501}, "text"),
        ({"text": "ok", "category": "Not Snake"}, "category"),
        ({"text": "ok", "persona": "Bad Persona"}, "persona"),
        ({"text": "ok", "valid_until": "tomorrow"}, "valid_until"),
        ({"text": "ok", "valid_until": "2027-01-01T00:00:00"}, "valid_until"),
        ({"text": "ok", "surprise": 1}, "surprise"),
        ({}, "text"),
    ],
)
def test_a_bad_field_is_a_400_that_names_it(
    handler: Any, container: Container, body: dict[str, Any], field: str
) -> None:
    reply = invoke(handler, event("create_memory"), body=body)

    assert (reply.status, reply.error_code) == (400, "validation_error")
    assert field in reply.body["error"]["message"]
    assert stored_count(container) == 0


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"a string"', "null"])
def test_a_body_that_is_not_a_json_object_is_a_400(
    handler: Any, container: Container, raw: str
) -> None:
    reply = invoke(handler, event("create_memory"), raw_body=raw)

    assert reply.status == 400 and reply.error_code in ("malformed_json", "validation_error")
    assert stored_count(container) == 0


def test_a_body_over_64_kib_is_a_413_and_nothing_is_written(
    handler: Any, container: Container
) -> None:
    reply = invoke(handler, event("create_memory"), body={"text": "x" * (65 * 1024)})

    assert (reply.status, reply.error_code) == (413, "payload_too_large")
    assert stored_count(container) == 0


def test_a_secret_is_refused_with_secret_refused(handler: Any, container: Container) -> None:
    reply = invoke(handler, event("create_memory"), body={"text": "my password is Tr0ub4dor&3"})

    assert (reply.status, reply.error_code) == (400, "secret_refused")
    assert "Tr0ub4dor" not in reply.body["error"]["message"]
    assert stored_count(container) == 0


def test_limits_on_queries_are_enforced(handler: Any, container: Container) -> None:
    for query in ({"limit": "0"}, {"limit": "101"}, {"status": "deleted"}, {"next": "forged"}):
        reply = invoke(handler, event("list_memories"), query=query)
        assert (reply.status, reply.error_code) == (400, "validation_error"), query


def test_unknown_routes_are_404_and_wrong_methods_are_405(
    handler: Any, container: Container
) -> None:
    wrong_method = event("list_memories")
    wrong_method["requestContext"]["http"]["method"] = "PUT"
    unknown = event("list_memories")
    unknown["rawPath"] = unknown["requestContext"]["http"]["path"] = "/v1/memoirs"

    put = invoke(handler, wrong_method)
    missing = invoke(handler, unknown)

    assert (put.status, put.error_code) == (405, "method_not_allowed")
    assert set(put.headers["Allow"].split(", ")) == {"GET", "POST", "DELETE"}
    assert (missing.status, missing.error_code) == (404, "not_found")


# ---- health and OpenAPI --------------------------------------------------------------


def test_health_needs_no_token(handler: Any, container: Container) -> None:
    assert invoke(handler, event("health"), user=None).body == {"status": "ok"}


def test_the_openapi_document_is_valid_and_lists_every_route(
    handler: Any, container: Container
) -> None:
    document = invoke(handler, event("openapi"), user=None).body

    validate(document)
    routes = {(method, path) for path, ops in document["paths"].items() for method in ops}
    assert routes >= API_ROUTES


# ---- distinct memories stay distinct ---------------------------------------------------
# Regression: "Blood type is A+." then "Blood type is A-." answered 201 with the first
# memory (its identity dropped every symbol), and so did C++ / C# and any emoji-only text.


def remember(handler: Any, text: str) -> tuple[int, dict[str, Any]]:
    reply = invoke(handler, event("create_memory"), body={"text": text})
    return reply.status, reply.body


def listed_texts(handler: Any) -> list[str]:
    reply = invoke(handler, event("list_memories"), query={"limit": "100"})
    return sorted(memory["text"] for memory in reply.body["memories"])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Blood type is A+.", "Blood type is A-."),
        ("Codes mostly in C++.", "Codes mostly in C#."),
        ("🍕", "🍣"),
        ("Favourite emoji: 👩\u200d🔬", "Favourite emoji: 👩🔬"),
        ("Is 5'11\".", "Is 5'1\"."),
    ],
)
def test_memories_that_differ_in_meaning_are_both_kept(
    handler: Any, container: Container, first: str, second: str
) -> None:
    status_first, one = remember(handler, first)
    status_second, other = remember(handler, second)

    assert (status_first, status_second) == (201, 201)
    assert one["memory_id"] != other["memory_id"]
    assert (one["text"], other["text"]) == (first, second)
    assert listed_texts(handler) == sorted([first, second])


def test_the_same_memory_stated_again_answers_200_with_the_one_kept(
    handler: Any, container: Container
) -> None:
    status_first, kept = remember(handler, "Is vegetarian.")

    status_again, again = remember(handler, "  is VEGETARIAN ")

    assert (status_first, status_again) == (201, 200)
    assert again["memory_id"] == kept["memory_id"] and again["text"] == "Is vegetarian."
    assert listed_texts(handler) == ["Is vegetarian."]
