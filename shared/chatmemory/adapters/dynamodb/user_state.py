"""A user's settings (the SETTINGS item) and profiles (PROFILE#<persona> items) on DynamoDB."""

from __future__ import annotations

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import ProfileItem
from chatmemory.adapters.dynamodb.mapping import (
    profile_from_item,
    profile_item,
    settings_from_item,
    settings_item,
)
from chatmemory.adapters.dynamodb.table import Table
from chatmemory.domain import rules
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.profile import Profile
from chatmemory.ports.user_state import UserStateStore


class DynamoUserStateStore(UserStateStore):
    """Settings and per-persona profiles in the user's partition."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def get_profile(self, user_id: str, persona: str = rules.DEFAULT_PERSONA) -> Profile | None:
        item = self._table.get(self._table.items.profile, user_id, keys.profile_sk(persona))
        return None if item is None else profile_from_item(item)

    def put_profile(self, profile: Profile) -> None:
        profile_item(self._table.items, profile).save()

    def delete_profiles(self, user_id: str) -> None:
        # Inside a unit of work (forgetting everything) the deletes join its transaction.
        self._table.delete_all(self._profile_keys(user_id))

    def get_settings(self, user_id: str) -> MemorySettings:
        item = self._table.get(self._table.items.settings, user_id, keys.SETTINGS_SK)
        return MemorySettings(user_id=user_id) if item is None else settings_from_item(item)

    def put_settings(self, settings: MemorySettings) -> None:
        settings_item(self._table.items, settings).save()

    def _profile_keys(self, user_id: str) -> list[ProfileItem]:
        cls = self._table.items.profile
        rows = cls.query(
            keys.pk(user_id),
            cls.sk.startswith(keys.PROFILE_PREFIX),
            consistent_read=True,
            attributes_to_get=["pk", "sk"],
        )
        return [cls(row.pk, row.sk) for row in rows]
