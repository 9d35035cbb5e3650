"""Export and import through the memories Lambda, driven by the sample events (API
Gateway's shape): the document a page answers is a batch the import takes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.ports.memories import MemoryQuery
from tests.support.functions import invoke, load_handler, sample_event


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("memories")


def call(handler: Any, name: str, user: str = "user-123", **request: Any) -> Any:
    return invoke(handler, sample_event("memories", name), user=user, **request)


def remember(handler: Any, clock: ManualClock, *texts: str) -> list[dict[str, Any]]:
    created = []
    for text in texts:
        reply = call(handler, "create_memory", body={"text": text})
        assert reply.status == 201, reply.body
        created.append(reply.body)
        clock.advance(timedelta(seconds=1))
    return created


def listed(handler: Any, user: str = "user-123") -> list[tuple[str, str, str, str]]:
    reply = call(handler, "list_memories", user=user, query={"status": "all", "limit": "100"})
    rows = reply.body["memories"]
    return sorted((m["text"], m["category"], m["persona"], m["status"]) for m in rows)


def test_a_page_of_the_export_comes_back_after_forget_everything(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    # Given memories, one of them corrected
    pune, *_ = remember(handler, clock, "Lives in Pune.", "Is vegetarian.", "Has a cat.")
    corrected = call(
        handler,
        "correct_memory",
        path_ids={"memory_id": pune["memory_id"]},
        body={"text": "Lives in Bengaluru."},
    )
    assert corrected.status == 200
    before = listed(handler)

    # When the export is read a page at a time, everything is forgotten, and each page is
    # imported as it was answered
    pages, cursor = [], None
    while True:
        query = {"limit": "2", **({"next": cursor} if cursor else {})}
        page = call(handler, "export_memories", query=query)
        assert page.status == 200 and page.body["schema"] == "chatmemory.export/1"
        pages.append(page.body)
        cursor = page.body["next"]
        if cursor is None:
            break
    assert call(handler, "forget_everything").status == 204
    clock.advance(timedelta(minutes=1))
    reports = [call(handler, "import_memories", body=page).body for page in pages]

    # Then the same memories are back, history as history
    assert [len(page["memories"]) for page in pages] == [2, 2]
    assert sum(report["imported"] for report in reports) == 4
    assert listed(handler) == before
    active = call(handler, "list_memories").body["memories"]
    assert "Lives in Pune." not in {m["text"] for m in active}


def test_an_export_holds_only_the_callers_memories(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    remember(handler, clock, "Is vegetarian.")

    bobs = call(handler, "export_memories", user="bob")

    assert bobs.status == 200 and bobs.body["memories"] == []


def test_a_row_that_breaks_a_rule_is_a_400_naming_it_and_nothing_is_written(
    handler: Any, container: Container
) -> None:
    body = sample_event("memories", "import_memories")["body"]
    broken = invoke(
        handler,
        sample_event("memories", "import_memories"),
        raw_body=body.replace('"valid_to": "2026-11-20T10:00:00.000000Z", ', ""),
    )

    assert broken.status == 400 and broken.error_code == "validation_error"
    assert "memories.1.valid_to" in broken.body["error"]["message"]
    assert list(container.stores.memories.iter_memories("user-123", MemoryQuery(status=None))) == []


def test_a_batch_of_another_shape_is_refused_naming_the_field(
    handler: Any, container: Container
) -> None:
    unknown = call(handler, "import_memories", body={"schema": "other/9", "memories": []})
    too_many = call(
        handler,
        "import_memories",
        body={"schema": "chatmemory.export/1", "memories": [{"text": "x"}] * 101},
    )

    assert (unknown.status, unknown.error_code) == (400, "validation_error")
    assert "schema" in unknown.body["error"]["message"]
    assert (too_many.status, too_many.error_code) == (400, "validation_error")
    assert "memories" in too_many.body["error"]["message"]


def test_an_import_reports_what_it_skipped_and_why(handler: Any, container: Container) -> None:
    event = sample_event("memories", "import_memories")
    body = event["body"].replace("Lives in Pune.", "My PIN is 4921.")

    first = invoke(handler, event, raw_body=body)
    again = invoke(handler, event, raw_body=body)

    assert first.status == 200
    assert (first.body["imported"], first.body["unchanged"]) == (1, 0)
    (skipped,) = first.body["skipped"]
    assert skipped["index"] == 1 and skipped["reason"].startswith("secret_refused: ")
    assert "4921" not in skipped["reason"]
    assert (again.body["imported"], again.body["unchanged"], len(again.body["skipped"])) == (
        0,
        1,
        1,
    )


def test_memory_ids_are_keyed_by_each_deployments_own_secret_and_travel_with_an_export(
    handler: Any, tmp_path: Path, clock: ManualClock
) -> None:
    # Given two deployments, each with the key it made in its own state folder
    here, there = tmp_path / "here", tmp_path / "there"
    ids = {}
    for name, state in (("here", here), ("there", there)):
        use_container(Container(Settings(state_dir=state, embedder="hashing"), clock))
        [created] = remember(handler, clock, "Has a cat named Miso.")
        ids[name] = created["memory_id"]
        key = state / "identity-key"
        assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_text()) >= 32
    # Then the same words land on different ids in each (no one can compute one from a
    # guess at the words without the deployment's key) …
    assert ids["here"] != ids["there"]

    # And when one's export is imported into the other after forgetting everything there
    use_container(Container(Settings(state_dir=here, embedder="hashing"), clock))
    document = call(handler, "export_memories", query={"limit": "100"}).body
    use_container(Container(Settings(state_dir=there, embedder="hashing"), clock))
    assert call(handler, "forget_everything").status == 204
    clock.advance(timedelta(seconds=1))
    assert call(handler, "import_memories", body=document).body["imported"] == 1

    # Then it keeps its id, and typing the same words there finds it (200, not a copy)
    again = call(handler, "create_memory", body={"text": "has a cat named miso"})
    use_container(None)
    assert (again.status, again.body["memory_id"]) == (200, ids["here"])
