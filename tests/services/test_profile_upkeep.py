"""The always-on profile stays a function of the active memories on every write path, on
both stores: after any write and the worker's next pass (the debounced rebuild, no chat
needed), the stored profile equals the one rebuilt from scratch, and no two active
memories state one single-valued fact two ways (home city, job, diet, relationship).

Regressions: memories imported and typed never reached the profile until some unrelated
chat made the pipeline run; a saved move left the old city and job beside the new ones.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain import fading
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.profile import Profile
from chatmemory.domain.profile_digest import build_digest
from chatmemory.domain.rooms import NewRoomMessage, RoomKind
from chatmemory.domain.standing import contradictions
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.after_turn import AfterTurn
from chatmemory.services.context import ContextRequest
from chatmemory.services.idle import IdleDelays
from chatmemory.services.memories import NewMemory
from chatmemory.services.notices import NoticeService
from chatmemory.services.observe import ObserveRequest, ObserveService
from chatmemory.services.portability import PortabilityService
from chatmemory.services.profile import PROFILE_DEBOUNCE
from chatmemory.services.room_service import NewRoom
from tests.support import builders
from tests.support.product import ALICE, IDLE, Product


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


# ---- the invariant ---------------------------------------------------------------------


def _worker_catches_up(product: Product) -> None:
    """What the server's jobs thread does next: queued work, then the timers due once
    the debounce is over. No flush, no chat."""
    product.jobs.run_pending()
    product.clock.advance(PROFILE_DEBOUNCE + timedelta(seconds=1))
    product.jobs.run_due()
    product.jobs.run_pending()


def _profile_is_true(product: Product) -> None:
    """For every persona she has memories with: the stored profile is the one built from
    scratch from what is in use now, and nothing in use contradicts itself."""
    now = product.clock.now()
    everything = list(product.stores.memories.iter_memories(ALICE, MemoryQuery(status=None)))
    for persona in sorted({m.persona for m in everything} | {"assistant"}):
        in_use = [
            m
            for m in product.stores.memories.iter_memories(ALICE, MemoryQuery(persona=persona))
            if fading.in_use(m, now)
        ]
        expected = build_digest(in_use)
        stored = product.stores.user_state.get_profile(ALICE, persona)
        kept = (stored.text, stored.built_from) if stored else ("", ())
        assert kept == (expected.text, expected.built_from), persona
        assert contradictions(in_use) == [], persona


# ---- every write path ------------------------------------------------------------------


def _seed(product: Product) -> dict[str, Memory]:
    """What she had before: a home, a job and a hobby, the profile built from them."""
    rows = {
        text: product.memories.create(ALICE, NewMemory(text=text, category=category)).memory
        for text, category in (
            ("Lives in Pune.", "location"),
            ("Works as a nurse.", "work"),
            ("Plays the cello.", "hobbies"),
        )
    }
    _worker_catches_up(product)
    return rows


def _chat_read_in_the_background(product: Product, _: dict[str, Memory]) -> None:
    product.say("I live in Lisbon and I work as a carpenter.")
    product.go_quiet()


def _the_save_tool(product: Product, _: dict[str, Memory]) -> None:
    product.say("Please remember that I live in Lisbon now and I work as a carpenter")


def _typed(product: Product, _: dict[str, Memory]) -> None:
    product.memories.create(ALICE, NewMemory(text="Speaks Portuguese and Hindi."))


def _typed_over_an_older_fact(product: Product, _: dict[str, Memory]) -> None:
    product.memories.create(ALICE, NewMemory(text="Lives in Lisbon.", category="location"))


def _corrected(product: Product, rows: dict[str, Memory]) -> None:
    product.memories.correct(ALICE, rows["Lives in Pune."].memory_id, text="Lives in Porto.")


def _deleted(product: Product, rows: dict[str, Memory]) -> None:
    product.memories.delete(ALICE, rows["Plays the cello."].memory_id)


def _forgotten_all(product: Product, _: dict[str, Memory]) -> None:
    product.memories.forget_everything(ALICE)


def _imported(product: Product, _: dict[str, Memory]) -> None:
    service = PortabilityService(
        product.stores, product.clock, product.memories, profiles=product.profiles
    )
    learned = product.clock.now() - timedelta(days=3)
    rows = [
        builders.memory(ALICE, text, learned, category=category)
        for text, category in (
            ("Lives in Lisbon.", "location"),
            ("Has a dog named Rex.", "pets"),
            ("Is vegetarian.", "diet"),
        )
    ]
    assert service.import_batch(ALICE, rows).imported == 3


def _undone_notice(product: Product, _: dict[str, Memory]) -> None:
    product.say("I'm vegetarian and I have a dog named Rex.")
    product.go_quiet()
    [notice] = product.stores.notices.list_notices(ALICE)
    NoticeService(product.stores, product.clock, product.memories).undo(ALICE, notice.notice_id)


def _a_rooms_write(product: Product, _: dict[str, Memory]) -> None:
    room = product.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=["warren"], members=[ALICE]))
    product.rooms.post(room.room_id, [NewRoomMessage(f"u:{ALICE}", "I live in Lyon now.")])
    product.clock.advance(IDLE + timedelta(seconds=1))
    product.jobs.run_due()


def _observed(product: Product, _: dict[str, Memory]) -> None:
    """What an MCP host's `memory_observe` and an app's `POST /v1/observe` do."""
    service = ObserveService(
        product.stores,
        product.clock,
        AfterTurn(product.stores, product.jobs, IdleDelays(product.stores, warm=IDLE)),
    )
    service.observe(
        ObserveRequest(
            user_id=ALICE,
            turn_id=f"turn-{uuid.uuid4().hex}",
            user_message="I moved to Berlin and I work as a baker.",
            assistant_message="Congratulations on the move!",
        )
    )
    product.go_quiet()


def _set_aside_at_the_cap(product: Product, _: dict[str, Memory]) -> None:
    for number in range(4):
        product.memories.create(ALICE, NewMemory(text=f"Has visited city number {number}."))
    product.memories.archive_over_cap(ALICE)


def _faded_with_time(product: Product, _: dict[str, Memory]) -> None:
    """Nothing written: a year and a half unused, and the read path finds the profile due."""
    product.clock.advance(timedelta(days=550))
    product.context.build(ContextRequest(user_id=ALICE, message="Hello again"))


WRITES: dict[str, Callable[[Product, dict[str, Memory]], None]] = {
    "a chat read in the background": _chat_read_in_the_background,
    "the save tool": _the_save_tool,
    "a memory typed": _typed,
    "a memory typed over an older fact": _typed_over_an_older_fact,
    "a correction": _corrected,
    "a delete": _deleted,
    "forget everything": _forgotten_all,
    "an import": _imported,
    "a notice undone": _undone_notice,
    "a room's write": _a_rooms_write,
    "an observed turn (MCP, an app's own model)": _observed,
    "the cap setting beliefs aside": _set_aside_at_the_cap,
    "fading with time": _faded_with_time,
}


@pytest.mark.parametrize("write", WRITES.values(), ids=list(WRITES))
def test_after_any_write_the_profile_is_the_one_its_memories_make(
    product: Product,
    write: Callable[[Product, dict[str, Memory]], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given her memories and the profile built from them
    rows = _seed(product)
    _profile_is_true(product)
    monkeypatch.setattr(fading, "ACTIVE_CAP", 5)  # the cap, reachable in a test

    # When a write changes them, and the worker takes its next pass
    write(product, rows)
    _worker_catches_up(product)

    # Then the profile is what those memories make, and none contradicts another
    _profile_is_true(product)


# ---- the two reproductions ------------------------------------------------------------


def test_memories_imported_and_typed_reach_the_profile_without_a_chat(product: Product) -> None:
    # Given five memories imported and two typed, and no chat at all
    service = PortabilityService(
        product.stores, product.clock, product.memories, profiles=product.profiles
    )
    learned = product.clock.now() - timedelta(days=30)
    imported = [
        builders.memory(ALICE, text, learned, category=category)
        for text, category in (
            ("Lives in Pune.", "location"),
            ("Works as a nurse.", "work"),
            ("Has a cat named Miso.", "pets"),
            ("Speaks Marathi.", "language"),
            ("Plays the cello.", "hobbies"),
        )
    ]
    assert service.import_batch(ALICE, imported).imported == 5
    product.memories.create(ALICE, NewMemory(text="Is vegetarian.", category="diet"))
    product.memories.create(ALICE, NewMemory(text="Loves hiking.", category="hobbies"))

    # When the worker takes its next pass
    _worker_catches_up(product)

    # Then the next context's profile holds all seven
    built = product.context.build(ContextRequest(user_id=ALICE, message="Hi"))
    assert len(built.blocks.profile.splitlines()) == 7
    assert "Lives in Pune." in built.blocks.profile and "Loves hiking." in built.blocks.profile


def test_a_saved_move_closes_the_old_city_and_job(product: Product) -> None:
    # Given an old city and job, imported
    service = PortabilityService(
        product.stores, product.clock, product.memories, profiles=product.profiles
    )
    learned = product.clock.now() - timedelta(days=200)
    assert (
        service.import_batch(
            ALICE,
            [
                builders.memory(ALICE, "Lives in Pune.", learned, category="location"),
                builders.memory(ALICE, "Works as a nurse.", learned, category="work"),
            ],
        ).imported
        == 2
    )
    before_the_move = product.clock.now()

    # When she asks the chat to remember her move, and the background read follows
    product.clock.advance(timedelta(days=1))
    product.say("Please remember that I live in Lisbon now and I work as a carpenter")
    product.go_quiet()
    _worker_catches_up(product)

    # Then Pune and nursing are history, closed under what replaced them, never deleted
    active = sorted(m.text for m in product.stores.memories.iter_memories(ALICE))
    assert active == ["Lives in Lisbon now.", "Works as a carpenter."]
    history = {
        m.text: m
        for m in product.stores.memories.iter_memories(ALICE, MemoryQuery(status=Status.CLOSED))
    }
    assert set(history) == {"Lives in Pune.", "Works as a nurse."}
    assert all(m.closed_by and m.valid_to for m in history.values())
    # the profile holds Lisbon and the new job, not Pune
    profile = product.context.build(ContextRequest(user_id=ALICE, message="Hi")).blocks.profile
    assert "Lives in Lisbon now." in profile and "Works as a carpenter." in profile
    assert "Pune" not in profile and "nurse" not in profile
    # and Pune is answerable only as what was believed then
    then = product.memories.list_memories(ALICE, as_of=before_the_move).items
    assert "Lives in Pune." in [m.text for m in then]


def test_a_profile_built_by_older_rules_is_not_used_until_it_is_rebuilt(
    product: Product,
) -> None:
    # Given a profile stored before sensitive memories left it, holding a diagnosis
    diabetes = product.memories.create(ALICE, NewMemory(text="Has diabetes.", category="health"))
    _worker_catches_up(product)
    product.stores.user_state.put_profile(
        Profile(
            user_id=ALICE,
            text="- Has diabetes.",
            token_count=4,
            built_from=(diabetes.memory.memory_id,),
            rebuilt_at=datetime(2026, 11, 1, tzinfo=UTC),
            built_by=1,
        )
    )

    # When a turn reads it, it is withheld, and asks for its rebuild
    built = product.context.build(ContextRequest(user_id=ALICE, message="Capital of France?"))
    assert built.blocks.profile == ""

    # Then the worker's next pass rebuilds it by today's rules
    _worker_catches_up(product)
    rebuilt = product.stores.user_state.get_profile(ALICE)
    assert rebuilt is not None and not rebuilt.stale(product.clock.now())
    assert "diabetes" not in rebuilt.text
