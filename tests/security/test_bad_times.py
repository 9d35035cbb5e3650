"""Times out of range at every door, on both stores: each is a `400 validation_error` naming
the field, nothing is written, and after every one the owner can still list, export and
forget everything. The range (docs/api.md "Conventions"): the service's own times of a
memory from 1970-01-01, world time (`valid_from`, `valid_until`, `valid_to`) from
1900-01-01, both before 2200-01-01 (UTC)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.ports.memories import MemoryQuery
from tests.support.damaged import YEAR_ONE_AS_STORED, damage_memory
from tests.support.functions import Reply, invoke, load_handler, sample_event
from tests.support.stores import REGION, STORE_KINDS, TABLE
from tests.support.template import create_table_from_template

OWNER = "user-123"
YEAR_ONE = "0001-01-01T00:00:00Z"
YEAR_ONE_EAST = "0001-01-01T00:00:00+05:00"  # no UTC instant at all
BEFORE_THE_EPOCH = "1969-12-31T23:59:59Z"
BEFORE_1900 = "1899-12-31T23:59:59Z"
THE_LAST_YEAR = "9999-12-31T23:59:59Z"
FROM_2200 = "2200-01-01T00:00:00Z"


@pytest.fixture(params=STORE_KINDS)
def deployed(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock, aws_env: None
) -> Iterator[Container]:
    """The service on SQLite, or on DynamoDB (moto), as the handlers see it."""
    if request.param == "sqlite":
        built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
        use_container(built)
        yield built
        use_container(None)
        return
    with mock_aws():
        create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE)
        settings = Settings(
            store="dynamodb",
            table_name=TABLE,
            region=REGION,
            state_dir=tmp_path,
            embedder="hashing",
        )
        built = Container(settings, clock)
        use_container(built)
        yield built
        use_container(None)


@pytest.fixture(scope="module")
def memories_function() -> Any:
    return load_handler("memories")


@pytest.fixture(scope="module")
def chat_function() -> Any:
    return load_handler("chat")


def call(handler: Any, name: str, folder: str = "memories", **options: Any) -> Reply:
    return invoke(handler, sample_event(folder, name), user=OWNER, **options)


def stored(container: Container) -> list[Any]:
    return list(container.stores.memories.iter_memories(OWNER, MemoryQuery(status=None)))


def the_owner_keeps_control(handler: Any, container: Container) -> None:
    """The owner can list and export what they have, then forget everything."""
    listing = call(handler, "list_memories")
    export = call(handler, "export_memories")
    forget = call(handler, "forget_everything")
    after = call(handler, "list_memories")

    assert (listing.status, export.status, forget.status) == (200, 200, 204)
    assert [m["text"] for m in listing.body["memories"]] == ["Is vegetarian."]
    assert [m["text"] for m in export.body["memories"]] == ["Is vegetarian."]
    assert (after.status, after.body["memories"], stored(container)) == (200, [], [])


def owner_remembers(handler: Any) -> dict[str, Any]:
    created = call(handler, "create_memory", body={"text": "Is vegetarian."})
    assert created.status == 201, created.body
    body: dict[str, Any] = created.body
    return body


def refused_naming(reply: Reply, field: str) -> None:
    assert reply.status == 400, reply.body
    assert reply.error_code == "validation_error"
    assert f"{field} must be from " in reply.body["error"]["message"] or (
        f"'{field}' must be from " in reply.body["error"]["message"]
    ), reply.body


def imported_row(**fields: Any) -> dict[str, Any]:
    return {
        "memory_id": "mem_bad_time",
        "text": "Lives in Pune.",
        "category": "location",
        "kind": "fact",
        "persona": "assistant",
        "stated_by": "user",
        "status": "active",
        "created_at": "2025-06-01T10:00:00.000000Z",
        "updated_at": "2025-06-01T10:00:00.000000Z",
        **fields,
    }


CLOSED = {"status": "closed"}
THREAD = {"kind": "thread", "thread": {"cadence": "event", "status": "live"}}

IMPORTED = [
    ("created_at", {"created_at": YEAR_ONE}),
    ("created_at", {"created_at": YEAR_ONE_EAST}),
    ("created_at", {"created_at": BEFORE_THE_EPOCH}),
    ("created_at", {"created_at": FROM_2200, "updated_at": FROM_2200}),
    ("updated_at", {"updated_at": THE_LAST_YEAR}),
    ("valid_from", {"valid_from": YEAR_ONE}),
    ("valid_from", {"valid_from": BEFORE_1900}),
    ("valid_until", {"valid_until": THE_LAST_YEAR}),
    ("valid_to", {**CLOSED, "valid_to": YEAR_ONE}),
    ("last_used_at", {"last_used_at": YEAR_ONE}),
    ("last_used_at", {"last_used_at": THE_LAST_YEAR}),
    ("reinforced_at", {"reinforced_at": YEAR_ONE}),
    ("reinforced_at", {"reinforced_at": THE_LAST_YEAR}),
    ("archived_at", {"archived_at": YEAR_ONE}),
    ("thread.event_on", {**THREAD, "thread": {**THREAD["thread"], "event_on": "9999-12-31"}}),
    ("thread.asked", {**THREAD, "thread": {**THREAD["thread"], "asked": "0001-01-01"}}),
]


@pytest.mark.parametrize(
    ("field", "fields"), IMPORTED, ids=[f"{f}={list(v.values())[-1]}" for f, v in IMPORTED]
)
def test_an_imported_time_out_of_range_is_refused_naming_it(
    deployed: Container, memories_function: Any, field: str, fields: dict[str, Any]
) -> None:
    # Given the owner remembers something
    owner_remembers(memories_function)
    before = stored(deployed)

    # When they import a row with a time out of range
    document = {"schema": "chatmemory.export/1", "memories": [imported_row(**fields)]}
    reply = call(memories_function, "import_memories", body=document)

    # Then it is refused naming the field, nothing is written, and they keep control
    refused_naming(reply, f"memories.0.{field}")
    assert stored(deployed) == before
    the_owner_keeps_control(memories_function, deployed)


def test_an_export_time_out_of_range_is_refused_naming_it(
    deployed: Container, memories_function: Any
) -> None:
    owner_remembers(memories_function)
    document = {"schema": "chatmemory.export/1", "exported_at": YEAR_ONE, "memories": []}

    reply = call(memories_function, "import_memories", body=document)

    refused_naming(reply, "exported_at")
    the_owner_keeps_control(memories_function, deployed)


@pytest.mark.parametrize("value", [YEAR_ONE, YEAR_ONE_EAST, BEFORE_1900, THE_LAST_YEAR, FROM_2200])
def test_a_shelf_life_out_of_range_is_refused_when_created_or_corrected(
    deployed: Container, memories_function: Any, value: str
) -> None:
    # Given the owner remembers something
    kept = owner_remembers(memories_function)

    # When they type a memory, or correct theirs, with a shelf life out of range
    created = call(
        memories_function, "create_memory", body={"text": "Is in Goa.", "valid_until": value}
    )
    corrected = call(
        memories_function,
        "correct_memory",
        path_ids={"memory_id": kept["memory_id"]},
        body={"text": "Is vegan.", "valid_until": value},
    )

    # Then both are refused naming it, and they keep control of what they have
    refused_naming(created, "valid_until")
    refused_naming(corrected, "valid_until")
    the_owner_keeps_control(memories_function, deployed)


@pytest.mark.parametrize("value", ["0001-01-01", "1969-12-31", "9999-12-31", THE_LAST_YEAR])
def test_an_as_of_out_of_range_is_refused_naming_it(
    deployed: Container, memories_function: Any, chat_function: Any, value: str
) -> None:
    owner_remembers(memories_function)

    listing = call(memories_function, "list_memories", query={"as_of": value})
    context = call(
        chat_function, "context", folder="chat", body={"message": "Dinner ideas?", "as_of": value}
    )

    refused_naming(listing, "as_of")
    refused_naming(context, "as_of")
    the_owner_keeps_control(memories_function, deployed)


def test_an_import_that_fails_after_writing_never_says_not_applied(
    deployed: Container, memories_function: Any, tmp_path: Path
) -> None:
    # Given one of the owner's memories damaged in the store, which the import reads back
    # once its row has landed
    damaged = owner_remembers(memories_function)
    damage_memory(
        deployed.stores,
        deployed.settings.sqlite_path,
        OWNER,
        damaged["memory_id"],
        created_at=YEAR_ONE_AS_STORED,
    )
    document = {"schema": "chatmemory.export/1", "memories": [imported_row()]}

    # When they import a row
    reply = call(memories_function, "import_memories", body=document)

    # Then the answer says the row was imported and is kept, never that nothing was
    assert reply.status == 500
    assert reply.error_code == "partly_applied"
    assert "not applied" not in reply.body["error"]["message"]
    assert "were imported; they are kept" in reply.body["error"]["message"]
    # And the damaged memory is deleted like any other, and the owner forgets everything
    deleted = call(memories_function, "delete_memory", path_ids={"memory_id": damaged["memory_id"]})
    assert deleted.status == 204
    everything = call(memories_function, "list_memories", query={"status": "all"})
    assert [m["text"] for m in everything.body["memories"]] == ["Lives in Pune."]
    assert call(memories_function, "forget_everything").status == 204
    assert stored(deployed) == []
