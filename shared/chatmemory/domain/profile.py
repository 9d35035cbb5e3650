"""The profile: a short digest of the most stable memories, always in the prompt."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import rules
from chatmemory.domain.time import require_utc

PROFILE_TOKEN_BUDGET = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """What a persona always knows about the user; `built_from` lets a change trigger a rebuild."""

    user_id: str
    text: str
    token_count: int
    built_from: tuple[str, ...]
    rebuilt_at: datetime
    persona: str = rules.DEFAULT_PERSONA

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.persona(self.persona)
        rules.text("text", self.text, rules.PROFILE_MAX_CHARS, allow_empty=True)
        rules.int_range("token_count", self.token_count, 0, PROFILE_TOKEN_BUDGET)
        object.__setattr__(self, "built_from", rules.id_tuple("built_from", self.built_from, 500))
        object.__setattr__(self, "rebuilt_at", require_utc("rebuilt_at", self.rebuilt_at))
