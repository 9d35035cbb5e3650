"""The audience rule (seed 000 §4): what a persona may hold in a room, decided in code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmemory.domain.audience import V1_GROUPS_LOAD_WORLD_ONLY, Visible, visible_memories
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.rooms import Room, RoomKind
from tests.support import builders

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
USERS = ("dan", "cara", "ann")
PERSONAS = ("warren", "nolan")


def _row(text: str, **fields: Any) -> Memory:
    values: dict[str, Any] = {"persona": "warren", "subject": "u:dan"}
    values.update(fields)
    return builders.memory("dan", text, NOW, **values)


def _room(kind: RoomKind, *members: str, incognito: bool = False) -> Room:
    return Room(
        room_id=f"r-{kind}",
        kind=kind,
        created_at=NOW,
        incognito=incognito,
        personas=frozenset({"warren", "nolan"}),
        members=frozenset(members),
    )


def _on(user: str, *muted: str, enabled: bool = True) -> MemorySettings:
    return MemorySettings(user_id=user, enabled=enabled, muted_personas=frozenset(muted))


PRIVATE = _room(RoomKind.PRIVATE, "dan")
GROUP = _room(RoomKind.GROUP, "dan", "cara")
EVERYONE_ON = {user: _on(user) for user in USERS}

FLAT_1_TO_1 = _row("Dan owns a flat in Xuhui, bought Jul 2026.", witnessed=("dan",))
TESLA_IN_GROUP = _row("Dan sold his Tesla shares in July.", witnessed=("dan", "cara"))
PROMISE_TO_DAN = _row(
    "Warren said he would send Dan the 1988 shareholder letter.",
    subject="self",
    counterpart="u:dan",
    witnessed=("dan",),
)
ODYSSEY = _row("Nolan's Odyssey opened 2026-07-17.", subject="world", witnessed=("dan",))
ALL_OF_THE_ABOVE = (FLAT_1_TO_1, TESLA_IN_GROUP, PROMISE_TO_DAN, ODYSSEY)


def _seen(visible: list[Visible]) -> list[tuple[str, bool]]:
    return [(v.memory.text, v.confidence) for v in visible]


# ---- the seed's table, row by row ---------------------------------------------------------


@pytest.mark.parametrize(
    ("room", "present", "rows", "expected"),
    [
        pytest.param(
            PRIVATE,
            {"dan"},
            [FLAT_1_TO_1],
            [(FLAT_1_TO_1.text, True)],
            id="about Dan, Dan present, formed 1:1 → loaded, confidence",
        ),
        pytest.param(
            PRIVATE,
            {"dan"},
            [TESLA_IN_GROUP],
            [(TESLA_IN_GROUP.text, False)],
            id="formed in a group → loaded, no tag",
        ),
        pytest.param(
            _room(RoomKind.PRIVATE, "cara"),
            {"cara"},
            [FLAT_1_TO_1, TESLA_IN_GROUP],
            [],
            id="Dan absent → not loaded",
        ),
        pytest.param(
            PRIVATE,
            {"dan"},
            [PROMISE_TO_DAN],
            [(PROMISE_TO_DAN.text, True)],
            id="Warren's promise to Dan, Dan present → loaded",
        ),
        pytest.param(
            _room(RoomKind.PRIVATE, "cara"),
            {"cara"},
            [ODYSSEY],
            [(ODYSSEY.text, False)],
            id="world fact → loaded",
        ),
        pytest.param(
            GROUP,
            {"dan", "cara"},
            list(ALL_OF_THE_ABOVE),
            [(ODYSSEY.text, False)],
            id="any of the above in a group room under v1 → world only",
        ),
    ],
)
def test_the_seed_table_decides_what_the_persona_holds(
    room: Room, present: set[str], rows: list[Memory], expected: list[tuple[str, bool]]
) -> None:
    # Given the seed's case, everyone present with memory on
    # When Warren's context is built for this room
    visible = visible_memories("warren", frozenset(present), room, rows, EVERYONE_ON)

    # Then exactly the table's answer is loaded, tagged as the table says
    assert _seen(visible) == expected


def test_a_private_chat_loads_everything_about_its_human_in_input_order() -> None:
    # Given Dan alone with Warren and all four example rows
    # When the context is built
    visible = visible_memories("warren", frozenset({"dan"}), PRIVATE, ALL_OF_THE_ABOVE, EVERYONE_ON)

    # Then all four load, in the order they came (ranking is a later step)
    assert [v.memory for v in visible] == list(ALL_OF_THE_ABOVE)


def test_without_the_v1_scope_a_group_loads_what_is_about_those_present() -> None:
    # Given a group with Dan and Cara, the v1 scope switched off (after the leak exam)
    # When the context is built
    visible = visible_memories(
        "warren",
        frozenset({"dan", "cara"}),
        GROUP,
        ALL_OF_THE_ABOVE,
        EVERYONE_ON,
        groups_load_world_only=False,
    )

    # Then the rows about Dan load too, and what Dan said alone stays tagged `confidence`
    assert _seen(visible) == [
        (FLAT_1_TO_1.text, True),
        (TESLA_IN_GROUP.text, False),
        (PROMISE_TO_DAN.text, True),
        (ODYSSEY.text, False),
    ]
    assert V1_GROUPS_LOAD_WORLD_ONLY is True


# ---- what the table implies -----------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "switches"),
    [
        pytest.param([FLAT_1_TO_1], {"dan": _on("dan", enabled=False)}, id="memory off"),
        pytest.param([FLAT_1_TO_1], {"dan": _on("dan", "warren")}, id="persona muted"),
        pytest.param([FLAT_1_TO_1], {}, id="missing settings"),
        pytest.param([FLAT_1_TO_1], {"dan": _on("cara")}, id="settings filed under another user"),
        pytest.param([PROMISE_TO_DAN], {"dan": _on("dan", "warren")}, id="counterpart muted"),
        pytest.param([PROMISE_TO_DAN], {"dan": _on("dan", enabled=False)}, id="counterpart off"),
    ],
)
def test_a_users_own_switches_keep_them_out_of_the_persona_s_head(
    rows: list[Memory], switches: dict[str, MemorySettings]
) -> None:
    # Given Dan present, but his switches say no (or cannot be known)
    # When Warren's context is built
    visible = visible_memories("warren", frozenset({"dan"}), PRIVATE, rows, switches)

    # Then nothing about Dan is loaded
    assert visible == []


def test_a_muted_persona_does_not_silence_another_persona() -> None:
    # Given Dan muted Nolan, not Warren
    # When Warren's context is built
    visible = visible_memories(
        "warren", frozenset({"dan"}), PRIVATE, [FLAT_1_TO_1], {"dan": _on("dan", "nolan")}
    )

    # Then Warren still remembers Dan
    assert [v.memory for v in visible] == [FLAT_1_TO_1]


def test_an_incognito_room_loads_nothing_not_even_world_facts() -> None:
    # Given an incognito private chat with Dan
    room = _room(RoomKind.PRIVATE, "dan", incognito=True)

    # When Warren's context is built
    visible = visible_memories("warren", frozenset({"dan"}), room, ALL_OF_THE_ABOVE, EVERYONE_ON)

    # Then the persona holds nothing
    assert visible == []


def test_another_persona_s_rows_are_never_loaded() -> None:
    # Given Nolan's rows about Dan and the world, handed to Warren's build by mistake
    rows = [
        _row("Dan owns a flat in Xuhui.", persona="nolan", witnessed=("dan",)),
        _row("Nolan's Odyssey opened.", persona="nolan", subject="world"),
    ]

    # When Warren's context is built
    visible = visible_memories("warren", frozenset({"dan"}), PRIVATE, rows, EVERYONE_ON)

    # Then none of them reach Warren
    assert visible == []


def test_closed_and_superseded_rows_are_never_loaded() -> None:
    # Given a belief that stopped being true and one that was replaced
    replacement = _row("Dan owns a flat in Jing'an.")
    rows = [
        _row("Dan owns a flat in Xuhui.").closed(NOW + timedelta(days=1)),
        _row("Dan lives in Pune.").superseded_by(replacement),
        _row("Nolan's Odyssey is in cinemas.", subject="world").closed(NOW + timedelta(days=2)),
    ]
    assert all(row.status is not Status.ACTIVE for row in rows)

    # When Warren's context is built
    visible = visible_memories("warren", frozenset({"dan"}), PRIVATE, rows, EVERYONE_ON)

    # Then only open rows could ever load, and these are history
    assert visible == []


@pytest.mark.parametrize(
    "promise",
    [
        pytest.param(
            _row("Warren owes Cara a reply.", subject="self", counterpart="u:cara"), id="with Cara"
        ),
        pytest.param(_row("Warren meant to reread Graham.", subject="self"), id="with no one"),
    ],
)
def test_a_self_row_whose_counterpart_is_not_present_is_not_loaded(promise: Memory) -> None:
    # Given Warren's own promise to someone who is not in the room (or to no one)
    # When Warren's context is built in Dan's private chat
    visible = visible_memories("warren", frozenset({"dan"}), PRIVATE, [promise], EVERYONE_ON)

    # Then it is not loaded
    assert visible == []


def test_a_persona_not_seated_in_the_room_holds_nothing() -> None:
    # Given a room Warren is not part of
    room = Room(
        room_id="r-nolan",
        kind=RoomKind.PRIVATE,
        created_at=NOW,
        personas=frozenset({"nolan"}),
        members=frozenset({"dan"}),
    )

    # When a context is built for Warren there anyway
    visible = visible_memories("warren", frozenset({"dan"}), room, ALL_OF_THE_ABOVE, EVERYONE_ON)

    # Then Warren holds nothing in it
    assert visible == []


def test_a_private_room_with_two_humans_counts_as_a_group() -> None:
    # Given a room created private, but with a second human in it
    room = _room(RoomKind.PRIVATE, "dan", "cara")

    # When Warren's context is built under v1
    visible = visible_memories(
        "warren", frozenset({"dan", "cara"}), room, ALL_OF_THE_ABOVE, EVERYONE_ON
    )

    # Then it is not a private chat, so world facts only
    assert not room.is_private_chat
    assert [v.memory for v in visible] == [ODYSSEY]


# ---- properties over random rooms, rows, presence and switches --------------------------

Scene = tuple[str, frozenset[str], Room, list[Memory], dict[str, MemorySettings], bool]


_users = st.sampled_from(USERS)
_user_sets = st.frozensets(_users)


def _mostly(usual: object, rare: object) -> st.SearchStrategy[Any]:
    """The usual value three times in four, so the rule's interesting paths get exercised."""
    return st.sampled_from((usual, usual, usual, rare))


