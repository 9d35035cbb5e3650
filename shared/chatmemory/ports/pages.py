"""The shape every paged listing shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_PAGE = 100


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; `next_cursor` is opaque and None on the last page."""

    items: list[T]
    next_cursor: str | None = None
