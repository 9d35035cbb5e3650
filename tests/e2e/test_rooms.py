"""Personas and rooms on the real local server, with no key: Dan tells Warren something in
private, the room goes quiet, `chatmemory flush` runs the room's write, and Warren's block
in a later private chat carries it — dated, tagged, metered — while Nolan's does not, and
a group room's block carries world facts only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_server import cli_environment, run_cli
from tests.support.local_server import Running, serve_locally

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path: Path, model_cache: Path) -> Iterator[Running]:
    with serve_locally(tmp_path, model_cache) as running:
        yield running


def _flush(state_dir: Path, model_cache: Path) -> str:
    environment = cli_environment(state_dir, model_cache)
    return run_cli(environment, "flush", "--state-dir", str(state_dir)).stdout


def test_a_private_confidence_reaches_warrens_next_private_block_only(
    server: Running, tmp_path: Path, model_cache: Path
) -> None:
    app = server.tokens.issue_app("demo-app", datetime.now(UTC))
    dan = server.token_for("dan")

    def call(method: str, path: str, body: Any = None, token: str = app) -> Any:
        answer = server.call(method, path, token=token, body=body)
        assert answer.status in (200, 201), (method, path, answer.status, answer.body)
        return answer.body

    # Given Dan's private chat with Warren, where he says two things and Warren replies
    call(
        "POST",
        "/v1/rooms",
        {"room_id": "dan-warren", "kind": "private", "personas": ["warren"], "members": ["dan"]},
    )
    said = "I own a flat in Xuhui. I have a job interview at Tencent on Thursday."
    call(
        "POST", "/v1/rooms/dan-warren/messages", {"messages": [{"speaker": "u:dan", "text": said}]}
    )
    reply = call("POST", "/v1/rooms/dan-warren/turn", {"persona": "warren"})
    assert reply["message"]["speaker"] == "p:warren" and reply["model"] == "offline"

    # When the room goes quiet and flush runs its write
    assert "1 room write(s)" in _flush(tmp_path, model_cache)

    # Then Dan has a notice saying who noted it
    notices = call("GET", "/v1/notices", token=dan)["notices"]
    assert len(notices) == 1 and notices[0]["text"].startswith("Warren noted: ")
    # and Warren's block in a later private chat carries both, dated, tagged and metered,
    # while Nolan's, seated in the same room, carries nothing
    call(
        "POST",
        "/v1/rooms",
        {
            "room_id": "dan-again",
            "kind": "private",
            "personas": ["warren", "nolan"],
            "members": ["dan"],
        },
    )
    warren = call("GET", "/v1/rooms/dan-again/context?persona=warren")
    assert "- Owns a flat in Xuhui. (" in warren["text"] and "· confidence)" in warren["text"]
    # the interview is a thread Warren follows (seed 004), its day still ahead
    (interview,) = [line for line in warren["text"].splitlines() if "Tencent" in line]
    assert warren["text"].index("threads you're following:") < warren["text"].index(interview)
    assert "still ahead" in interview and "last heard today" in interview
    assert warren["meter"] == f"{warren['chars_current']} / 1200" and warren["chars_current"] > 0
    nolan = call("GET", "/v1/rooms/dan-again/context?persona=nolan")
    assert nolan["text"] == "" and nolan["meter"] == "0 / 1200"
    # and a group room with Dan loads world facts only
    call(
        "POST",
        "/v1/rooms",
        {"room_id": "club", "kind": "group", "personas": ["warren"], "members": ["dan", "cara"]},
    )
    call(
        "POST",
        "/v1/rooms/club/messages",
        {"messages": [{"speaker": "u:cara", "text": "The Odyssey opened on 2026-07-17."}]},
    )
    _flush(tmp_path, model_cache)
    call("DELETE", "/v1/rooms/club/members/cara")  # a leave rebuilds the block
    group = call("GET", "/v1/rooms/club/context?persona=warren")
    assert "The Odyssey opened" in group["text"]
    assert "Xuhui" not in group["text"] and "Tencent" not in group["text"]
    # and the page shows what Warren remembers about Dan, with the meter of the block he
    # would hold in Dan's next private chat (the world fact he learned since included)
    page = call("GET", "/v1/memories?group=persona", token=dan)["personas"]
    assert [p["persona"] for p in page] == ["warren"]
    body = {"kind": "private", "personas": ["warren"], "members": ["dan"]}
    room_id = call("POST", "/v1/rooms", {"room_id": "dan-third", **body})["room_id"]
    now = call("GET", f"/v1/rooms/{room_id}/context?persona=warren")
    assert "The Odyssey opened" in now["text"] and "Xuhui" in now["text"]
    assert page[0]["meter"] == now["meter"]
