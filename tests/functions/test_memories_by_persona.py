"""`GET /v1/memories?group=persona` through the memories Lambda: what each persona remembers
about you, its history with arcs on request, and its meter; the flat listing unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
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


def create(handler: Any, text: str, persona: str | None = None) -> dict[str, Any]:
    body = {"text": text} | ({"persona": persona} if persona else {})
    reply = invoke(handler, sample_event("memories", "create_memory"), body=body)
    assert reply.status == 201, reply.body
    created: dict[str, Any] = reply.body
    return created


def listed(handler: Any, **query: str) -> Any:
    return invoke(handler, sample_event("memories", "list_memories"), query=query)


def test_the_flat_listing_is_unchanged(handler: Any, container: Container) -> None:
    kept = create(handler, "Is vegetarian.", persona="warren")

    reply = listed(handler, status="active", limit="20")

    assert reply.status == 200
    assert reply.body == {"memories": [kept], "next": None}


def test_grouped_by_persona_each_group_has_its_memories_and_meter(
    handler: Any, container: Container
) -> None:
    # Given what Dan told the assistant and Warren
    assistant = create(handler, "Lives in Pune.")
    warren = create(handler, "Is training for a marathon.", persona="warren")

    # When the page asks for them grouped
    reply = listed(handler, group="persona")

    # Then each persona has its group, by name, with a meter of the block it would build
    assert reply.status == 200
    groups = reply.body["personas"]
    assert [(g["persona"], [m["memory_id"] for m in g["memories"]]) for g in groups] == [
        ("assistant", [assistant["memory_id"]]),
        ("warren", [warren["memory_id"]]),
    ]
    for group in groups:
        assert group["chars_limit"] == 1200 and group["chars_current"] > 0
        assert group["meter"] == f"{group['chars_current']} / 1200"
        assert group["memories"][0]["arc"] is None


def test_history_on_request_carries_each_ended_memorys_arc(
    handler: Any, container: Container
) -> None:
    # Given a memory Warren holds that Dan corrected
    first = create(handler, "Works at Alibaba.", persona="warren")
    corrected = invoke(
        handler,
        sample_event("memories", "correct_memory"),
        path_ids={"memory_id": first["memory_id"]},
        body={"text": "Works at Tencent."},
    )
    assert corrected.status == 200

    # When the page asks for everything, grouped
    reply = listed(handler, group="persona", status="all")

    # Then the superseded version is there with its arc, the new one without
    [group] = reply.body["personas"]
    arcs = {m["text"]: (m["status"], m["arc"]) for m in group["memories"]}
    assert arcs == {
        "Works at Tencent.": ("active", None),
        "Works at Alibaba.": ("superseded", "2026-11 → 2026-11"),
    }


def test_one_persona_may_be_asked_for(handler: Any, container: Container) -> None:
    create(handler, "Lives in Pune.")
    create(handler, "Is training for a marathon.", persona="warren")

    reply = listed(handler, group="persona", persona="warren")

    assert [g["persona"] for g in reply.body["personas"]] == ["warren"]


@pytest.mark.parametrize(
    ("query", "field"),
    [({"group": "persona", "next": "abc"}, "next"), ({"group": "kind"}, "group")],
)
def test_a_bad_grouped_query_is_a_400_naming_the_field(
    handler: Any, container: Container, query: dict[str, str], field: str
) -> None:
    reply = listed(handler, **query)

    assert (reply.status, reply.error_code) == (400, "validation_error")
    assert field in reply.body["error"]["message"]
