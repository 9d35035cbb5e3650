"""Instants in the one form the product uses: aware UTC datetimes, ISO-8601 with a Z.

Every instant the product keeps lies in one range (docs/api.md "Conventions"), so every
one of them has a stored form that reads back as itself, and a shelf life added to it is
still a date:

- the service's own times of a memory — when it was learned, changed, used, reinforced or
  set aside — from `EARLIEST` (the epoch: nothing was learned before it);
- world time — when something became or stopped being true (`valid_from`, `valid_to`,
  `valid_until`) — from `EARLIEST_WORLD`, since a life reaches back before the epoch;
- both before `LATEST`.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from chatmemory.domain.errors import InvalidField

#: the first instant of the service's own times (learned, changed, used, reinforced, set aside)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
#: the first instant a world time may name (when something was true)
EARLIEST_WORLD = datetime(1900, 1, 1, tzinfo=UTC)
#: every instant is before this one: far enough for any plan, near enough that the longest
#: shelf life (a century) added to it is still a date
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

# API form: what docs/api.md shows (`2026-11-30T09:15:00Z`).
_API_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _label(instant: datetime) -> str:
    return instant.strftime(_API_FORMAT)


def bounded(field: str, value: datetime, earliest: datetime = EARLIEST) -> datetime:
    """The same instant as an aware UTC datetime, if it lies from `earliest` up to (not
    including) `LATEST`; InvalidField naming the field otherwise."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidField(field, "must carry a timezone")
    try:
        instant = value.astimezone(UTC)
    except OverflowError:  # the first or last day of year 1 or 9999, off UTC: no instant
        instant = None
    if instant is None or not earliest <= instant < LATEST:
        raise InvalidField(
            field, f"must be from {_label(earliest)} to before {_label(LATEST)} (UTC)"
        )
    return instant


def world_time(field: str, value: datetime) -> datetime:
    """`bounded` for a world time (when something was true): from `EARLIEST_WORLD`."""
    return bounded(field, value, EARLIEST_WORLD)


def bounded_day(field: str, value: date) -> date:
    """The day, if it falls within the range world time may name; InvalidField otherwise."""
    if not EARLIEST_WORLD.date() <= value < LATEST.date():
        raise InvalidField(
            field,
            f"must be from {EARLIEST_WORLD.date().isoformat()} to before "
            f"{LATEST.date().isoformat()}",
        )
    return value


def require_utc(field: str, value: datetime) -> datetime:
    """The same instant as an aware UTC datetime; naive datetimes are refused, not guessed."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidField(field, "must carry a timezone")
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # the first or last day of year 1 or 9999, off UTC
        raise InvalidField(field, "is out of range") from exc


def to_storage(value: datetime) -> str:
    """A sortable string for the stores: fixed width, microseconds, UTC. InvalidField for
    an instant outside the product's range: a store never holds one it cannot read back."""
    instant = world_time("timestamp", value)
    return instant.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def to_api(value: datetime) -> str:
    """The contract's form: seconds precision, UTC, with a Z."""
    return require_utc("timestamp", value).strftime(_API_FORMAT)


def to_month(value: datetime) -> str:
    """`2026-07`: how a memory's date is shown to the model ("last mentioned 2026-07")."""
    return require_utc("timestamp", value).strftime("%Y-%m")


def parse_instant(field: str, text: str, earliest: datetime = EARLIEST_WORLD) -> datetime:
    """An aware UTC datetime from ISO-8601 text; a date alone means its midnight UTC.
    InvalidField when it is not one, or lies outside `earliest` .. `LATEST`."""
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
    return bounded(field, parsed, earliest)


def from_storage(text: str, field: str = "timestamp") -> datetime:
    """Reads what `to_storage` wrote (fromisoformat: ~50x faster than strptime, and the
    read path parses a few thousand of these per turn); InvalidField naming `field` for
    text that is not a stored instant."""
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError) as exc:
        raise InvalidField(field, "is not a stored instant") from exc


def epoch_seconds(value: datetime) -> int:
    """Whole seconds since the epoch: the unit DynamoDB's TTL reads."""
    return int(require_utc("timestamp", value).timestamp())


def as_of_instant(text: str, field: str = "as_of") -> datetime:
    """The instant an `as_of` names: a timestamp as given, a date alone the last moment
    of that day (UTC) — "what did we believe on the 15th" includes the 15th."""
    raw = text.strip()
    instant = parse_instant(field, raw, EARLIEST)
    if "T" not in raw and " " not in raw:
        instant = bounded(field, instant + timedelta(days=1, microseconds=-1))
    return instant
