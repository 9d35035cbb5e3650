"""The gate's reading of a message that names the asker's own life."""

from __future__ import annotations

import pytest

from chatmemory.domain.personal_context import (
    OWN_LIFE_BONUS,
    names_own_life,
    personal_context_score,
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

    # When it asks about the asker's own place, and when it does not
    own = personal_context_score(
        personal, impersonal, "which station is closest to my place?", self_reference_bonus=0.02
    )
    trivia = personal_context_score(
        personal, impersonal, "which station is closest to the Louvre?", self_reference_bonus=0.02
    )

    # Then only the first clears the calibrated floor
    assert own == pytest.approx(-0.1 + OWN_LIFE_BONUS)
    assert trivia == pytest.approx(-0.1)
    floor = params_for("minilm-l6-v2").gate_floor
    assert floor is not None and trivia < floor <= own
