"""Rhythm end to end (seed 003), on both stores, driven by a hand-moved clock: chat turns
are sampled in the user's time zone, a pattern becomes a belief on the third distinct day
and not before, and a belief not re-confirmed within 30 days is dropped."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.events import Actor, Op
from chatmemory.domain.memory import Memory, StatedBy
from chatmemory.domain.rhythm import Rhythm
from chatmemory.ports.rhythm import RhythmStore
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatResult, ChatService
from chatmemory.services.rhythm import RhythmKeeper
from tests.support.product import ALICE, IDLE, Product

MONDAY = date(2026, 11, 30)
WEEKDAY_EVENINGS = "Usually chats late on weekday evenings (around 22:00)."


class Chatting(Product):
    """The product with the rhythm keeper wired into the chat, as `config.py` wires it."""

    def __init__(self, stores: Stores, clock: ManualClock) -> None:
        super().__init__(stores, clock)
        self.keeper = RhythmKeeper(stores, self.memories)
        self.chat = ChatService(
            stores,
            clock,
            context=self.context,
            model=OfflineModel(),
            memories=self.memories,
            jobs=self.jobs,
            idle_after=IDLE,
            rhythm=self.keeper,
        )

    def chat_on(self, day: int, hour: int, minute: int = 10, **request: object) -> ChatResult:
        """A turn on the `day`-th day after Monday 30 November at hour:minute UTC."""
        moment = datetime(MONDAY.year, MONDAY.month, MONDAY.day, hour, minute, tzinfo=UTC)
        self.clock.set(moment + timedelta(days=day))
        return self.say("what should I cook tonight?", **request)

    def rhythms(self) -> list[Memory]:
        """The rhythm beliefs the user sees listed."""
        return [m for m in self.memories.list_memories(ALICE).items if m.category == "rhythm"]

    def state(self) -> Rhythm | None:
        return self.stores.rhythm.get_rhythm(ALICE)


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Chatting:
    return Chatting(stores, clock)


def test_a_rhythm_becomes_a_belief_on_the_third_distinct_day_and_not_before(
    product: Chatting,
) -> None:
    # Given chats at about 22:00 on Monday and Tuesday (twice on Tuesday)
    product.chat_on(0, 22, 5)
    product.chat_on(1, 22, 20)
    product.chat_on(1, 22, 45)
    # Then nothing is believed yet
    assert product.rhythms() == []
    # When she chats on Wednesday at 22:40
    product.chat_on(2, 22, 40)
    # Then one rhythm belief is listed, inferred, held by the default persona
    [belief] = product.rhythms()
    assert belief.text == WEEKDAY_EVENINGS
    assert belief.key == "rhythm_weekdays_22" and belief.persona == "assistant"
    assert belief.stated_by is StatedBy.INFERRED
    wednesday = datetime(2026, 12, 2, 22, 40, tzinfo=UTC)
    assert belief.valid_until == wednesday + timedelta(days=30)
    [added] = product.memories.history(ALICE, belief.memory_id)
    assert (added.op, added.actor) == (Op.ADD, Actor.SYSTEM)


def test_a_fourth_day_does_not_make_a_second_belief(product: Chatting) -> None:
    # Given a rhythm believed on the third evening
    for day in range(3):
        product.chat_on(day, 22)
    # When she chats on a fourth evening
    product.chat_on(3, 22, 30)
    # Then there is still one
    assert [m.text for m in product.rhythms()] == [WEEKDAY_EVENINGS]


def test_a_rhythm_not_confirmed_for_thirty_days_is_dropped(product: Chatting) -> None:
    # Given a rhythm believed on Wednesday evening
    for day in range(3):
        product.chat_on(day, 22)
    assert len(product.rhythms()) == 1
    # When 31 days pass without another late evening
    product.chat_on(2 + 31, 9)
    # Then it is no longer listed (its shelf life passed) and the state forgot it
    assert product.rhythms() == []
    state = product.state()
    assert state is not None and state.patterns == ()


def test_a_rhythm_confirmed_again_within_thirty_days_is_kept(product: Chatting) -> None:
    # Given a rhythm believed on Wednesday evening
    for day in range(3):
        product.chat_on(day, 22)
    [first] = product.rhythms()
    # When three more weekday evenings come three weeks later
    for day in (21, 22, 23):
        product.chat_on(day, 22, 15)
    # Then, 31 days after it was first believed, the same belief is still listed, kept on
    product.chat_on(2 + 31, 9)
    [kept] = product.rhythms()
    assert kept.memory_id == first.memory_id and kept.text == WEEKDAY_EVENINGS
    wednesday = datetime(2026, 12, 23, 22, 15, tzinfo=UTC)
    assert kept.valid_until == wednesday + timedelta(days=30)


def test_temporary_chats_memory_off_and_muted_personas_are_not_sampled(
    product: Chatting,
) -> None:
    # Given three evenings of temporary chats
    for day in range(3):
        product.chat_on(day, 22, temporary=True)
    # And three more with a muted persona, then three with memory off
    product.settings.update(ALICE, muted_personas=frozenset({"warren"}))
    for day in range(3, 6):
        product.chat_on(day, 22, persona="warren")
    product.settings.update(ALICE, enabled=False)
    for day in range(6, 9):
        product.chat_on(day, 22)
    # Then nothing was sampled and nothing is believed
    assert product.state() is None
    assert product.rhythms() == []


def test_a_deleted_rhythm_is_never_believed_again(product: Chatting) -> None:
    # Given a rhythm believed, which she deletes
    for day in range(3):
        product.chat_on(day, 22)
    [belief] = product.rhythms()
    product.memories.delete(ALICE, belief.memory_id)
    # When the same evenings come again, over a week and its weekend
    for day in range(7, 14):
        product.chat_on(day, 22)
    # Then it is not believed again, in any form: the pattern is declined
    assert product.rhythms() == []
    state = product.state()
    assert state is not None
    assert [(p.key, p.declined) for p in state.patterns] == [("weekdays_22", True)]


def test_forget_everything_clears_the_rhythm(product: Chatting) -> None:
    # Given two evenings sampled
    product.chat_on(0, 22)
    product.chat_on(1, 22)
    assert product.state() is not None
    # When she forgets everything
    product.memories.forget_everything(ALICE)
    # Then the counters are gone, and a new evening starts afresh: no belief on "day three"
    assert product.state() is None
    product.chat_on(2, 22)
    state = product.state()
    assert state is not None and sum(map(sum, state.counters)) == 1
    assert product.rhythms() == []


def test_the_time_zone_setting_decides_the_hour_observed(product: Chatting) -> None:
    # Given she lives in Kolkata (UTC+5:30)
    product.settings.update(ALICE, timezone="Asia/Kolkata")
    # When she chats at 16:45 UTC on three weekdays — 22:15 for her
    for day in range(3):
        product.chat_on(day, 16, 45)
    # Then the rhythm is her late evening, not the afternoon in UTC
    state = product.state()
    assert state is not None and state.counters[0][22] == 1 and state.counters[0][16] == 0
    assert [m.text for m in product.rhythms()] == [WEEKDAY_EVENINGS]


def test_the_holder_muted_keeps_the_samples_for_later(product: Chatting) -> None:
    # Given the default persona muted while she chats with Warren on three evenings
    product.settings.update(ALICE, muted_personas=frozenset({"assistant"}))
    for day in range(3):
        product.chat_on(day, 22, persona="warren")
    # Then they are sampled, but nothing is believed under the muted persona
    state = product.state()
    assert state is not None and len(state.observations) == 3
    assert product.rhythms() == []
    # When it is unmuted, the next sample promotes what was waiting
    product.settings.update(ALICE, muted_personas=frozenset())
    product.chat_on(3, 22, persona="warren")
    assert [m.text for m in product.rhythms()] == [WEEKDAY_EVENINGS]


class _Broken(RhythmStore):
    def get_rhythm(self, user_id: str) -> Rhythm | None:
        raise OSError("the disk is gone")

    def put_rhythm(self, user_id: str, rhythm: Rhythm) -> Rhythm:
        raise OSError("the disk is gone")

    def delete_rhythm(self, user_id: str) -> None:
        raise OSError("the disk is gone")


def test_a_failing_rhythm_store_never_fails_the_turn(
    stores: Stores, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the product with a rhythm store that fails
    product = Chatting(dataclasses.replace(stores, rhythm=_Broken()), clock)
    # When she chats
    result = product.chat_on(0, 22)
    # Then the turn is stored and answered, and the log names the failure's kind only
    assert result.reply and result.message_id
    assert stores.conversations.get_conversation(ALICE, result.conversation_id) is not None
    assert "rhythm not sampled" in caplog.messages
    assert "the disk is gone" not in caplog.text
