"""On AWS the HTTP API serves a named stage (the template's `Stage`, `prod` by default):
API Gateway then puts the stage in front of the path it hands the function (`rawPath`
`/prod/v1/memories`, `requestContext.stage` `prod`) while the route key stays
`GET /v1/memories`. Every API sample, moved onto that stage, must be answered exactly as
the `$default` sample the local server sends — the same status, the same body shape."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from chatmemory.local.sam_template import http_routes, match_route
from chatmemory.services.memories import NewMemory
from tests.conftest import START
from tests.support.functions import EVENTS, Reply, invoke, load_handler, sample_event
from tests.support.template import load_template

STAGE = "prod"  # template.yaml's default Stage
API_FOLDERS = ("chat", "memories", "rooms")
SAMPLES = sorted(
    (folder, path.stem) for folder in API_FOLDERS for path in (EVENTS / folder).glob("*.json")
)
APP = "4f1c2b3a5d6e7f8091a2b3c4d5"  # the rooms samples' app client (tests/functions/test_rooms.py)
USER = "user-123"
#: what the functions answer for a path no route of theirs serves (api/errors.py)
NO_ROUTE = {"error": {"code": "not_found", "message": "no such route"}}
#: route key -> the function serving it
Handlers = dict[str, Any]


def on_stage(event: dict[str, Any], stage: str) -> dict[str, Any]:
    """The event as API Gateway sends it for a request to the named stage."""
    rebased = copy.deepcopy(event)
    rebased["rawPath"] = f"/{stage}{event['rawPath']}"
    context = rebased["requestContext"]
    context["stage"] = stage
    context["http"]["path"] = f"/{stage}{context['http']['path']}"
    return rebased


@pytest.fixture(scope="module")
def handlers() -> Handlers:
    """Each sample's function, found from its route key the way the local server finds it."""
    routes = http_routes(load_template())
    loaded: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    for folder, name in SAMPLES:
        route_key = sample_event(folder, name)["routeKey"]
        method, path = route_key.split(" ", 1)
        route = match_route(routes, method, path)
        assert route is not None, f"{folder}/{name}: no route serves {route_key}"
        if route.code_uri not in loaded:
            folder_name = route.code_uri.strip("/").removeprefix("functions/")
            loaded[route.code_uri] = load_handler(folder_name)
        chosen[route_key] = loaded[route.code_uri]
    return chosen


def handler_for(handlers: Handlers, event: dict[str, Any]) -> Any:
    return handlers[event["routeKey"]]


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Any]:
    """A new deployment per call, all at the same moment: two answers to compare start
    from the same (empty) state."""
    made: list[Path] = []

    def make() -> Container:
        state = tmp_path / f"deployment-{len(made)}"
        made.append(state)
        built = Container(
            Settings(state_dir=state, embedder="hashing", model="offline"), ManualClock(START)
        )
        use_container(built)
        return built

    yield make
    use_container(None)


def answer(
    handlers: Handlers, container: Container, folder: str, name: str, stage: str | None
) -> Reply:
    """The sample's answer on a deployment holding what it names (the samples' room, a
    memory for a memory's route), sent to `$default` or to the named stage."""

    def staged(event: dict[str, Any]) -> dict[str, Any]:
        return event if stage is None else on_stage(event, stage)

    event = sample_event(folder, name)
    handler = handler_for(handlers, event)
    if folder == "rooms":
        if name != "open_room":
            opened = invoke(handler, staged(sample_event("rooms", "open_room")), user=APP)
            assert opened.status == 201, opened.body
        return invoke(handler, staged(event), user=APP)
    path_ids = None
    if "memory_id" in (event.get("pathParameters") or {}):
        created = container.memories.create(USER, NewMemory(text="Is vegetarian."))
        path_ids = {"memory_id": created.memory.memory_id}
    return invoke(handler, staged(event), user=USER, path_ids=path_ids)


def shape(value: Any) -> Any:
    """A body's structure: its keys, nesting and value types, not its ids or times."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


@pytest.mark.parametrize(("folder", "name"), SAMPLES, ids=[f"{f}/{n}" for f, n in SAMPLES])
def test_a_sample_on_the_deployed_stage_is_answered_as_on_default(
    handlers: Handlers, fresh: Any, folder: str, name: str
) -> None:
    # Given the sample as the local server sends it, and as the prod stage delivers it
    staged = on_stage(sample_event(folder, name), STAGE)
    assert staged["routeKey"] == sample_event(folder, name)["routeKey"]

    # When each is sent to a deployment holding what it names
    default = answer(handlers, fresh(), folder, name, None)
    deployed = answer(handlers, fresh(), folder, name, STAGE)

    # Then both reached the route and got the same answer
    assert default.body != NO_ROUTE, f"{folder}/{name} reached no route even on $default"
    assert (deployed.status, deployed.error_code) == (default.status, default.error_code)
    assert shape(deployed.body) == shape(default.body)
    if default.error_code:
        assert deployed.body == default.body


def test_a_stage_path_that_arrives_without_its_stage_still_reaches_its_route(
    handlers: Handlers, fresh: Any
) -> None:
    # Given the prod stage's event with the stage missing from the path (a proxy or a
    # domain mapping in front that rewrote it)
    container = fresh()
    container.memories.create(USER, NewMemory(text="Is vegetarian."))
    event = on_stage(sample_event("memories", "list_memories"), STAGE)
    event["rawPath"] = "/v1/memories"

    # When it reaches the function
    reply = invoke(handler_for(handlers, event), event, user=USER)

    # Then it is the route's answer, not "no such route"
    assert reply.status == 200, reply.body
    assert [m["text"] for m in reply.body["memories"]] == ["Is vegetarian."]


def test_a_path_no_route_serves_is_still_refused_on_the_stage(
    handlers: Handlers, fresh: Any
) -> None:
    # Given a path under the stage that no route serves
    fresh()
    event = on_stage(sample_event("memories", "list_memories"), STAGE)
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/{STAGE}/v1/nowhere"

    # When it reaches the function
    reply = invoke(handler_for(handlers, sample_event("memories", "list_memories")), event)

    # Then it is refused in the contract's shape, as on $default
    assert (reply.status, reply.body) == (404, NO_ROUTE)