@st.composite
def _memory(draw: st.DrawFn, index: int, persona: str) -> Memory:
    subject = draw(st.sampled_from(("world", "self", *(f"u:{u}" for u in USERS))))
    counterpart = draw(st.none() | _users.map(lambda u: f"u:{u}")) if subject == "self" else None
    other = next(p for p in PERSONAS if p != persona)
    row = builders.memory(
        draw(_users),
        f"Row {index}.",
        NOW,
        memory_id=f"m{index}",
        persona=draw(_mostly(persona, other)),
        subject=subject,
        counterpart=counterpart,
        witnessed=tuple(sorted(draw(_user_sets))),
    )
    ended = draw(st.sampled_from(("open", "open", "open", "open", "closed", "superseded")))
    if ended == "closed":
        return row.closed(NOW)
    if ended == "superseded":
        return row.with_changes(status=Status.SUPERSEDED, valid_to=NOW, closed_by=f"m{index}x")
    return row


def _switch(user: str, persona: str, choice: str) -> MemorySettings | None:
    if choice == "missing":
        return None
    return MemorySettings(
        user_id=user,
        enabled=choice != "off",
        muted_personas=frozenset({persona}) if choice == "muted" else frozenset(),
    )


@st.composite
def _scenes(draw: st.DrawFn) -> Scene:
    persona = draw(st.sampled_from(PERSONAS))
    members = draw(_users.map(lambda u: frozenset({u})) | _user_sets)  # often a private chat
    seated = frozenset({persona}) if draw(_mostly(True, False)) else frozenset()
    room = Room(
        room_id="r1",
        kind=draw(st.sampled_from(RoomKind)),
        created_at=NOW,
        incognito=draw(_mostly(False, True)),
        fiction=draw(st.booleans()),
        personas=seated | draw(st.frozensets(st.sampled_from(PERSONAS))),
        members=members,
    )
    # Usually the members are who is present; sometimes the caller says otherwise.
    present = members if draw(_mostly(True, False)) else draw(_user_sets)
    choices = st.sampled_from(("on",) * 5 + ("off", "muted", "missing"))
    switches = {
        user: switch
        for user in USERS
        if (switch := _switch(user, persona, draw(choices))) is not None
    }
    rows = [draw(_memory(i, persona)) for i in range(draw(st.integers(1, 10)))]
    return persona, present, room, rows, switches, draw(st.booleans())


