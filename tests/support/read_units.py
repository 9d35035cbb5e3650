"""Read units as DynamoDB bills them, for every request a botocore client sends under moto.

moto answers `ReturnConsumedCapacity` with a fixed number per call, so the units are
worked out here from the bytes each request reads, by DynamoDB's published rules:

- GetItem: the item's size rounded up to 4 KB; one unit per 4 KB strongly consistent,
  half eventually consistent; an item that is not there still costs the minimum.
- BatchGetItem: each key as its own GetItem (each rounded up on its own).
- Query: the sizes of every item the key condition reached (before any filter, and
  whatever the projection keeps) summed, then rounded up to 4 KB.

Sizes are DynamoDB's: each attribute's UTF-8 name plus its value. What a request read
is read again, unmetered, from the same moto table (a Query without its filter, limited
to its `ScannedCount`; each key of a get in full).

Install the meter before the stores send their first request: botocore registers the
hook on each session it creates from then on.
"""

from __future__ import annotations

import copy
import math
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore import handlers

UNIT_BYTES = 4096
_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")


@dataclass(frozen=True, slots=True)
class Read:
    """One request: what it was, which items (`INDEX KIND#` or `KIND#`: the index, if
    any, and the kind of sort key), how many it read, their bytes and its units."""

    operation: str
    target: str
    items: int
    bytes: int
    units: float


@dataclass
class Reads:
    """The reads metered so far."""

    requests: list[Read] = field(default_factory=list)

    @property
    def units(self) -> float:
        return sum(read.units for read in self.requests)

    @property
    def items(self) -> int:
        return sum(read.items for read in self.requests)

    def by_target(self) -> dict[str, tuple[int, int, float]]:
        """(requests, items, units) per operation and target, e.g. "Query DIGEST#"."""
        totals: dict[str, tuple[int, int, float]] = {}
        for read in self.requests:
            name = f"{read.operation} {read.target}"
            count, items, units = totals.get(name, (0, 0, 0.0))
            totals[name] = (count + 1, items + read.items, units + read.units)
        return totals


def item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's size of an item in its wire form (attribute names + values)."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: dict[str, Any]) -> int:
    kind, raw = next(iter(value.items()))
    if kind in _SCALARS:
        return _SCALARS[kind](raw)
    if kind == "L":
        return 3 + sum(1 + _value_bytes(element) for element in raw)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_bytes(v) for k, v in raw.items())
    if kind in ("SS", "NS", "BS"):
        return sum(_value_bytes({kind[0]: element}) for element in raw)
    raise ValueError(f"unknown attribute type {kind}")


def _number_bytes(raw: Any) -> int:
    digits = str(raw).lstrip("-").replace(".", "").lstrip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


_SCALARS: dict[str, Callable[[Any], int]] = {
    "S": lambda raw: len(raw.encode()),
    "B": len,
    "N": _number_bytes,
    "BOOL": lambda raw: 1,
    "NULL": lambda raw: 1,
}


def _prefix(value: str) -> str:
    """ "MEM#" of "MEM#mem_1", "USER" of "USER": the kind of item a sort key names."""
    head, sep, _ = value.partition("#")
    return head + sep


def _kind(key: dict[str, Any]) -> str:
    sort = key.get("sk", {}).get("S", "")
    return _prefix(sort) if sort else "?"


def _query_target(params: dict[str, Any]) -> str:
    """The index (if any) and the kind of sort key a query's key condition names (the
    partition's own key, U#… of a user, left out)."""
    condition = params.get("KeyConditionExpression", "")
    kinds = sorted(
        {
            _prefix(value["S"])
            for placeholder, value in params.get("ExpressionAttributeValues", {}).items()
            if placeholder in _PLACEHOLDER.findall(condition)
            and "S" in value
            and not value["S"].startswith(_PARTITIONS)
        }
    )
    index = params.get("IndexName")
    target = "+".join(kinds) or "?"
    return f"{index} {target}" if index else target


_PARTITIONS = ("U#", "P#", "R#")


def _units(size: int, consistent: bool) -> float:
    whole = max(1, math.ceil(size / UNIT_BYTES))
    return float(whole) if consistent else whole / 2


