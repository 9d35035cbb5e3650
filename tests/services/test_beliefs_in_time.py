"""Beliefs with time (seed 003) through the services, on both stores: shelf life in the
prompt, archiving and revival, what was believed as of a past day, one record per belief,
and the cap."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain import fading
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.events import Actor
from chatmemory.domain.extraction import Candidate, ExtractionInput, ExtractionResult
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.routing import Action, RouteDecision
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.context import ContextRequest
from chatmemory.services.memories import NewMemory
from tests.support.product import ALICE, Product

WORRY = "Feels anxious about the house move."
ASKING = "I feel anxious about the house move, any advice?"


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def remember(product: Product, text: str, category: str = "general") -> Memory:
    return product.memories.create(ALICE, NewMemory(text=text, category=category)).memory


def recalled(product: Product, message: str, as_of: datetime | None = None) -> list[str]:
    built = product.context.build(ContextRequest(user_id=ALICE, message=message, as_of=as_of))
    return [line.text for line in built.blocks.memories]


def listed(product: Product, **query: object) -> list[str]:
    page = product.memories.list_memories(ALICE, **query)  # type: ignore[arg-type]
    return sorted(m.text for m in page.items)


# ---- shelf life and fading ------------------------------------------------------------------


def test_every_recalled_line_says_how_long_it_is_still_good_for(product: Product) -> None:
    # Given a mood stated two days ago (it lasts days, not years)
    remember(product, WORRY, category="mood")
    product.clock.advance(timedelta(days=2, hours=12))
    # When a message needs it
    built = product.context.build(ContextRequest(user_id=ALICE, message=ASKING))
    # Then its line carries its shelf life, overdue by now, for the reply to check
    (line,) = built.blocks.memories
    assert line.due == "overdue by a day"
    assert f"{WORRY} (last mentioned" in built.rendered.text()
    assert "· overdue by a day)" in built.rendered.text()


def test_a_faded_belief_is_archived_listed_never_recalled_and_revived_by_evidence(
    product: Product,
) -> None:
    # Given a mood in use today
    remember(product, WORRY, category="mood")
    assert recalled(product, ASKING) == [WORRY]
    # When a week passes with no evidence (R = exp(-7/3) < 0.3)
    product.clock.advance(timedelta(days=7))
    # Then it is archived: out of every context, off the active list, on the archived one
    assert recalled(product, ASKING) == []
    assert WORRY not in listed(product)
    assert listed(product, archived=True) == [WORRY]
    # And the same belief stated again is new evidence: it is back, the same record
    again = product.memories.create(ALICE, NewMemory(text=WORRY, category="mood"))
    assert again.created is False
    assert recalled(product, ASKING) == [WORRY]
    assert listed(product, archived=True) == []
    assert fading.stability(again.memory) > fading.default_stability(Kind.FACT, "mood")


def test_a_use_in_a_reply_keeps_a_belief_from_fading(product: Product) -> None:
    # Given a mood recalled into a reply every other day
    remember(product, WORRY, category="mood")
    for _ in range(4):
        product.clock.advance(timedelta(days=2))
        product.say(ASKING)
    # Then eight days on it is still in use (each use lengthened its stability)
    (row,) = product.stores.memories.iter_memories(ALICE)
    assert fading.in_use(row, product.clock.now())
    assert row.stability_days is not None and row.stability_days > 6


# ---- as_of: what did we believe then ---------------------------------------------------------


def test_as_of_answers_across_a_supersede_a_close_and_a_delete(product: Product) -> None:
    clock = product.clock
    start = clock.now()
    pune = remember(product, "Lives in Pune.", category="location")
    dog = remember(product, "Has a dog called Rex.", category="pets")
    secret = remember(product, "Is planning a surprise party.", category="plans")
    september = clock.advance(timedelta(days=10))
    # A correction, a close and a delete after "September"
    clock.advance(timedelta(days=1))
    bengaluru = product.memories.correct(ALICE, pune.memory_id, text="Lives in Bengaluru.")
    product.memories.close(dog, actor=Actor.USER)
    product.memories.delete(ALICE, secret.memory_id)
    now = clock.advance(timedelta(days=1))

    # Then as of "September" the old beliefs are there as they stood, the deleted one is not
    then = product.memories.list_memories(ALICE, as_of=september).items
    assert sorted(m.text for m in then) == ["Has a dog called Rex.", "Lives in Pune."]
    assert all(m.status is Status.ACTIVE and m.valid_to is None for m in then)
    # And today only the correction is believed
    assert [m.text for m in product.memories.list_memories(ALICE, as_of=now).items] == [
        bengaluru.text
    ]
    # And before anything was said, nothing was believed
    assert product.memories.list_memories(ALICE, as_of=start - timedelta(seconds=1)).items == []
    # And the context as of then recalls the old home, today's the new one
    assert recalled(product, "Which city do I live in, Pune?", as_of=september) == [
        "Lives in Pune."
    ]
    assert "Lives in Pune." not in recalled(product, "Which city do I live in, Pune?")


def test_as_of_in_the_future_is_refused(product: Product) -> None:
    with pytest.raises(InvalidField, match="as_of"):
        product.memories.list_memories(ALICE, as_of=product.clock.now() + timedelta(days=1))


_EXAMPLE_USERS = itertools.count()
_TEXTS = ["Lives in Pune.", "Has a dog.", "Likes jazz.", "Is vegan.", "Plays chess."]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "correct", "close", "delete"]), st.integers(0, 4)),
        min_size=1,
        max_size=8,
    )
)
def test_as_of_now_is_the_active_set_and_before_creation_excludes(
    stores: Stores, clock: ManualClock, steps: list[tuple[str, int]]
) -> None:
    product = Product(stores, clock)
    # One store serves every example (hypothesis may replay one): a fresh user each time.
    user = f"prop{next(_EXAMPLE_USERS)}"
    for op, n in steps:
        clock.advance(timedelta(hours=1))
        active = list(stores.memories.iter_memories(user))
        if op == "add" or not active:
            product.memories.create(user, NewMemory(text=_TEXTS[n]))
            continue
        target = active[n % len(active)]
        if op == "correct":
            product.memories.correct(user, target.memory_id, text=f"Now {_TEXTS[n].lower()}")
        elif op == "close":
            product.memories.close(target, actor=Actor.USER)
        else:
            product.memories.delete(user, target.memory_id)
    now = clock.advance(timedelta(minutes=1))
    every = list(stores.memories.iter_memories(user, MemoryQuery(status=None)))
    as_of_now = product.memories.list_memories(user, as_of=now, limit=100).items
    active_now = list(stores.memories.iter_memories(user))
    assert {m.memory_id for m in as_of_now} == {m.memory_id for m in active_now}
    for memory in every:
        before = memory.created_at - timedelta(microseconds=1)
        ids = {m.memory_id for m in product.memories.list_memories(user, as_of=before).items}
        assert memory.memory_id not in ids


# ---- one record per belief ----------------------------------------------------------------


def test_the_same_belief_written_twice_is_one_record(product: Product) -> None:
    first = product.memories.create(ALICE, NewMemory(text="Is vegan.", category="diet"))
    again = product.memories.create(ALICE, NewMemory(text="is vegan", category="diet"))
    assert first.created and not again.created
    assert again.memory.memory_id == first.memory.memory_id
    assert len(list(product.stores.memories.iter_memories(ALICE))) == 1


def test_correcting_into_words_an_older_version_of_a_deleted_memory_had_works(
    product: Product,
) -> None:
    # Given "Lives in Pune." corrected to "Lives in Mumbai.", then that corrected again
    # and deleted (which hides every version of it), and "Lives in Pune." said again
    pune = remember(product, "Lives in Pune.", category="location")
    mumbai = product.memories.correct(ALICE, pune.memory_id, text="Lives in Mumbai.")
    moved = product.memories.correct(ALICE, mumbai.memory_id, text="Lives in Delhi.")
    product.memories.delete(ALICE, moved.memory_id)
    again = remember(product, "Lives in Pune.", category="location")

    # When it is corrected into the words the deleted memory's older version had
    corrected = product.memories.correct(ALICE, again.memory_id, text="Lives in Mumbai.")

    # Then the correction lands on an id of its own, and is the one belief
    assert corrected.memory_id != mumbai.memory_id
    assert listed(product) == ["Lives in Mumbai."]


def test_a_correction_lands_on_its_beliefs_identity(product: Product) -> None:
    # Given a home corrected to a new city
    pune = remember(product, "Lives in Pune.", category="location")
    corrected = product.memories.correct(ALICE, pune.memory_id, text="Lives in Bengaluru.")
    # When the new city is stated again
    again = product.memories.create(
        ALICE, NewMemory(text="lives in bengaluru", category="location")
    )
    # Then it is the correction's record, not a second one
    assert again.created is False and again.memory.memory_id == corrected.memory_id
    assert listed(product) == ["Lives in Bengaluru."]


def test_correcting_into_a_belief_already_held_keeps_one_record(product: Product) -> None:
    # Given two memories, one of them saying what the other is corrected to (two things
    # one may do at once: a single-valued fact, a diet, would have closed the first)
    cello = remember(product, "Plays the cello.", category="hobbies")
    piano = remember(product, "Plays the piano.", category="hobbies")
    # When the second is corrected into the first's words
    kept = product.memories.correct(ALICE, piano.memory_id, text="Plays the cello.")
    # Then the first stays the one record; the corrected one is history, closed by it
    assert kept.memory_id == cello.memory_id
    assert listed(product) == ["Plays the cello."]
    history = product.stores.memories.get_memory(ALICE, piano.memory_id)
    assert history is not None
    assert history.status is Status.CLOSED and history.closed_by == cello.memory_id


class RepeatingExtractor:
    """The offline model, except that every slice yields the same candidate, and routing
    always says ADD — as a model that forgot it had seen it would."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def extract(self, request: ExtractionInput) -> ExtractionResult:
        (line,) = [line for line in request.transcript if line.role == "user"][-1:]
        return ExtractionResult(
            (
                Candidate(
                    text="Is learning Portuguese.",
                    category="language",
                    kind=Kind.FACT,
                    importance=6,
                    stated_by=StatedBy.USER,
                    evidence=(line.message_id,),
                ),
            )
        )


