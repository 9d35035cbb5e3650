"""Two memories that differ in meaning stay two memories; a repeat says it landed on one.

Regression: "Blood type is A+." then "Blood type is A-." used to answer 201 with the first
memory (its identity dropped every symbol), and so did C++ / C# and any emoji-only text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.config import Container, Settings, use_container
from tests.support.functions import invoke, load_handler, sample_event


@pytest.fixture
def container(tmp_path: Path, clock: ManualClock) -> Iterator[Container]:
    built = Container(Settings(state_dir=tmp_path, embedder="hashing"), clock)
    use_container(built)
    yield built
    use_container(None)


@pytest.fixture(scope="module")
def handler() -> Any:
    return load_handler("memories")


def remember(handler: Any, text: str) -> tuple[int, dict[str, Any]]:
    reply = invoke(handler, sample_event("memories", "create_memory"), body={"text": text})
    return reply.status, reply.body


def listed_texts(handler: Any) -> list[str]:
    reply = invoke(handler, sample_event("memories", "list_memories"), query={"limit": "100"})
    return sorted(memory["text"] for memory in reply.body["memories"])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Blood type is A+.", "Blood type is A-."),
        ("Codes mostly in C++.", "Codes mostly in C#."),
        ("🍕", "🍣"),
        ("Favourite emoji: 👩\u200d🔬", "Favourite emoji: 👩🔬"),
        ("Is 5'11\".", "Is 5'1\"."),
    ],
)
def test_memories_that_differ_in_meaning_are_both_kept(
    handler: Any, container: Container, first: str, second: str
) -> None:
    status_first, one = remember(handler, first)
    status_second, other = remember(handler, second)

    assert (status_first, status_second) == (201, 201)
    assert one["memory_id"] != other["memory_id"]
    assert (one["text"], other["text"]) == (first, second)
    assert listed_texts(handler) == sorted([first, second])


def test_the_same_memory_stated_again_answers_200_with_the_one_kept(
    handler: Any, container: Container
) -> None:
    status_first, kept = remember(handler, "Is vegetarian.")

    status_again, again = remember(handler, "  is VEGETARIAN ")

    assert (status_first, status_again) == (201, 200)
    assert again["memory_id"] == kept["memory_id"] and again["text"] == "Is vegetarian."
    assert listed_texts(handler) == ["Is vegetarian."]
