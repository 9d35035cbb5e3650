"""Release gates for personas and rooms (seed 000 §4-5): what a persona learned about one
person in private never reaches anyone else — not another person's private chat, not a
group room they are absent from, not a group room at all under v1, not the persona who
never heard it — and a delete-all, a mute or memory off holds for every persona and
every room at once, the rooms already open included.

A's facts are said in her private chat with Warren and learned by the room's write when
it goes quiet (through the rooms API, with the app credential), with her note. Probes
are posted in rooms as lines, and every persona's block and turn is searched for A's
tokens and ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.gates import tally
from tests.gates.corpus import FACTS, NOTE, NOTE_TOKEN, PROBES, Route
from tests.gates.probing import Hit, ProbeRun, find_markers
from tests.gates.recording import Access
from tests.gates.service import APP, GateWorld

WARREN, NOLAN = "warren", "nolan"
LEARNED = tuple(fact for fact in FACTS if fact.route is Route.LEARNED)
#: a room's write keeps at most 12 new rows per persona per person per day
PER_DAY = 12
#: probes posted per room (each is a post, then every persona's block and turn)
ROOM_PROBES = PROBES[:24]


@dataclass
class Planted:
    """What A's private chat with Warren left behind."""

    user_id: str
    room_id: str
    tokens: frozenset[str]
    memory_ids: list[str] = field(default_factory=list)

    @property
    def markers(self) -> set[str]:
        return {*self.tokens, NOTE_TOKEN, *self.memory_ids}


def app(world: GateWorld, method: str, path: str, body: Any = None) -> Any:
    answer = world.api.call(APP, method, path, body)
    assert answer.status in (200, 201), (method, path, answer)
    return answer.body


def open_room(
    world: GateWorld, room_id: str, kind: str, personas: Sequence[str], members: Sequence[str]
) -> str:
    body = {"room_id": room_id, "kind": kind, "personas": list(personas), "members": list(members)}
    return str(app(world, "POST", "/v1/rooms", body)["room_id"])


def plant(world: GateWorld, user_id: str, personas: Sequence[str] = (WARREN,)) -> Planted:
    """The user's learned facts, said in a private chat with `personas`, learned when the
    room goes quiet (a day's cap at a time), and their note."""
    room_id = open_room(world, f"{user_id}-private", "private", personas, [user_id])
    for start in range(0, len(LEARNED), PER_DAY):
        batch = LEARNED[start : start + PER_DAY]
        for fact in batch:
            app(world, "POST", f"/v1/rooms/{room_id}/messages", _line(user_id, fact.said))
        world.run_background()
        world.next_day()
    world.account(user_id).set_memory(note=NOTE)
    rows = world.account(user_id).memories("all")
    planted = Planted(user_id, room_id, frozenset(fact.token for fact in LEARNED))
    planted.memory_ids = [row["memory_id"] for row in rows]
    return planted


def _line(user_id: str, text: str) -> dict[str, Any]:
    return {"messages": [{"speaker": f"u:{user_id}", "text": text}]}


def probe_room(
    world: GateWorld,
    room_id: str,
    speaker: str,
    personas: Iterable[str],
    markers: Iterable[str],
    *,
    probes: Sequence[str] = ROOM_PROBES,
) -> ProbeRun:
    """Post each probe as `speaker` (a user id), then read every persona's block and let it take its
    turn; report where any marker appeared."""
    wanted = list(markers)
    run = ProbeRun()
    for probe in probes:
        app(world, "POST", f"/v1/rooms/{room_id}/messages", _line(speaker, probe))
        run.probes += 1
        for persona in personas:
            for method, path in (
                ("GET", f"/v1/rooms/{room_id}/context?persona={persona}"),
                ("POST", f"/v1/rooms/{room_id}/turn"),
            ):
                body = {"persona": persona} if method == "POST" else None
                answer = app(world, method, path, body)
                run.requests += 1
                run.hits += [
                    _hit(probe, path, persona, marker, where)
                    for marker, where in find_markers(answer, wanted)
                ]
    return run


def _hit(probe: str, path: str, persona: str, marker: str, where: str) -> Hit:
    return Hit(probe, path, persona, marker, where)


def _tally(gate: str, world: GateWorld, run: ProbeRun, hits: int, detail: str = "") -> None:
    tally.record_replay(
        gate,
        facts=len(LEARNED),
        probes=run.probes,
        requests=run.requests,
        hits=hits,
        embedder=world.embedder,
        detail=detail,
    )


@pytest.fixture(scope="module")
def alice(world: GateWorld) -> Planted:
    return plant(world, "gate-room-alice")


def test_the_persona_learned_the_private_facts_and_carries_them_in_her_next_private_chat(
    world: GateWorld, alice: Planted
) -> None:
    # Given A's facts said to Warren in private and learned when the room went quiet
    # When A opens another private chat with Warren and Nolan and the probes run there
    room_id = open_room(world, "alice-again", "private", [WARREN, NOLAN], [alice.user_id])
    warren = probe_room(world, room_id, alice.user_id, [WARREN], alice.markers)
    nolan = probe_room(world, room_id, alice.user_id, [NOLAN], alice.tokens)

    # Then Warren's block carries most of them (so the probes can fish) and her note; Nolan,
    # who never heard them, carries none of the facts
    found = warren.markers_found(alice.tokens)
    _tally(
        "control: Warren in A's next private chat",
        world,
        warren,
        len(warren.hits),
        f"her own facts, so hits are expected: {len(found)}/{len(LEARNED)} facts in the block",
    )
    _tally("persona isolation: Nolan in A's private chat", world, nolan, len(nolan.hits))
    assert len(found) >= 10, sorted(alice.tokens - found)
    assert warren.markers_found({NOTE_TOKEN})
    assert nolan.hits == [], nolan.describe()
    assert world.problems.messages() == []