class ReadMeter:
    """Counts the read units of every DynamoDB request made while it is installed."""

    def __init__(self, region: str) -> None:
        # Built before the hook is installed, so its own reads are never metered.
        self._raw = boto3.client("dynamodb", region_name=region)
        self._lock = threading.Lock()
        self._busy = threading.local()
        self.reads = Reads()

    def reset(self) -> Reads:
        """Start counting afresh; what was counted so far."""
        with self._lock:
            counted, self.reads = self.reads, Reads()
        return counted

    @contextmanager
    def counting(self) -> Iterator[Reads]:
        """The reads made inside the block (and only those)."""
        self.reset()
        try:
            yield self.reads
        finally:
            self.reset()

    # ---- the hook -----------------------------------------------------------------------

    def _keep_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["read_meter_params"] = copy.deepcopy(params)

    def _after_call(
        self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        if getattr(self._busy, "on", False) or "Error" in parsed:
            return
        params = context.get("read_meter_params", {})
        self._busy.on = True
        try:
            read = self._read(model.name, params, parsed)
        finally:
            self._busy.on = False
        if read is not None:
            with self._lock:
                self.reads.requests.append(read)

    def _read(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> Read | None:
        if operation == "GetItem":
            consistent = bool(params.get("ConsistentRead"))
            size = self._item_size(params["TableName"], params["Key"])
            return Read(
                operation,
                _kind(params["Key"]),
                int(size is not None),
                size or 0,
                _units(size or 0, consistent),
            )
        if operation == "BatchGetItem":
            items, total, units, kinds = 0, 0, 0.0, set()
            for table, request in params["RequestItems"].items():
                consistent = bool(request.get("ConsistentRead"))
                for key in request["Keys"]:
                    size = self._item_size(table, key)
                    kinds.add(_kind(key))
                    items += int(size is not None)
                    total += size or 0
                    units += _units(size or 0, consistent)
            return Read(operation, "+".join(sorted(kinds)), items, total, units)
        if operation in ("Query", "Scan"):
            consistent = bool(params.get("ConsistentRead"))
            reached = self._reached(operation, params, int(parsed.get("ScannedCount", 0)))
            size = sum(item_bytes(item) for item in reached)
            target = _query_target(params)
            return Read(operation, target, len(reached), size, _units(size, consistent))
        return None

    def _item_size(self, table: str, key: dict[str, Any]) -> int | None:
        found = self._raw.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return None if found is None else item_bytes(found)

    def _reached(
        self, operation: str, params: dict[str, Any], scanned: int
    ) -> list[dict[str, Any]]:
        """Every item the request read before its filter: the same request, unfiltered,
        whole items, as many as it scanned."""
        if scanned == 0:
            return []
        again = {
            name: value
            for name, value in params.items()
            if name
            not in {
                "FilterExpression",
                "ProjectionExpression",
                "AttributesToGet",
                "Select",
                "QueryFilter",
                "ScanFilter",
                "ConditionalOperator",
                "ReturnConsumedCapacity",
                "ExpressionAttributeNames",
                "ExpressionAttributeValues",
            }
        }
        used = set(_PLACEHOLDER.findall(params.get("KeyConditionExpression", "")))
        names = {k: v for k, v in params.get("ExpressionAttributeNames", {}).items() if k in used}
        values = {k: v for k, v in params.get("ExpressionAttributeValues", {}).items() if k in used}
        if names:
            again["ExpressionAttributeNames"] = names
        if values:
            again["ExpressionAttributeValues"] = values
        again["Limit"] = scanned
        call = self._raw.query if operation == "Query" else self._raw.scan
        items: list[dict[str, Any]] = call(**again).get("Items", [])
        return items


@contextmanager
def metered(region: str) -> Iterator[ReadMeter]:
    """A read meter on every botocore session created inside the block."""
    meter = ReadMeter(region)
    hooks = [
        ("provide-client-params.dynamodb", meter._keep_params),
        ("after-call.dynamodb", meter._after_call),
    ]
    handlers.BUILTIN_HANDLERS.extend(hooks)
    try:
        yield meter
    finally:
        for hook in hooks:
            handlers.BUILTIN_HANDLERS.remove(hook)
