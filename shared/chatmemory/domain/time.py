"""Instants in the one form the product uses: aware UTC datetimes, ISO-8601 with a Z."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chatmemory.domain.errors import InvalidField

# Storage form: fixed width with microseconds, so string order is time order in both stores.
_STORAGE_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
# API form: what docs/api.md shows (`2026-11-30T09:15:00Z`).
_API_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def require_utc(field: str, value: datetime) -> datetime:
    """The same instant as an aware UTC datetime; naive datetimes are refused, not guessed."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidField(field, "must carry a timezone")
    return value.astimezone(UTC)


def to_storage(value: datetime) -> str:
    """A sortable string for the stores: fixed width, microseconds, UTC."""
    return require_utc("timestamp", value).strftime(_STORAGE_FORMAT)


def to_api(value: datetime) -> str:
    """The contract's form: seconds precision, UTC, with a Z."""
    return require_utc("timestamp", value).strftime(_API_FORMAT)


def to_month(value: datetime) -> str:
    """`2026-07`: how a memory's date is shown to the model ("last mentioned 2026-07")."""
    return require_utc("timestamp", value).strftime("%Y-%m")


def parse_instant(field: str, text: str) -> datetime:
    """An aware UTC datetime from ISO-8601 text; a date alone means its midnight UTC."""
    raw = text.strip()
    if not raw:
        raise InvalidField(field, "must be an ISO-8601 timestamp")
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise InvalidField(field, "must be an ISO-8601 timestamp") from exc
    if parsed.tzinfo is None:
        if "T" in raw or " " in raw:
            raise InvalidField(field, "must carry a timezone (e.g. end with Z)")
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def from_storage(text: str) -> datetime:
    """Reads what `to_storage` wrote (fromisoformat: ~50x faster than strptime, and the
    read path parses a few thousand of these per turn)."""
    return datetime.fromisoformat(text)


def epoch_seconds(value: datetime) -> int:
    """Whole seconds since the epoch: the unit DynamoDB's TTL reads."""
    return int(require_utc("timestamp", value).timestamp())


def as_of_instant(text: str, field: str = "as_of") -> datetime:
    """The instant an `as_of` names: a timestamp as given, a date alone the last moment
    of that day (UTC) — "what did we believe on the 15th" includes the 15th."""
    raw = text.strip()
    instant = parse_instant(field, raw)
    if "T" not in raw and " " not in raw:
        instant += timedelta(days=1, microseconds=-1)
    return instant
