"""The contracts of the small stores, on both backends: profiles, settings, events, notices
and the write pipeline's runs."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.events import Actor, Op
from chatmemory.domain.extraction import Candidate, ExtractionRun, run_id_for
from chatmemory.domain.ids import new_notice_id
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.notice import Notice
from chatmemory.domain.profile import Profile
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import (
    ALICE,
    BOB,
)
from tests.support import builders

# ---- profile, settings, events, notices -------------------------------------------------


def test_profiles_are_kept_per_persona_and_deleted_together(
    stores: Stores, clock: ManualClock
) -> None:
    assistant = Profile(
        user_id=ALICE,
        text="Vegetarian; lives in Pune.",
        token_count=8,
        built_from=("mem_a", "mem_b"),
        rebuilt_at=clock.now(),
    )
    warren = Profile(
        user_id=ALICE,
        persona="warren",
        text="Owns a flat.",
        token_count=4,
        built_from=("mem_c",),
        rebuilt_at=clock.now(),
        review_at=clock.now() + timedelta(days=300),
        built_by=1,  # by the rules before the current ones: read back as stale
    )
    stores.user_state.put_profile(assistant)
    stores.user_state.put_profile(warren)

    assert stores.user_state.get_profile(ALICE) == assistant
    assert stores.user_state.get_profile(ALICE, "warren") == warren
    assert warren.stale(clock.now()) and not assistant.stale(clock.now())

    stores.user_state.delete_profiles(ALICE)
    assert (
        stores.user_state.get_profile(ALICE) is None
        and stores.user_state.get_profile(ALICE, "warren") is None
    )


def test_settings_default_to_enabled_and_round_trip(stores: Stores, clock: ManualClock) -> None:
    assert stores.user_state.get_settings(ALICE) == MemorySettings(
        user_id=ALICE, enabled=True, note=""
    )
    saved = MemorySettings(
        user_id=ALICE,
        enabled=False,
        note="Ich heiße Al — 呼んで",
        muted_personas=frozenset({"warren"}),
        updated_at=clock.now(),
    )

    stores.user_state.put_settings(saved)

    assert stores.user_state.get_settings(ALICE) == saved


def test_events_list_oldest_first_and_are_idempotent(stores: Stores, clock: ManualClock) -> None:
    added = builders.event(ALICE, "mem_x", Op.ADD, clock.now())
    clock.advance(timedelta(seconds=5))
    used = builders.event(ALICE, "mem_x", Op.USE, clock.now(), actor=Actor.SYSTEM)
    other = builders.event(ALICE, "mem_y", Op.ADD, clock.now())

    stores.events.add_events([used, added, other])
    stores.events.add_events([added])

    assert stores.events.list_events(ALICE, "mem_x") == [added, used]


def test_an_event_reads_back_with_whose_memory_it_was_and_what_sort(
    stores: Stores, clock: ManualClock
) -> None:
    # Given an event naming its memory's persona and kind, and one from before they were kept
    described = dataclasses.replace(
        builders.event(ALICE, "mem_x", Op.CLOSE, clock.now()),
        related_id="mem_y",
        persona="coach",
        kind=Kind.OPEN_LOOP,
    )
    bare = builders.event(ALICE, "mem_x", Op.DELETE, clock.now())

    stores.events.add_events([described, bare])

    assert stores.events.list_events(ALICE, "mem_x") == [described, bare]


def test_notices_list_newest_first_and_undo_once(stores: Stores, clock: ManualClock) -> None:
    older = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: is vegetarian",
        memory_ids=("mem_a",),
        created_at=clock.now(),
        conversation_id="conv_" + "c" * 32,
    )
    clock.advance(timedelta(minutes=1))
    newer = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: lives in Pune · works at Acme",
        memory_ids=("mem_b", "mem_c"),
        created_at=clock.now(),
    )
    stores.notices.add_notice(older)
    stores.notices.add_notice(newer)
    stores.notices.add_notice(older)

    assert stores.notices.list_notices(ALICE) == [newer, older]
    assert stores.notices.get_notice(ALICE, older.notice_id) == older

    assert stores.notices.mark_notice_undone(ALICE, older.notice_id, clock.now()) is True
    assert stores.notices.mark_notice_undone(ALICE, older.notice_id, clock.now()) is False
    assert stores.notices.list_notices(ALICE) == [newer]
    undone = stores.notices.list_notices(ALICE, include_undone=True)
    assert [n.notice_id for n in undone] == [newer.notice_id, older.notice_id]
    assert undone[1].undone_at == clock.now()

    stores.notices.delete_notices(ALICE, [older.notice_id, newer.notice_id])
    assert stores.notices.list_notices(ALICE, include_undone=True) == []


def test_notices_about_memories_include_undone_ones_and_only_the_users_own(
    stores: Stores, clock: ManualClock
) -> None:
    # Given notices naming memories — one undone, many others, and Bob's about the same id
    def notice(user_id: str, memory_ids: tuple[str, ...]) -> Notice:
        clock.advance(timedelta(seconds=1))
        made = Notice(
            user_id=user_id,
            notice_id=new_notice_id(),
            text="noted: " + " · ".join(memory_ids),
            memory_ids=memory_ids,
            created_at=clock.now(),
        )
        stores.notices.add_notice(made)
        return made

    first = notice(ALICE, ("mem_a", "mem_b"))
    undone = notice(ALICE, ("mem_a",))
    stores.notices.mark_notice_undone(ALICE, undone.notice_id, clock.now())
    for n in range(120):  # more than one page of notices
        notice(ALICE, (f"mem_other{n}",))
    about_b = notice(ALICE, ("mem_c", "mem_b"))
    notice(BOB, ("mem_a",))

    # Then every notice of Alice's naming a or b is found, newest first, and no other
    found = stores.notices.notices_about(ALICE, ["mem_a", "mem_b"])
    assert [n.notice_id for n in found] == [about_b.notice_id, undone.notice_id, first.notice_id]
    assert stores.notices.notices_about(ALICE, []) == []
    assert stores.notices.notices_about(ALICE, ["mem_never"]) == []


def test_extraction_runs_round_trip_expire_and_go_with_their_conversation(
    stores: Stores, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    candidate = Candidate(
        text="Lives in Pune.",
        category="location",
        kind=Kind.FACT,
        importance=6,
        stated_by=StatedBy.USER,
        evidence=("msg_" + "a" * 32 + "_1",),
        key="home_city",
        uses=("weather",),
    )
    run = ExtractionRun(
        user_id=ALICE,
        run_id=run_id_for(ALICE, conversation.conversation_id, 4),
        conversation_id=conversation.conversation_id,
        persona="assistant",
        from_seq=0,
        upto_seq=4,
        created_at=clock.now(),
        expires_at=clock.now() + timedelta(days=7),
        candidates=(candidate,),
        dropped={"secret": 1},
    )

    stores.runs.put_extraction_run(run)

    assert stores.runs.get_extraction_run(ALICE, run.run_id) == run
    assert stores.runs.get_extraction_run(BOB, run.run_id) is None
    stores.runs.delete_extraction_runs(ALICE, conversation.conversation_id)
    assert stores.runs.get_extraction_run(ALICE, run.run_id) is None
    stores.runs.put_extraction_run(run)
    clock.advance(timedelta(days=7, seconds=1))
    assert stores.runs.get_extraction_run(ALICE, run.run_id) is None
