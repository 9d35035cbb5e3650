"""The rooms Lambda, driven by the sample events in events/rooms/ (API Gateway's shape).

The samples carry the app credential's claims, as the app's backend would send them; who
else may call what is pinned in tests/security/test_app_credential.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import LABEL
from chatmemory.api.identity import APP_SCOPE
from chatmemory.config import Container, Settings, use_container
from chatmemory.local.sam_template import http_routes, load_template
from chatmemory.services.memories import NewMemory
from tests.support.functions import (
    EVENTS,
    ROOT,
    BrokenModel,
    Reply,
    Wired,
    invoke,
    load_handler,
    sample_event,
)

ROOM = "room_book_club"  # the samples' room: a group with Warren and Nolan, Dan in it
APP = "4f1c2b3a5d6e7f8091a2b3c4d5"  # the samples' app client id (its `sub` too)
DAN, CARA = "dan", "cara"


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Wired(Settings(state_dir=tmp_path, embedder="hashing", model="offline"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("rooms")


def event(name: str) -> dict[str, Any]:
    return sample_event("rooms", name)


def call(handler: Any, name: str, *, room_id: str = ROOM, **changes: Any) -> Reply:
    """A sample event as the app sends it, for `room_id`, with the body or query changed."""
    ids = {"room_id": room_id} if "pathParameters" in event(name) else None
    return invoke(handler, event(name), user=APP, path_ids=ids, **changes)


def open_room(handler: Any, **body: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"kind": "group", "personas": ["warren", "nolan"], "members": [DAN]}
    values.update(body)
    reply = call(handler, "open_room", body=values)
    assert reply.status == 201, reply.body
    opened: dict[str, Any] = reply.body
    return opened


def say(handler: Any, room_id: str, *lines: tuple[str, str]) -> Reply:
    messages = [{"speaker": speaker, "text": text} for speaker, text in lines]
    return call(handler, "post_messages", room_id=room_id, body={"messages": messages})


# ---- every sample event --------------------------------------------------------------


def test_every_rooms_route_in_the_template_has_a_sample_event() -> None:
    # Given the routes template.yaml gives the rooms function, and the samples
    served = {
        (route.method, route.path)
        for route in http_routes(load_template(ROOT / "template.yaml"))
        if route.function == "RoomsFunction"
    }
    samples = {
        (e["requestContext"]["http"]["method"], e["routeKey"].split(" ", 1)[1])
        for e in (event(p.stem) for p in (EVENTS / "rooms").glob("*.json"))
    }

    # Then each route has its sample, and each sample is a route
    assert served and samples == served


def test_the_samples_carry_the_app_credential() -> None:
    for path in (EVENTS / "rooms").glob("*.json"):
        claims = event(path.stem)["requestContext"]["authorizer"]["jwt"]["claims"]
        assert APP_SCOPE in claims["scope"].split(), path.name


@pytest.mark.parametrize("name", sorted(p.stem for p in (EVENTS / "rooms").glob("*.json")))
def test_every_sample_event_gets_an_answer_in_the_contracts_shape(
    handler: Any, container: Container, name: str
) -> None:
    # Given the samples' room, opened as its sample opens it (unless that is the sample)
    if name != "open_room":
        assert invoke(handler, event("open_room"), user=APP).status == 201

    # When the sample is sent as it is
    reply = invoke(handler, event(name), user=APP)

    # Then it is answered, as a success for the room as the samples describe it
    assert reply.status in (200, 201), (name, reply.body)


# ---- the life of a room --------------------------------------------------------------


def test_a_room_is_opened_read_spoken_in_joined_and_left(
    handler: Any, container: Container, clock: ManualClock
) -> None:
    # Given the app opens a group room with Warren and Nolan for Dan
    opened = open_room(handler, room_id=ROOM)
    assert opened == {
        "room_id": ROOM,
        "kind": "group",
        "incognito": False,
        "fiction": False,
        "personas": ["nolan", "warren"],
        "members": [DAN],
        "version": 0,
        "last_seq": 0,
        "created_at": "2026-11-30T09:00:00Z",
        "last_message_at": None,
        "threads_asked_on": None,
    }
    assert call(handler, "get_room").body == opened

    # When Dan and Warren speak, in order
    clock.advance(timedelta(minutes=1))
    posted = say(handler, ROOM, ("u:dan", "Finished the book."), ("p:warren", "And?"))

    # Then the lines are stored with the room's next numbers and the time
    assert posted.status == 201
    assert [(m["seq"], m["speaker"], m["message_id"]) for m in posted.body["messages"]] == [
        (1, "u:dan", f"{ROOM}_1"),
        (2, "p:warren", f"{ROOM}_2"),
    ]
    assert {m["created_at"] for m in posted.body["messages"]} == {"2026-11-30T09:01:00Z"}
    room = call(handler, "get_room").body
    assert (room["last_seq"], room["last_message_at"]) == (2, "2026-11-30T09:01:00Z")

    # And a join and a leave each move the room's version
    joined = call(handler, "join_room", body={"user_ids": [CARA]}).body
    assert (joined["members"], joined["version"]) == ([CARA, DAN], 1)
    left = call(handler, "leave_room")  # the sample's leaver is Dan
    assert (left.status, left.body["members"], left.body["version"]) == (200, [CARA], 2)


def test_a_room_without_an_id_gets_one(handler: Any, container: Container) -> None:
    body = {"kind": "private", "personas": ["warren"], "members": [DAN]}

    reply = call(handler, "open_room", body=body)

    assert reply.status == 201 and reply.body["room_id"].startswith("room_")


def test_a_private_chat_block_carries_what_the_persona_knows_the_same_every_turn(
    handler: Any, container: Container
) -> None:
    # Given something Dan told Warren, and a private chat the app opens for them
    known = container.memories.create(
        DAN, NewMemory(text="Is training for the Shanghai marathon.", persona="warren")
    ).memory
    opened = open_room(handler, kind="private", personas=["warren"], room_id="room_dan")

    # When the app reads Warren's block, Warren takes a turn, and the block is read again
    before = call(handler, "room_context", room_id=opened["room_id"])
    turn = call(handler, "room_turn", room_id=opened["room_id"], body={"persona": "warren"})
    after = call(handler, "room_context", room_id=opened["room_id"])

    # Then the block holds the memory with its meter, the turn used exactly that block,
    # and the block is byte for byte the same after the turn
    assert before.status == 200
    block = before.body
    assert "Is training for the Shanghai marathon." in block["text"]
    assert block["memory_ids"] == [known.memory_id]
    assert block["meter"] == f"{block['chars_current']} / {block['chars_limit']}"
    assert (block["persona"], block["room_version"], block["chars_limit"]) == ("warren", 0, 1200)
    assert turn.status == 200
    assert turn.body["memory_ids"] == block["memory_ids"] and turn.body["meter"] == block["meter"]
    assert after.body == block


def test_a_turn_answers_with_the_personas_stored_reply_and_its_usage(
    handler: Any, container: Container
) -> None:
    # Given a group room where Dan asked something
    open_room(handler, room_id=ROOM)
    say(handler, ROOM, ("u:dan", "Anyone read Middlemarch?"))

    # When Nolan takes his turn
    reply = call(handler, "room_turn", body={"persona": "nolan"})

    # Then his reply is stored as his line, and the answer says what it cost and who spoke
    assert reply.status == 200
    message = reply.body["message"]
    assert (message["seq"], message["speaker"]) == (2, "p:nolan")
    assert message["text"].startswith(LABEL) and reply.body["model"] == "offline"
    assert reply.body["usage"]["input_tokens"] > 0
    stored = container.stores.rooms.list_room_messages(ROOM)
    assert [(m.seq, m.speaker) for m in stored] == [(1, "u:dan"), (2, "p:nolan")]


def test_the_persona_may_be_left_out_when_the_room_seats_one(
    handler: Any, container: Container
) -> None:
    open_room(handler, room_id="room_one", kind="private", personas=["warren"])

    context = call(handler, "room_context", room_id="room_one", query={})
    turn = call(handler, "room_turn", room_id="room_one", body={})

    assert (context.status, context.body["persona"]) == (200, "warren")
    assert (turn.status, turn.body["message"]["speaker"]) == (200, "p:warren")


# ---- refusals ------------------------------------------------------------------------


def test_an_unknown_room_is_a_404_on_every_room_route(handler: Any, container: Container) -> None:
    names = ["get_room", "join_room", "leave_room", "post_messages", "room_context", "room_turn"]

    answers = {name: call(handler, name, room_id="room_nobody") for name in names}

    assert {name: (a.status, a.error_code) for name, a in answers.items()} == dict.fromkeys(
        names, (404, "not_found")
    )
    assert {a.body["error"]["message"] for a in answers.values()} == {"room not found"}


def test_a_taken_room_id_is_a_409_and_the_room_is_left_as_it_was(
    handler: Any, container: Container
) -> None:
    first = open_room(handler, room_id=ROOM)

    again = call(
        handler,
        "open_room",
        body={"kind": "private", "personas": ["nolan"], "members": [CARA], "room_id": ROOM},
    )

    assert (again.status, again.error_code) == (409, "conflict")
    assert call(handler, "get_room").body == first


@pytest.mark.parametrize(
    ("name", "body", "field"),
    [
        ("open_room", {"kind": "party", "personas": ["warren"]}, "kind"),
        ("open_room", {"kind": "group", "personas": []}, "personas"),
        ("open_room", {"kind": "group", "personas": ["Warren!"]}, "personas"),
        ("open_room", {"kind": "group", "personas": ["warren"], "members": [" dan"]}, "members"),
        (
            "open_room",
            {"kind": "private", "personas": ["warren"], "members": [DAN, CARA]},
            "members",
        ),
        ("open_room", {"kind": "group", "personas": ["warren"], "incognito": "yes"}, "incognito"),
        ("open_room", {"kind": "group", "personas": ["warren"], "room_id": "a b"}, "room_id"),
        ("join_room", {"user_ids": []}, "user_ids"),
        ("post_messages", {"messages": []}, "messages"),
        ("post_messages", {"messages": [{"speaker": "dan", "text": "hi"}]}, "speaker"),
        ("post_messages", {"messages": [{"speaker": "u:dan", "text": ""}]}, "text"),
        ("post_messages", {"messages": [{"speaker": "u:dan", "text": "x" * 8001}]}, "text"),
        ("post_messages", {"messages": [{"speaker": "u:cara", "text": "hi"}]}, "speaker"),
        ("post_messages", {"messages": [{"speaker": "p:zed", "text": "hi"}]}, "speaker"),
        ("room_turn", {"persona": "zed"}, "persona"),
        ("room_turn", {}, "persona"),  # two personas seated: say which
    ],
)
def test_a_bad_room_request_is_a_400_naming_the_field_and_nothing_is_stored(
    handler: Any, container: Container, name: str, body: dict[str, Any], field: str
) -> None:
    # Given the samples' group room (Warren and Nolan, Dan in it), nothing said yet
    open_room(handler, room_id=ROOM)
    before = call(handler, "get_room").body

    # When the request is sent
    reply = call(handler, name, body=body)

    # Then it is refused naming the field, and the room is as it was
    assert (reply.status, reply.error_code) == (400, "validation_error"), reply.body
    assert field in reply.body["error"]["message"]
    assert call(handler, "get_room").body == before
    assert container.stores.rooms.list_room_messages(ROOM) == []


def test_at_most_twenty_messages_go_in_one_call(handler: Any, container: Container) -> None:
    open_room(handler, room_id=ROOM)
    lines = [("u:dan", f"Line {n}.") for n in range(21)]

    refused = say(handler, ROOM, *lines)
    accepted = say(handler, ROOM, *lines[:20])

    assert (refused.status, refused.error_code) == (400, "validation_error")
    assert "messages" in refused.body["error"]["message"]
    assert "at most 20" in refused.body["error"]["message"]
    assert accepted.status == 201 and len(accepted.body["messages"]) == 20


def test_the_persona_must_be_named_for_a_context_when_several_are_seated(
    handler: Any, container: Container
) -> None:
    open_room(handler, room_id=ROOM)

    unnamed = call(handler, "room_context", query={})
    stranger = call(handler, "room_context", query={"persona": "zed"})

    for reply in (unnamed, stranger):
        assert (reply.status, reply.error_code) == (400, "validation_error")
        assert "persona" in reply.body["error"]["message"]


def test_a_failing_model_is_a_502_and_nothing_of_the_turn_is_kept(
    handler: Any, tmp_path: Path, clock: ManualClock
) -> None:
    broken = Wired(Settings(state_dir=tmp_path, embedder="hashing"), clock, BrokenModel())
    use_container(broken)
    try:
        open_room(handler, room_id=ROOM)
        say(handler, ROOM, ("u:dan", "Hello?"))
        reply = call(handler, "room_turn", body={"persona": "warren"})
    finally:
        use_container(None)

    assert (reply.status, reply.error_code) == (502, "model_unavailable")
    assert [m.speaker for m in broken.stores.rooms.list_room_messages(ROOM)] == ["u:dan"]


def test_without_verified_claims_every_room_route_is_401(
    handler: Any, container: Container
) -> None:
    names = sorted(p.stem for p in (EVENTS / "rooms").glob("*.json"))

    statuses = {name: invoke(handler, event(name), user=None).status for name in names}

    assert statuses == dict.fromkeys(names, 401)


def test_no_message_text_reaches_the_logs(
    handler: Any, container: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a room where something private is said and a persona answers
    open_room(handler, room_id=ROOM)
    secret_line = "My sister Ada is pregnant, nobody knows."

    say(handler, ROOM, ("u:dan", secret_line))
    call(handler, "room_turn", body={"persona": "warren"})

    # Then what was said never appears in what the function logged
    captured = capsys.readouterr()
    assert "Ada" not in captured.out + captured.err
