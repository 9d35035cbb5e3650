"""The user's switches: memory on or off, the note every persona reads, muted personas,
and the time zone their days and hours are read in."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.time import require_utc

DEFAULT_TIMEZONE = "UTC"
TIMEZONE_MAX = 64
# An IANA name as the tz database spells it ("Europe/Paris", "America/Argentina/Salta",
# "Etc/GMT+5"): never a path, so a name cannot reach outside the zone folder.
_ZONE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+){0,2}$")
# Files in the zone folder that name no place: the server's own zone, the rules template.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


def time_zone(name: str) -> tzinfo:
    """The zone an IANA name names ("UTC" needs no tz database); InvalidField("timezone")
    for anything else."""
    if name == DEFAULT_TIMEZONE:
        return UTC
    refused = InvalidField("timezone", "must be an IANA time zone name, e.g. Europe/Paris")
    if not isinstance(name, str) or len(name) > TIMEZONE_MAX or name in _NOT_ZONES:
        raise refused
    if not _ZONE_NAME.match(name):
        raise refused
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # unknown, or not a zone file
        raise refused from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySettings:
    """`enabled: False` stops reads and writes at once; stored memories stay until deleted."""

    user_id: str
    enabled: bool = True
    note: str = ""
    muted_personas: frozenset[str] = frozenset()
    timezone: str = DEFAULT_TIMEZONE  # an IANA name: where the user's days and hours fall
    updated_at: datetime | None = None

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        if not isinstance(self.enabled, bool):
            raise InvalidField("enabled", "must be true or false")
        rules.text("note", self.note, rules.NOTE_MAX, allow_empty=True)
        muted = frozenset(rules.persona(p, "muted_personas") for p in self.muted_personas)
        object.__setattr__(self, "muted_personas", muted)
        time_zone(self.timezone)
        if self.updated_at is not None:
            object.__setattr__(self, "updated_at", require_utc("updated_at", self.updated_at))

    def allows(self, persona: str) -> bool:
        """May this persona read and write memories about the user right now?"""
        return self.enabled and persona not in self.muted_personas

    @property
    def zone(self) -> tzinfo:
        """The user's time zone, for reading an instant as their local day and hour."""
        return time_zone(self.timezone)

    @staticmethod
    def checked_timezone(name: str) -> str:
        """`name` if it is a time zone a setting may hold (InvalidField("timezone") if not):
        the API's check at the door."""
        time_zone(name)
        return name
