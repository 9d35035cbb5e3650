"""Per-user quotas on the turns that call the model, with the offline model: the 31st turn
in a minute is refused before anything is read or written, the next minute lets the user
go on, and a quota store that fails never fails a turn. The long test runs on SQLite (the
store contract holds both backends to the same counting); the others on both."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import RateLimited
from chatmemory.domain.quotas import MODEL_TURNS, Quota, QuotaDecision, Stored
from chatmemory.domain.rooms import NewRoomMessage, RoomKind
from chatmemory.ports.quotas import QuotaStore
from chatmemory.ports.stores import Stores
from chatmemory.services.chat import ChatRequest, ChatResult
from chatmemory.services.quotas import QuotaGuard
from chatmemory.services.room_service import NewRoom
from tests.support.product import ALICE, Product
from tests.support.stores import open_stores

DAN, WARREN = "dan", "warren"


def product_with(stores: Stores, clock: ManualClock, turns_per_minute: int) -> Product:
    guard = QuotaGuard(stores.quotas, clock, {MODEL_TURNS: turns_per_minute})
    return Product(stores, clock, quotas=guard)


def turn(product: Product, message: str, conversation_id: str | None = None) -> ChatResult:
    """One chat turn at the clock's time (the clock does not move)."""
    *_, result = product.chat.turn(
        ChatRequest(user_id=ALICE, message=message, conversation_id=conversation_id)
    )
    assert isinstance(result, ChatResult)
    return result


def messages_kept(product: Product, conversation_id: str) -> int:
    return len(product.stores.conversations.list_messages(ALICE, conversation_id))


@pytest.fixture
def on_sqlite(clock: ManualClock, tmp_path: Path) -> Iterator[Stores]:
    with open_stores("sqlite", clock, tmp_path) as opened:
        yield opened


def test_the_31st_turn_in_a_minute_is_refused_and_the_next_minute_goes_on(
    on_sqlite: Stores, clock: ManualClock
) -> None:
    # Given thirty turns a minute, and Alice's thirty turns 15 seconds into a minute
    product = product_with(on_sqlite, clock, 30)
    clock.advance(timedelta(seconds=15))
    conversation = turn(product, "hello there").conversation_id
    for n in range(29):
        turn(product, f"and another thing, number {n}", conversation)
    # When she sends a 31st
    with pytest.raises(RateLimited) as refused:
        turn(product, "one more please", conversation)
    # Then it is refused with the seconds left in the minute, and nothing of it is kept
    assert refused.value.retry_after == 45
    assert messages_kept(product, conversation) == 60
    # And once the next minute starts, her turn goes through
    clock.advance(timedelta(seconds=45))
    assert turn(product, "one more please", conversation).message_id
    assert messages_kept(product, conversation) == 62


def test_a_refused_first_turn_opens_no_conversation(stores: Stores, clock: ManualClock) -> None:
    # Given a user with one turn a minute, already taken
    product = product_with(stores, clock, 1)
    turn(product, "hello there")
    # When a turn that would start a new conversation is refused
    with pytest.raises(RateLimited):
        turn(product, "a fresh start")
    # Then she still has only the one conversation
    assert len(product.stores.conversations.list_conversations(ALICE)) == 1


def test_asking_to_remember_the_conversation_counts_as_five_turns(
    stores: Stores, clock: ManualClock
) -> None:
    # Given six turns a minute and one plain turn taken
    product = product_with(stores, clock, 6)
    conversation = turn(product, "we planned the trip to Lisbon").conversation_id
    # When she asks to remember the whole conversation (a deep read starts at once)
    turn(product, "please remember this conversation", conversation)
    # Then her minute is used up
    with pytest.raises(RateLimited):
        turn(product, "thanks", conversation)


def test_users_have_their_own_quota(stores: Stores, clock: ManualClock) -> None:
    product = product_with(stores, clock, 1)
    turn(product, "hello there")
    *_, result = product.chat.turn(ChatRequest(user_id="bob", message="hi, I'm Bob"))
    assert isinstance(result, ChatResult) and result.message_id


class _BrokenQuotas(QuotaStore):
    def take(self, user_id: str, quota: Quota, now: datetime, cost: int = 1) -> QuotaDecision:
        raise OSError("the table is gone")

    def stored(self, user_id: str) -> Stored:
        raise OSError("the table is gone")


class _Asked(QuotaStore):
    def __init__(self) -> None:
        self.takes = 0

    def take(self, user_id: str, quota: Quota, now: datetime, cost: int = 1) -> QuotaDecision:
        self.takes += 1
        return QuotaDecision(allowed=True)

    def stored(self, user_id: str) -> Stored:
        return Stored(memory_rows=0, messages=0)


def test_a_quota_of_zero_is_never_counted(clock: ManualClock) -> None:
    # Given the quota switched off
    store = _Asked()
    guard = QuotaGuard(store, clock, {MODEL_TURNS: 0})
    # When a user takes a hundred turns
    for _ in range(100):
        guard.charge(ALICE, MODEL_TURNS)
    # Then none was refused, and the store was never asked
    assert store.takes == 0


def test_a_failing_quota_store_never_fails_the_turn(
    stores: Stores, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a quota whose store fails
    guard = QuotaGuard(_BrokenQuotas(), clock, {MODEL_TURNS: 1})
    product = Product(stores, clock, quotas=guard)
    # When she chats more than the quota would allow
    turn(product, "hello there")
    result = turn(product, "still there?")
    # Then the turns are answered and stored, and the log names only the failure's kind
    assert result.message_id
    assert "quota not checked" in caplog.messages
    assert "the table is gone" not in caplog.text


def test_a_users_room_turns_share_their_quota_and_the_apps_are_not_charged(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Dan with two turns a minute and his own private chat with Warren
    product = product_with(stores, clock, 2)
    room = product.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=[WARREN], members=[DAN]))
    product.rooms.post(room.room_id, [NewRoomMessage(f"u:{DAN}", "any news?")])
    # When he asks for two turns, and the app drives a third
    product.rooms.turn(room.room_id, WARREN, charged_to=DAN)
    product.rooms.turn(room.room_id, WARREN, charged_to=DAN)
    product.rooms.turn(room.room_id, WARREN)
    lines = len(product.stores.rooms.list_room_messages(room.room_id))
    # Then his third is refused and nothing of it is kept
    with pytest.raises(RateLimited):
        product.rooms.turn(room.room_id, WARREN, charged_to=DAN)
    assert len(product.stores.rooms.list_room_messages(room.room_id)) == lines
