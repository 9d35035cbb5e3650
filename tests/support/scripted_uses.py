"""A model that can write uses (unlike the offline stand-in it otherwise is), scripted by
the test: what it answers, what happens while it thinks, and every call it was asked."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.errors import ModelUnavailable
from chatmemory.ports.model import UsesRequest

#: what it writes for a memory it has no script for
DEFAULT_USES = (
    "a practice routine before a concert",
    "strings, rosin and bow care",
    "travelling with something big and fragile",
    "sore shoulders and neck",
    "fitting rehearsals into my week",
    "gift ideas for me",
)


class ScriptedUses(OfflineModel):
    """Writes `uses[text]` (else DEFAULT_USES) for each memory; `during` runs inside the
    call, after the rows were read and before anything is written; `failing` makes every
    call fail as an overloaded API would."""

    name = "scripted"
    offline = False

    def __init__(
        self,
        uses: dict[str, tuple[str, ...]] | None = None,
        *,
        during: Callable[[], None] | None = None,
        failing: bool = False,
    ) -> None:
        self.uses = uses or {}
        self.during = during
        self.failing = failing
        self.asked: list[list[UsesRequest]] = []

    def write_uses(self, items: Sequence[UsesRequest]) -> list[tuple[str, ...]]:
        self.asked.append(list(items))
        if self.during is not None:
            self.during()
        if self.failing:
            raise ModelUnavailable("the model is unavailable: overloaded_error (HTTP 529)")
        return [self.uses.get(item.text, DEFAULT_USES) for item in items]
