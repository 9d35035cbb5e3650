"""The app credential and a user's token: who may call what, every combination.

The app credential (a token whose scope holds APP_SCOPE; locally `chatmemory token --app`)
acts for the users of this deployment in every room call, and is refused on every user
route: it has no user. A user's token reaches the room routes for their own private chat
only — a private room whose one member is them — and is refused (403) anything else it
could know of; a room it is not in answers exactly as a room that does not exist (404).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory.api.identity import (
    APP_SCOPE,
    AppCaller,
    Forbidden,
    Unauthorized,
    UserCaller,
    caller_from_claims,
    user_id_from_claims,
)
from chatmemory.config import Container
from tests.support.forged_tokens import local_claims, signed
from tests.support.local_server import Answer, Running
from tests.support.openapi_operations import Operation, minimal_body
from tests.support.stored import nothing_stored_for

APP = "companion-backend"
DAN, CARA = "dan", "cara"
AS_STREAM = {"Accept": "text/event-stream"}
SOME_ID = "some_id_0"

# ---- which caller a verified token is ---------------------------------------------------

CLAIMS: dict[str, tuple[dict[str, Any], object]] = {
    "a user's token": ({"sub": DAN}, UserCaller(DAN)),
    "the app credential (Cognito client credentials)": (
        {"sub": "c0ffee", "client_id": "c0ffee", "scope": APP_SCOPE, "token_use": "access"},
        AppCaller("c0ffee"),
    ),
    "the rooms scope among others": (
        {"sub": "c0ffee", "client_id": "c0ffee", "scope": f"openid {APP_SCOPE} chatmemory/x"},
        AppCaller("c0ffee"),
    ),
    "the scope as a list": ({"sub": "c0ffee", "scope": [APP_SCOPE]}, AppCaller("c0ffee")),
    "an app named only by its sub": ({"sub": "c0ffee", "scope": APP_SCOPE}, AppCaller("c0ffee")),
    "another scope: a user named by sub": ({"sub": DAN, "scope": "openid email"}, UserCaller(DAN)),
    "a scope that only starts like it": (
        {"sub": DAN, "scope": f"{APP_SCOPE}.read"},
        UserCaller(DAN),
    ),
    "the scope in capitals is another scope": (
        {"sub": DAN, "scope": APP_SCOPE.upper()},
        UserCaller(DAN),
    ),
    "the scope as one list item with spaces": (
        {"sub": DAN, "scope": [f"openid {APP_SCOPE}"]},
        UserCaller(DAN),
    ),
}


@pytest.mark.parametrize("case", list(CLAIMS))
def test_the_caller_is_decided_by_the_scope_alone(case: str) -> None:
    claims, expected = CLAIMS[case]

    assert caller_from_claims(claims) == expected


@pytest.mark.parametrize(
    "claims",
    [{}, {"scope": APP_SCOPE}, {"scope": APP_SCOPE, "sub": ""}, {"sub": " dan"}, {"sub": 42}],
    ids=["nothing", "app without a name", "app with an empty name", "bad sub", "sub not text"],
)
def test_a_token_that_names_no_one_usable_is_unauthorized(claims: dict[str, Any]) -> None:
    with pytest.raises(Unauthorized):
        caller_from_claims(claims)


def test_the_app_credential_has_no_user_id() -> None:
    with pytest.raises(Forbidden):
        user_id_from_claims({"sub": APP, "client_id": APP, "scope": APP_SCOPE})


@pytest.mark.e2e
def test_a_local_app_token_carries_the_scope_and_names_the_app(server: Running) -> None:
    # Given the token `chatmemory token --app companion-backend` prints
    token = server.tokens.issue_app(APP, datetime.now(UTC))

    # When the local server verifies it as the JWT authorizer would
    claims = server.tokens.verify(token)

    # Then it is the app credential, named by its client id
    assert caller_from_claims(claims) == AppCaller(APP)
    assert claims["client_id"] == claims["sub"] == APP and claims["scope"] == APP_SCOPE


# ---- the app credential on the user routes ----------------------------------------------


def _is_forbidden(answer: Answer) -> bool:
    return (
        answer.status == 403
        and isinstance(answer.body, dict)
        and answer.body.get("error", {}).get("code") == "forbidden"
        and bool(answer.body["error"].get("message"))
    )


def _user_routes(operations: list[Operation]) -> list[Operation]:
    found = [op for op in operations if op.needs_token and not op.path.startswith("/v1/rooms")]
    assert found
    return found


@pytest.mark.e2e
def test_the_app_credential_is_refused_on_every_user_route(
    server: Running,
    container: Container,
    document: dict[str, Any],
    served_operations: list[Operation],
) -> None:
    # Given the app credential, and every route that acts for a user (streamed chat too)
    token = server.tokens.issue_app(APP, datetime.now(UTC))

    # When each is called with a body it would accept
    not_refused = {}
    for op in _user_routes(served_operations):
        body = minimal_body(document, op.body_schema) if op.body_schema else None
        path = op.url(**dict.fromkeys(op.path_params, SOME_ID))
        for headers in ({}, AS_STREAM):
            answer = server.call(op.method, path, token=token, body=body, headers=headers)
            if not _is_forbidden(answer):
                not_refused[f"{op.label} {headers}"] = (answer.status, answer.body)

    # Then every one is 403 in the contract's shape, and nothing was kept under its name
    assert not_refused == {}
    assert nothing_stored_for(container.stores, APP)


# ---- the app credential in the rooms ------------------------------------------------------


@dataclass
class Callers:
    server: Running
    app: str
    dan: str

    def as_app(self, method: str, path: str, body: Any = None) -> Answer:
        return self.server.call(method, path, token=self.app, body=body)

    def as_dan(self, method: str, path: str, body: Any = None) -> Answer:
        return self.server.call(method, path, token=self.dan, body=body)


@pytest.fixture
def callers(server: Running) -> Callers:
    now = datetime.now(UTC)
    return Callers(server, server.tokens.issue_app(APP, now), server.tokens.issue(DAN, now))


def _open(
    callers: Callers, room_id: str, kind: str, personas: list[str], members: list[str]
) -> None:
    body = {"room_id": room_id, "kind": kind, "personas": personas, "members": members}
    opened = callers.as_app("POST", "/v1/rooms", body)
    assert opened.status == 201, opened.body


@pytest.mark.e2e
def test_the_app_credential_may_do_everything_in_any_room(callers: Callers) -> None:
    # Given the app, acting for Dan and Cara
    private = {"kind": "private", "personas": ["warren"], "members": [DAN], "room_id": "r_dan"}
    group = {"kind": "group", "personas": ["warren", "nolan"], "members": [DAN, CARA]}
    group_id = "r_group"

    # When it opens rooms, follows who comes and goes, posts for anyone and asks for turns
    answers = {
        "open a private chat": callers.as_app("POST", "/v1/rooms", private).status,
        "open a group": callers.as_app("POST", "/v1/rooms", {**group, "room_id": group_id}).status,
        "read it": callers.as_app("GET", f"/v1/rooms/{group_id}").status,
        "seat someone": callers.as_app(
            "POST", f"/v1/rooms/{group_id}/members", {"user_ids": ["eve"]}
        ).status,
        "see someone leave": callers.as_app("DELETE", f"/v1/rooms/{group_id}/members/eve").status,
        "post for the humans and personas": callers.as_app(
            "POST",
            f"/v1/rooms/{group_id}/messages",
            {
                "messages": [
                    {"speaker": "u:dan", "text": "Hi all."},
                    {"speaker": "u:cara", "text": "Hi Dan."},
                    {"speaker": "p:nolan", "text": "Evening."},
                ]
            },
        ).status,
        "read a block": callers.as_app(
            "GET", f"/v1/rooms/{group_id}/context?persona=warren"
        ).status,
        "ask for a turn": callers.as_app(
            "POST", f"/v1/rooms/{group_id}/turn", {"persona": "warren"}
        ).status,
        "post in the private chat": callers.as_app(
            "POST", "/v1/rooms/r_dan/messages", {"messages": [{"speaker": "u:dan", "text": "Hi."}]}
        ).status,
    }

    # Then every one succeeds
    expected = dict.fromkeys(answers, 200) | {
        "open a private chat": 201,
        "open a group": 201,
        "post for the humans and personas": 201,
        "post in the private chat": 201,
    }
    assert answers == expected


@pytest.mark.e2e
def test_for_the_app_an_unknown_room_is_404_and_a_taken_id_409(callers: Callers) -> None:
    _open(callers, "r_taken", "group", ["warren"], [DAN])

    unknown = callers.as_app("GET", "/v1/rooms/r_nobody")
    taken = callers.as_app(
        "POST", "/v1/rooms", {"room_id": "r_taken", "kind": "group", "personas": ["nolan"]}
    )

    assert (unknown.status, unknown.body["error"]["code"]) == (404, "not_found")
    assert (taken.status, taken.body["error"]["code"]) == (409, "conflict")


# ---- a user's token in the rooms ------------------------------------------------------------

# What Dan's own token may do in each room (the others' and the group rooms are the app's).
Request = Callable[[str], tuple[str, str, Any]]
REQUESTS: dict[str, Request] = {
    "read the room": lambda room: ("GET", f"/v1/rooms/{room}", None),
    "seat someone": lambda room: ("POST", f"/v1/rooms/{room}/members", {"user_ids": ["eve"]}),
    "leave": lambda room: ("DELETE", f"/v1/rooms/{room}/members/{DAN}", None),
    "post as himself": lambda room: (
        "POST",
        f"/v1/rooms/{room}/messages",
        {"messages": [{"speaker": f"u:{DAN}", "text": "Back from the run."}]},
    ),
    "post as a persona": lambda room: (
        "POST",
        f"/v1/rooms/{room}/messages",
        {"messages": [{"speaker": "p:warren", "text": "How far today?"}]},
    ),
    "post as someone else": lambda room: (
        "POST",
        f"/v1/rooms/{room}/messages",
        {"messages": [{"speaker": f"u:{CARA}", "text": "Hi."}]},
    ),
    "read a persona's block": lambda room: (
        "GET",
        f"/v1/rooms/{room}/context?persona=warren",
        None,
    ),
    "ask for a turn": lambda room: ("POST", f"/v1/rooms/{room}/turn", {"persona": "warren"}),
}
OWN_PRIVATE_CHAT = {
    "read the room": 200,
    "seat someone": 403,
    "leave": 403,
    "post as himself": 201,
    "post as a persona": 201,
    "post as someone else": 403,
    "read a persona's block": 200,
    "ask for a turn": 200,
}
# Rooms Dan is in, but that are not his own private chat: he knows they exist; still the app's.
KNOWN_BUT_NOT_HIS = dict.fromkeys(REQUESTS, 403)
# Rooms Dan is not in: exactly as a room that does not exist.
NOT_FOUND = dict.fromkeys(REQUESTS, 404)

ROOMS: dict[str, tuple[str, list[str], list[str]] | None] = {
    # room id → (kind, personas, members) as the app opens it; None: never opened
    "r_dan": ("private", ["warren"], [DAN]),
    "r_group_with_dan": ("group", ["warren", "nolan"], [DAN, CARA]),
    "r_group_of_dan_alone": ("group", ["warren"], [DAN]),
    "r_cara": ("private", ["warren"], [CARA]),
    "r_group_without_dan": ("group", ["warren"], [CARA]),
    "r_private_empty": ("private", ["warren"], []),
    "r_nobody": None,
}
EXPECTED = {
    "r_dan": OWN_PRIVATE_CHAT,
    "r_group_with_dan": KNOWN_BUT_NOT_HIS,
    "r_group_of_dan_alone": KNOWN_BUT_NOT_HIS,
    "r_cara": NOT_FOUND,
    "r_group_without_dan": NOT_FOUND,
    "r_private_empty": NOT_FOUND,
    "r_nobody": NOT_FOUND,
}


@pytest.mark.e2e
@pytest.mark.parametrize("room", list(ROOMS))
def test_a_users_token_acts_only_in_their_own_private_chat(callers: Callers, room: str) -> None:
    # Given the rooms the app opened
    for room_id, spec in ROOMS.items():
        if spec is not None:
            _open(callers, room_id, *spec)

    # When Dan's own token makes every room call in this room
    answers = {name: callers.as_dan(*request(room)) for name, request in REQUESTS.items()}

    # Then only his own private chat lets him in, and only as himself; a refusal is in the
    # contract's shape
    assert {name: a.status for name, a in answers.items()} == EXPECTED[room]
    for answer in answers.values():
        if answer.status == 403:
            assert answer.body["error"]["code"] == "forbidden"
        if answer.status == 404:
            assert answer.body["error"] == {"code": "not_found", "message": "room not found"}


@pytest.mark.e2e
def test_a_room_dan_is_not_in_tells_him_nothing(callers: Callers) -> None:
    # Given Cara's private chat, which exists, and a room id nobody has
    _open(callers, "r_cara", "private", ["warren"], [CARA])

    # When Dan sends every room call to both
    theirs = {name: callers.as_dan(*request("r_cara")) for name, request in REQUESTS.items()}
    nobodys = {name: callers.as_dan(*request("r_cara0")) for name, request in REQUESTS.items()}

    # Then the answers are the same, word for word, and Cara's chat is untouched
    assert {n: (a.status, a.body) for n, a in theirs.items()} == {
        n: (a.status, a.body) for n, a in nobodys.items()
    }
    room = callers.as_app("GET", "/v1/rooms/r_cara").body
    assert (room["members"], room["last_seq"]) == ([CARA], 0)


OPENINGS = {
    "a private chat of his own": ({"kind": "private", "members": [DAN]}, 201),
    "a private room with no one": ({"kind": "private", "members": []}, 403),
    "a private room with no members named": ({"kind": "private"}, 403),
    "someone else's private chat": ({"kind": "private", "members": [CARA]}, 403),
    "a private room with two": ({"kind": "private", "members": [DAN, CARA]}, 403),
    "a group of his own": ({"kind": "group", "members": [DAN]}, 403),
    "a group with others": ({"kind": "group", "members": [DAN, CARA]}, 403),
    "his own private chat under an id he chose": (
        {"kind": "private", "members": [DAN], "room_id": "r_chosen"},
        403,
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(OPENINGS))
def test_a_user_may_open_only_a_private_chat_of_his_own(callers: Callers, case: str) -> None:
    body, status = OPENINGS[case]

    answer = callers.as_dan("POST", "/v1/rooms", {"personas": ["warren"], **body})

    assert answer.status == status, answer.body
    if status == 201:
        # and he may use the chat he opened
        room = answer.body["room_id"]
        assert callers.as_dan("GET", f"/v1/rooms/{room}").status == 200
        assert answer.body["members"] == [DAN] and answer.body["kind"] == "private"
    else:
        assert answer.body["error"]["code"] == "forbidden"
    assert callers.as_app("GET", "/v1/rooms/r_chosen").status == 404  # nothing was opened


@pytest.mark.e2e
def test_once_the_app_takes_him_out_of_his_chat_it_is_not_found_for_him(callers: Callers) -> None:
    _open(callers, "r_dan", "private", ["warren"], [DAN])
    assert callers.as_dan("GET", "/v1/rooms/r_dan").status == 200

    callers.as_app("DELETE", f"/v1/rooms/r_dan/members/{DAN}")

    assert callers.as_dan("GET", "/v1/rooms/r_dan").status == 404


@pytest.mark.e2e
def test_a_user_token_still_works_on_the_user_routes(callers: Callers) -> None:
    # The rooms change nothing for a plain assistant app.
    assert callers.as_dan("GET", "/v1/memories").status == 200
    assert callers.as_dan("POST", "/v1/context", {"message": "Hi"}).status == 200


# ---- bad app credentials ----------------------------------------------------------------------

BAD_APP_TOKENS: dict[str, Callable[[Running], str]] = {
    "signed with another key": lambda server: signed(
        local_claims(APP, client_id=APP, scope=APP_SCOPE),
        "another-secret-that-is-long-enough-to-look-real",
    ),
    "expired": lambda server: server.tokens.issue_app(
        APP, datetime.now(UTC) - timedelta(days=2), ttl=timedelta(hours=1)
    ),
    "another audience": lambda server: signed(
        local_claims(APP, client_id=APP, scope=APP_SCOPE, aud="someone-else"), server.secret
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("kind", list(BAD_APP_TOKENS))
def test_a_bad_app_credential_is_refused_on_every_room_route(
    server: Running, served_operations: list[Operation], document: dict[str, Any], kind: str
) -> None:
    token = BAD_APP_TOKENS[kind](server)
    rooms = [op for op in served_operations if op.path.startswith("/v1/rooms")]
    assert rooms

    answers = {
        op.label: server.call(
            op.method,
            op.url(**dict.fromkeys(op.path_params, SOME_ID)),
            token=token,
            body=minimal_body(document, op.body_schema) if op.body_schema else None,
        )
        for op in rooms
    }

    assert {label: a.status for label, a in answers.items()} == dict.fromkeys(answers, 401)
