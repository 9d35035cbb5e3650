"""Masking a conversation's stored words (the data migration's rule): each exchange masked as
a write masks it today, the summary with every value said, nothing else changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chatmemory.domain import rules
from chatmemory.domain.conversation import Message, Role, masked_transcript
from chatmemory.domain.secrets import WITHHELD

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
CID = "conv_" + "a" * 32


def _message(seq: int, role: Role, content: str, at: datetime = AT) -> Message:
    return Message(
        user_id="alice",
        conversation_id=CID,
        seq=seq,
        role=role,
        content=content,
        tokens=1,
        created_at=at,
    )


def test_a_bare_repeat_is_masked_within_its_exchange_only() -> None:
    # Given a password said and repeated bare in one exchange, and repeated bare later
    later = AT + timedelta(minutes=1)
    messages = [
        _message(1, Role.USER, "My wifi password is sunflower123"),
        _message(2, Role.ASSISTANT, "Got it: sunflower123"),
        _message(3, Role.USER, "Was it sunflower123?", later),
        _message(4, Role.ASSISTANT, "I live in Pune", later),
    ]

    masked = masked_transcript(messages)

    # Then the exchange that said it is masked; a later bare repeat is kept as a write
    # would keep it today (it has no shape and no word that marks it)
    assert masked.messages == {
        1: f"My wifi password is {WITHHELD}",
        2: f"Got it: {WITHHELD}",
    }
    assert masked.summary is None


def test_the_summary_is_masked_with_every_value_said() -> None:
    messages = [
        _message(1, Role.USER, "My wifi password is sunflower123"),
        _message(2, Role.ASSISTANT, "Noted."),
    ]

    masked = masked_transcript(messages, "They use sunflower123 for wifi and live in Pune.")

    assert masked.summary == f"They use {WITHHELD} for wifi and live in Pune."


def test_masking_twice_changes_nothing_more() -> None:
    messages = [_message(1, Role.USER, "My card is 4111 1111 1111 1111, I live in Pune")]
    once = masked_transcript(messages)
    again = masked_transcript([_message(1, Role.USER, once.messages[1])], "Lives in Pune.")

    assert again.messages == {} and again.summary is None


def test_a_masked_text_never_grows_past_its_limit() -> None:
    # Given a message at its limit whose short secret the mark is longer than
    content = "x" * (rules.MESSAGE_MAX - 26) + " my PIN is 4821"
    masked = masked_transcript([_message(1, Role.USER, content)])

    assert len(masked.messages[1]) <= rules.MESSAGE_MAX
    assert "4821" not in masked.messages[1]
