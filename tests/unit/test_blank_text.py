"""Text a reader would see nothing in is blank: a memory (or a message, a note) made only
of zero-width characters, joiners, the BOM, soft hyphens or fillers is refused, naming the
field. Regression: a memory of nothing but zero-width characters was stored."""

from __future__ import annotations

import pytest

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField


@pytest.mark.parametrize(
    "text",
    ["\u200b\u200b\u200d", " \u00ad\ufeff ", "\u2060\u2061", "\u3164", "\u180e \u200e\u200f"],
)
def test_text_of_invisible_characters_only_is_refused_as_blank(text: str) -> None:
    with pytest.raises(InvalidField, match="not blank"):
        rules.text("text", text, 500)


@pytest.mark.parametrize("text", ["ok\u200b", "👩\u200d🔬", "Is vegan.", "कृष्ण"])
def test_text_with_something_to_see_is_kept_as_written(text: str) -> None:
    assert rules.text("text", text, 500) == text
