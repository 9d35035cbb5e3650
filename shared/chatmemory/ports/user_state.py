"""What a user set or what was built for them: settings and per-persona profiles."""

from __future__ import annotations

from abc import ABC, abstractmethod

from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.profile import Profile
from chatmemory.domain.rules import DEFAULT_PERSONA


class UserStateStore(ABC):
    """A user's memory settings and the profiles built from their memories."""

    @abstractmethod
    def get_profile(self, user_id: str, persona: str = DEFAULT_PERSONA) -> Profile | None: ...

    @abstractmethod
    def put_profile(self, profile: Profile) -> None: ...

    @abstractmethod
    def delete_profiles(self, user_id: str) -> None:
        """Delete the user's profile for every persona."""

    @abstractmethod
    def get_settings(self, user_id: str) -> MemorySettings:
        """The user's settings; defaults (enabled, empty note) if never saved."""

    @abstractmethod
    def put_settings(self, settings: MemorySettings) -> None: ...
