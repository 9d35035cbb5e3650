"""The gate's reading of a message that names the asker's own life."""

from __future__ import annotations

import pytest

from chatmemory.domain.personal_context import (
    names_own_life,
    personal_context_score,
    read_message,
)
from chatmemory.services.relevance import params_for


@pytest.mark.parametrize(
    "message",
    [
        "which metro station is closest to my place?",
        "what shoes should I buy for my weekly game?",
        "Our anniversary is next month, ideas?",
        "my kids' school wants a costume by Friday",
        "The leaves on my tomato plants are curling",
        "Is it OK to skip my meds for a day?",
        "how long is my commute if I leave at 8",
    ],
)
def test_a_message_about_the_askers_own_place_people_body_or_routine_names_their_life(
    message: str,
) -> None:
    assert names_own_life(message)


@pytest.mark.parametrize(
    "message",
    [
        "How do I undo my last git commit?",
        "fix my code: for i in range(10) print(i)",
        "Can you proofread my sentence?",
        "What is the capital of France?",
        "my own opinion is that this is wrong",
        "I need a synonym for happy",
    ],
)
def test_a_pasted_artifact_or_a_general_question_does_not(message: str) -> None:
    assert not names_own_life(message)


def test_naming_ones_own_life_opens_the_gate_the_examples_alone_would_keep_closed() -> None:
    # Given a message the generic examples place on the impersonal side
    personal, impersonal = [0.2, 0.2, 0.2], [0.3, 0.3, 0.3]
    params = params_for("minilm-l6-v2")
    bonuses = {
        "self_reference_bonus": params.self_reference_bonus,
        "own_life_bonus": params.own_life_bonus,
        "own_things_bonus": params.own_things_bonus,
    }

    # When it asks about the asker's own place, and when it does not
    own = personal_context_score(
        personal, impersonal, "which station is closest to my place?", **bonuses
    )
    trivia = personal_context_score(
        personal, impersonal, "which station is closest to the Louvre?", **bonuses
    )

    # Then only the first clears the calibrated floor
    assert own == pytest.approx(-0.1 + params.self_reference_bonus + params.own_life_bonus)
    assert trivia == pytest.approx(-0.1)
    floor = params.gate_floor
    assert floor is not None and trivia < floor <= own


def test_saying_my_of_anything_counts_for_less_than_naming_ones_own_life() -> None:
    things = read_message([0.1], [0.1], "How do I fix citation errors in my bibliography file?")
    life = read_message([0.1], [0.1], "which metro station is closest to my place?")
    plain = read_message([0.1], [0.1], "How do citation managers format a bibliography?")
    params = params_for("minilm-l6-v2")
    bonuses = {
        "self_reference_bonus": params.self_reference_bonus,
        "own_life_bonus": params.own_life_bonus,
        "own_things_bonus": params.own_things_bonus,
    }

    assert (things.own_things, things.own_life) == (True, False)
    assert plain.score(**bonuses) < things.score(**bonuses) < life.score(**bonuses)


def test_a_plainly_personal_message_needs_a_weaker_match_than_a_borderline_one() -> None:
    params = params_for("minilm-l6-v2")
    assert params.best_bar(0.3) < params.best_bar(0.1) < params.best_bar(0.06)
    assert params.best_bar(params.gate_pivot) == pytest.approx(params.threshold)
    # below the gate's floor not even the best possible match would open the turn
    assert params.gate_floor is not None and params.best_bar(params.gate_floor) > 1.0
