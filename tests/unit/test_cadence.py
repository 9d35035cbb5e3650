"""The write cadence's rules: how long a conversation waits before it is read, and which
messages ask for the whole conversation to be remembered (domain/cadence.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.domain.cadence import (
    COLD_DELAY,
    COLD_MEMORIES,
    WARM_DELAY,
    asks_to_remember_conversation,
    idle_delay,
    is_cold,
)


def test_a_profile_is_cold_below_twenty_memories_and_warm_from_twenty() -> None:
    assert COLD_MEMORIES == 20
    assert is_cold(0) and is_cold(19)
    assert not is_cold(20) and not is_cold(500)


def test_a_cold_profile_is_read_after_two_minutes_a_warm_one_after_ten() -> None:
    assert idle_delay(0) == COLD_DELAY == timedelta(seconds=120)
    assert idle_delay(19) == COLD_DELAY
    assert idle_delay(20) == WARM_DELAY == timedelta(seconds=600)


def test_configured_delays_replace_the_defaults() -> None:
    cold, warm = timedelta(seconds=30), timedelta(seconds=300)

    assert idle_delay(3, cold=cold, warm=warm) == cold
    assert idle_delay(30, cold=cold, warm=warm) == warm


def test_the_cold_delay_never_exceeds_a_warm_delay_pinned_lower() -> None:
    # Given a deployment (or a test) that pins the warm delay to one second
    pinned = timedelta(seconds=1)

    # Then a new user waits no longer than a known one
    assert idle_delay(0, warm=pinned) == pinned


@pytest.mark.parametrize(
    "message",
    [
        "Remember this conversation.",
        "please remember all of this",
        "Save this chat!",
        "don't forget what we talked about",
        "Can you remember this conversation for next time?",
        "Thanks, that was really helpful — please remember everything we discussed.",
        "I want you to remember this whole conversation.",
        "Keep all of this in mind for next time.",
        "Memorise this chat.",
        "ok, remember all that",
        "Hey, could you please save our conversation?",
        "Please don't forget any of this, it's important.",
        "remember everything we said today",
    ],
)
def test_a_request_to_remember_the_conversation_is_recognised(message: str) -> None:
    assert asks_to_remember_conversation(message)


@pytest.mark.parametrize(
    "message",
    [
        # a question about the past
        "Do you remember this conversation?",
        "Do you remember what we talked about last week?",
        "Remember our chat about Paris?",
        "Remember when we talked about Paris?",
        "Can't you remember what we discussed?",
        "Did you save this chat?",
        # a chore, or one fact (the chat's save_memory takes those)
        "Remember to buy milk",
        "remember that I'm vegetarian",
        "remember this: I'm allergic to nuts",
        # a refusal, or the opposite
        "Please don't remember this conversation.",
        "Don't save this chat.",
        "No need to remember all of this.",
        "Forget this conversation.",
        # the user's own memory
        "I don't remember this conversation at all.",
        "I'll never forget this conversation.",
        "I wish I could remember everything.",
        # words that only look like it
        "Keep this chat short please.",
        'My boss said "remember this conversation" in a threatening way.',
    ],
)
def test_what_is_not_such_a_request_is_not_taken_for_one(message: str) -> None:
    assert not asks_to_remember_conversation(message)


def test_pasted_material_never_asks_for_anything() -> None:
    # Given a long document the user pasted, which happens to hold the words
    pasted = "Meeting notes. " * 90 + "Remember this conversation."

    assert not asks_to_remember_conversation(pasted)