def test_no_other_person_and_no_group_room_ever_sees_what_warren_learned_in_private(
    world: GateWorld, alice: Planted
) -> None:
    # Given A's facts with Warren; B and C, who never met her
    bob, cara = "gate-room-bob", "gate-room-cara"
    world.recorder.clear()

    # When B probes in his own private chat with both personas, B and C in a group room
    # without A, and B, C and A together in a group room
    runs = {
        "B's private chat": probe_room(
            world,
            open_room(world, "bob-private", "private", [WARREN, NOLAN], [bob]),
            bob,
            [WARREN, NOLAN],
            alice.markers,
        ),
        "a group without A": probe_room(
            world,
            open_room(world, "group-without-a", "group", [WARREN, NOLAN], [bob, cara]),
            cara,
            [WARREN, NOLAN],
            alice.markers,
        ),
        "a group with A (v1: world facts only)": probe_room(
            world,
            open_room(world, "group-with-a", "group", [WARREN, NOLAN], [bob, cara, alice.user_id]),
            cara,
            [WARREN, NOLAN],
            alice.markers,
        ),
    }
    world.run_background()

    # Then none of A's facts, note or ids appear in any block or turn
    for where, run in runs.items():
        _tally(f"room isolation: {where}", world, run, len(run.hits))
        assert run.hits == [], (where, run.describe())
    # and the only users' partitions read were those of the people present (the rest are
    # the rooms' own partitions and the personas')
    rooms = {"bob-private", "group-without-a", "group-with-a"}
    readers = {
        call.user_id
        for call in world.recorder.calls
        if call.access is Access.MEMORY_READ and call.user_id not in {WARREN, NOLAN, *rooms}
    }
    assert readers <= {bob, cara, alice.user_id}, readers
    # and nothing of A's was learned into B's or C's memories by the rooms' writes
    for other in (bob, cara):
        assert find_markers(world.account(other).memories("all"), alice.markers) == []
    assert world.problems.messages() == []


def test_delete_all_mute_and_memory_off_hold_at_once_in_rooms_already_open(
    world: GateWorld,
) -> None:
    # Given D's facts learned by Warren and Nolan both, and a later private room of hers
    # with them both, open (its blocks were built with what they know)
    dora = plant(world, "gate-room-dora", personas=(WARREN, NOLAN))
    speaker = dora.user_id
    room_id = open_room(world, "dora-open", "private", [WARREN, NOLAN], [dora.user_id])
    before = probe_room(world, room_id, speaker, [WARREN, NOLAN], dora.tokens, probes=PROBES[:4])
    assert before.markers_found(dora.tokens)

    # When D mutes Warren: Warren's block in the open room holds nothing of hers at once,
    # Nolan's still does
    world.account(dora.user_id).set_memory(muted_personas=[WARREN])
    muted = probe_room(world, room_id, speaker, [WARREN], dora.markers, probes=PROBES[4:12])
    nolan = probe_room(world, room_id, speaker, [NOLAN], dora.tokens, probes=PROBES[4:8])
    _tally("mute: Warren in D's open room", world, muted, len(muted.hits))
    assert muted.hits == [], muted.describe()
    assert nolan.markers_found(dora.tokens)

    # When D switches memory off: no persona holds anything of hers, and nothing is learned
    world.account(dora.user_id).set_memory(enabled=False, muted_personas=[])
    app(
        world,
        "POST",
        f"/v1/rooms/{room_id}/messages",
        _line(dora.user_id, "I live in Vexmoor."),
    )
    off = probe_room(world, room_id, speaker, [WARREN, NOLAN], dora.markers, probes=PROBES[12:20])
    world.run_background()
    _tally("memory off: D's open room", world, off, len(off.hits))
    assert off.hits == [], off.describe()
    world.account(dora.user_id).set_memory(enabled=True)
    assert find_markers(world.account(dora.user_id).memories("all"), {"Vexmoor"}) == []

    # When D deletes everything: the open room and a new one hold nothing of hers, before
    # and after the purge
    answer = world.account(dora.user_id).call("DELETE", "/v1/memories")
    assert answer.status == 204, answer
    gone = probe_room(world, room_id, speaker, [WARREN, NOLAN], dora.markers - {NOTE_TOKEN})
    world.run_background()  # the purge
    fresh = open_room(world, "dora-after", "private", [WARREN, NOLAN], [dora.user_id])
    after = probe_room(world, fresh, speaker, [WARREN, NOLAN], dora.markers - {NOTE_TOKEN})
    _tally("deletion: D's open room, before the purge", world, gone, len(gone.hits))
    _tally("deletion: D's new room, after the purge", world, after, len(after.hits))
    assert gone.hits == [], gone.describe()
    assert after.hits == [], after.describe()
    assert world.problems.messages() == []