def _whom(memory: Memory) -> str | None:
    whom = memory.counterpart if memory.subject == "self" else memory.subject
    return whom[2:] if whom and whom.startswith("u:") else None


def _run(scene: Scene) -> list[Visible]:
    persona, present, room, rows, switches, world_only = scene
    return visible_memories(
        persona, present, room, rows, switches, groups_load_world_only=world_only
    )


@settings(max_examples=100)
@given(_scenes())
def test_nothing_about_an_absent_user_is_ever_loaded(scene: Scene) -> None:
    # Given any room, rows, presence and switches
    # When the rule runs
    visible = _run(scene)

    # Then every row about someone is about someone present
    present = scene[1]
    assert all(_whom(v.memory) in present for v in visible if v.memory.subject != "world")


@settings(max_examples=50)
@given(_scenes())
def test_an_incognito_room_is_always_empty(scene: Scene) -> None:
    # Given any scene, made incognito
    persona, present, room, rows, switches, world_only = scene
    hidden = Room(
        room_id=room.room_id,
        kind=room.kind,
        created_at=room.created_at,
        incognito=True,
        personas=room.personas,
        members=room.members,
    )

    # When the rule runs, Then nothing loads
    assert _run((persona, present, hidden, rows, switches, world_only)) == []


@settings(max_examples=100)
@given(_scenes())
def test_a_user_who_muted_the_persona_has_nothing_about_them_loaded(scene: Scene) -> None:
    # Given any scene
    persona, _, _, _, switches, _ = scene

    # When the rule runs
    visible = _run(scene)

    # Then no loaded row is about a user who muted this persona
    muted = {u for u, s in switches.items() if persona in s.muted_personas}
    assert not any(_whom(v.memory) in muted for v in visible)


