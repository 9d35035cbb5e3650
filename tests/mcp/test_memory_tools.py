"""The memory tools through the SDK's own client, in memory, against the real local server
(hashing vectors and the offline model, so no model loads): what a host lists, the round
trip observe → flush → recall → correct → forget, and every failure as an error result."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from chatmemory.mcp.api_client import MemoryApi
from chatmemory.mcp.tools import MemoryTools
from tests.support.local_server import Running, serve_locally
from tests.support.mcp_host import answer, error, flush

TOOLS = {"memory_state", "memory_recall", "memory_observe", "memory_correct", "memory_forget"}
SAID = "I'm vegetarian and I live in Pune."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Running]:
    state = tmp_path_factory.mktemp("mcp-state")
    with serve_locally(state, model_cache, embedder="hashing", model="offline") as running:
        yield running


def host(url: str, token: str | None, *, timeout_s: float = 10.0) -> Client:
    """An MCP client connected in memory to the tools of one user."""
    tools = MemoryTools(MemoryApi(url, timeout_s=timeout_s), lambda: token, deadline_s=timeout_s)
    return Client(tools.server())


def as_user(server: Running, user: str, scenario: Callable[[Client], Awaitable[None]]) -> None:
    async def run() -> None:
        async with host(server.url, server.token_for(user)) as client:
            await scenario(client)

    anyio.run(run)


def test_a_host_lists_the_five_tools_with_typed_schemas(server: Running) -> None:
    async def scenario(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}

        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.description and tool.output_schema is not None
            for name, field in tool.input_schema["properties"].items():
                assert field.get("description"), f"{tool.name}.{name} has no description"
        observe = listed["memory_observe"].input_schema
        assert observe["required"] == ["user_message"]
        assert observe["properties"]["user_message"]["maxLength"] == 8000
        assert listed["memory_recall"].input_schema["required"] == ["query"]
        assert listed["memory_correct"].input_schema["required"] == ["memory_id", "text"]
        assert listed["memory_state"].annotations.read_only_hint is True
        assert listed["memory_forget"].annotations.destructive_hint is True
        assert listed["memory_observe"].annotations.idempotent_hint is True

    as_user(server, "lister", scenario)


def test_observe_recall_correct_forget_round_trip(server: Running) -> None:
    async def scenario(client: Client) -> None:
        # Given a turn the host ran, observed and then learned in the background
        observed = await answer(
            client, "memory_observe", user_message=SAID, assistant_message="Noted!"
        )
        assert observed["stored"] and observed["learns"]
        flush(server.container)  # type: ignore[arg-type]

        # When the host recalls it, the learned memory is there
        found = await answer(client, "memory_recall", query="Pune")
        [pune] = [item for item in found["items"] if item["label"] == "Lives in Pune"]
        assert found["hidden"] >= 0

        # And a correction replaces it: recall shows the corrected words only
        corrected = await answer(
            client, "memory_correct", memory_id=pune["memory_id"], text="Lives in Bengaluru."
        )
        assert corrected["replaced"] == pune["memory_id"]
        new_id = corrected["memory"]["memory_id"]
        labels = [
            i["label"] for i in (await answer(client, "memory_recall", query="Bengaluru"))["items"]
        ]
        assert "Lives in Bengaluru" in labels and "Lives in Pune" not in labels

        # And once forgotten it is gone from what is known
        assert (await answer(client, "memory_forget", memory_id=new_id)) == {"forgotten": new_id}
        state = await answer(client, "memory_state")
        assert [m["text"] for m in state["memories"]] == ["Is vegetarian."]
        assert state["complete"] is True

    as_user(server, "alice", scenario)


def test_observing_the_same_turn_twice_stores_it_once(server: Running) -> None:
    async def scenario(client: Client) -> None:
        # Given a conversation the host opened with its own turn id, then went on in
        first = await answer(
            client, "memory_observe", user_message="I play chess on Sundays.", turn_id="c1-t1"
        )
        conversation = first["conversation_id"]
        second = {"user_message": "And I teach at Oakridge.", "conversation_id": conversation}
        said = await answer(client, "memory_observe", **second)

        # When the host sends both again (a retry after a lost answer)
        retried = await answer(
            client, "memory_observe", user_message="I play chess on Sundays.", turn_id="c1-t1"
        )
        again = await answer(client, "memory_observe", **second)

        # Then nothing was stored twice: the same ids come back
        assert first["stored"] and said["stored"]
        assert not retried["stored"] and retried["message_ids"] == first["message_ids"]
        assert not again["stored"] and again["message_ids"] == said["message_ids"]

    as_user(server, "bob", scenario)


def test_two_conversations_that_open_alike_stay_two(server: Running) -> None:
    async def scenario(client: Client) -> None:
        one = await answer(client, "memory_observe", user_message="hi", assistant_message="Hello!")
        two = await answer(client, "memory_observe", user_message="hi", assistant_message="Hello!")

        assert one["stored"] and two["stored"]
        assert one["conversation_id"] != two["conversation_id"]

    as_user(server, "fay", scenario)


def test_memory_state_reads_a_past_day_and_refuses_a_future_one(server: Running) -> None:
    async def scenario(client: Client) -> None:
        await answer(client, "memory_observe", user_message=SAID)
        flush(server.container)  # type: ignore[arg-type]

        before = await answer(client, "memory_state", as_of="2020-01-01")
        now = await answer(client, "memory_state", kind="fact")
        refused = await error(client, "memory_state", as_of="2999-01-01")

        assert before["memories"] == [] and before["as_of"] == "2020-01-01"
        assert sorted(m["text"] for m in now["memories"]) == ["Is vegetarian.", "Lives in Pune."]
        assert refused["code"] == "validation_error" and "as_of" in refused["message"]

    as_user(server, "carol", scenario)


def test_forgetting_everything_needs_the_words(server: Running) -> None:
    async def scenario(client: Client) -> None:
        await answer(client, "memory_observe", user_message=SAID)
        flush(server.container)  # type: ignore[arg-type]

        unconfirmed = await error(client, "memory_forget", everything=True)
        kept = await answer(client, "memory_state")
        confirmed = await answer(
            client, "memory_forget", everything=True, confirm="forget everything"
        )

        assert unconfirmed["code"] == "confirmation_required"
        assert len(kept["memories"]) == 2
        assert confirmed == {"forgotten": "everything"}
        assert (await answer(client, "memory_state"))["memories"] == []

    as_user(server, "dan", scenario)


def test_the_contracts_errors_come_back_as_error_results(server: Running) -> None:
    async def scenario(client: Client) -> None:
        await answer(client, "memory_observe", user_message=SAID)
        flush(server.container)  # type: ignore[arg-type]
        [known, *_] = (await answer(client, "memory_state"))["memories"]

        missing = await error(client, "memory_correct", memory_id="mem_nothing", text="Is tall.")
        secret = await error(
            client, "memory_correct", memory_id=known["memory_id"], text="Her PIN is 4821."
        )
        nothing = await error(client, "memory_forget")

        assert missing == {"code": "not_found", "message": "memory not found"}
        assert secret["code"] == "secret_refused" and "4821" not in secret["message"]
        assert nothing["code"] == "validation_error"
        assert known in (await answer(client, "memory_state"))["memories"]  # nothing changed

    as_user(server, "erin", scenario)


def test_a_bad_token_is_unauthorized_not_an_exception(server: Running) -> None:
    async def run() -> None:
        async with host(server.url, "not-a-token") as client:
            refused = await error(client, "memory_state")
        assert refused["code"] == "unauthorized"

    anyio.run(run)


def test_a_server_that_is_down_is_an_error_result(server: Running) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]

    async def run() -> None:
        async with host(f"http://127.0.0.1:{closed}", "any") as client:
            for tool, arguments in [
                ("memory_state", {}),
                ("memory_recall", {"query": "Pune"}),
                ("memory_observe", {"user_message": SAID}),
                ("memory_correct", {"memory_id": "mem_1", "text": "Is tall."}),
                ("memory_forget", {"memory_id": "mem_1"}),
            ]:
                failed = await error(client, tool, **arguments)
                assert failed["code"] == "unreachable", tool
                assert f"127.0.0.1:{closed}" in failed["message"]

    anyio.run(run)


def test_a_server_that_never_answers_is_a_timeout_within_the_deadline() -> None:
    # Given a server that accepts the connection and then says nothing
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]

        async def run() -> float:
            async with host(f"http://127.0.0.1:{port}", "any", timeout_s=1.0) as client:
                started = anyio.current_time()
                failed = await error(client, "memory_recall", query="Pune")
                assert failed["code"] == "timeout"
                return anyio.current_time() - started

        # Then the host hears back, with an error result, once the deadline passed
        assert anyio.run(run) < 5.0
