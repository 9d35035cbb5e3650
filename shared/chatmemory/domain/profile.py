"""The profile: a short digest of the most stable memories, always in the prompt."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import rules
from chatmemory.domain.time import require_utc

PROFILE_TOKEN_BUDGET = 300
#: the version of the rules a profile is built by (domain/profile_digest.py): a profile
#: built by older rules (before sensitive memories left it: 1) is rebuilt before it is used
PROFILE_RULES = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """What a persona always knows about the user; `built_from` lets a change trigger a rebuild."""

    user_id: str
    text: str
    token_count: int
    built_from: tuple[str, ...]
    rebuilt_at: datetime
    persona: str = rules.DEFAULT_PERSONA
    # When a memory it holds goes out of use unless something new supports it (seed 003:
    # it fades): the profile is due for a rebuild then, with no write to trigger one.
    review_at: datetime | None = None
    built_by: int = PROFILE_RULES  # the rules version it was built by

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.persona(self.persona)
        rules.text("text", self.text, rules.PROFILE_MAX_CHARS, allow_empty=True)
        rules.int_range("token_count", self.token_count, 0, PROFILE_TOKEN_BUDGET)
        object.__setattr__(self, "built_from", rules.id_tuple("built_from", self.built_from, 500))
        object.__setattr__(self, "rebuilt_at", require_utc("rebuilt_at", self.rebuilt_at))
        if self.review_at is not None:
            object.__setattr__(self, "review_at", require_utc("review_at", self.review_at))
        rules.int_range("built_by", self.built_by, 1, PROFILE_RULES)

    def stale(self, now: datetime) -> bool:
        """Built by older rules, or holding a memory that has gone out of use since."""
        return self.built_by < PROFILE_RULES or (
            self.review_at is not None and self.review_at <= now
        )