@settings(max_examples=100)
@given(_scenes())
def test_a_user_with_memory_off_has_nothing_about_them_loaded(scene: Scene) -> None:
    # Given any scene
    switches = scene[4]

    # When the rule runs
    visible = _run(scene)

    # Then no loaded row is about a user with memory off, nor about one without settings
    off = {u for u, s in switches.items() if not s.enabled}
    unknown = set(USERS) - set(switches)
    assert not any(_whom(v.memory) in off | unknown for v in visible)


@settings(max_examples=100)
@given(_scenes())
def test_the_result_is_the_persona_s_open_rows_in_input_order_nothing_invented(
    scene: Scene,
) -> None:
    # Given any scene
    persona, _, _, rows, _, _ = scene

    # When the rule runs
    visible = _run(scene)

    # Then each result is one of the inputs, in order, and one of this persona's open rows
    remaining = iter(rows)
    assert all(any(v.memory is row for row in remaining) for v in visible)
    assert all(v.memory.persona == persona for v in visible)
    assert all(v.memory.status is Status.ACTIVE for v in visible)


@settings(max_examples=100)
@given(_scenes())
def test_under_v1_a_group_room_loads_world_facts_only(scene: Scene) -> None:
    # Given any scene in a room that is not a private chat, under the v1 scope
    persona, present, room, rows, switches, _ = scene

    # When the rule runs
    visible = _run((persona, present, room, rows, switches, True))

    # Then only world facts load there
    if not room.is_private_chat:
        assert all(v.memory.subject == "world" for v in visible)


# ---- threads: the parts of someone's story, for them alone (seed 004 law 6) ----------------

THREAD = _row(
    "Is job-hunting: second round at Acme on Friday 2026-12-04.",
    kind=Kind.THREAD,
    witnessed=("dan",),
)


def test_a_thread_loads_in_the_private_chat_with_its_person() -> None:
    seen = visible_memories("warren", frozenset({"dan"}), PRIVATE, [THREAD], EVERYONE_ON)

    assert [v.memory for v in seen] == [THREAD]


def test_a_thread_never_loads_in_a_group_even_with_the_group_scope_on() -> None:
    seen = visible_memories(
        "warren",
        frozenset({"dan", "cara"}),
        GROUP,
        [THREAD, FLAT_1_TO_1],
        EVERYONE_ON,
        groups_load_world_only=False,
    )

    assert [v.memory for v in seen] == [FLAT_1_TO_1]