def test_the_pipeline_writing_a_belief_twice_lands_on_one_record(
    stores: Stores, clock: ManualClock
) -> None:
    inner = OfflineModel()
    model = RepeatingExtractor(inner)
    model.route = lambda cases: [RouteDecision(Action.ADD) for _ in cases]  # type: ignore[attr-defined]
    product = Product(stores, clock, model=model)  # type: ignore[arg-type]
    # Given the same belief learned in two conversations, each run deciding ADD
    product.say("I started learning Portuguese this month.")
    product.go_quiet()
    product.say("Still learning Portuguese, it is fun.")
    product.go_quiet()
    # Then there is one record, reinforced by the second telling
    (row,) = stores.memories.iter_memories(ALICE)
    assert row.text == "Is learning Portuguese."
    assert len(row.evidence) == 2
    assert row.reinforced_at is not None and row.reinforced_at > row.created_at


# ---- the pollution guard -------------------------------------------------------------------


def test_past_the_cap_the_weakest_is_archived_never_dropped(
    product: Product, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fading, "ACTIVE_CAP", 3)
    remember(product, "Feels tired today.", category="mood")
    product.clock.advance(timedelta(days=1))
    for text in ("Has two sisters.", "Lives in Pune.", "Is vegan."):
        remember(product, text, category="family")
    # The fourth belief pushed the weakest (a day-old mood) out of use, not out of the store
    assert listed(product, archived=True) == ["Feels tired today."]
    assert len(listed(product)) == 3
    assert len(list(product.stores.memories.iter_memories(ALICE))) == 4
