"""PynamoDB item classes for the single chatmemory table (the layout: see the package).

The classes here carry no table name: `bind_items` makes subclasses bound to one table,
region and endpoint at runtime, all sharing one connection (one botocore client costs
~90 ms to build, so eight of them would be felt on every cold start).
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, TypeVar

from pynamodb.attributes import (
    Attribute,
    BinaryAttribute,
    BooleanAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.connection.base import MetaTable
from pynamodb.connection.table import TableConnection
from pynamodb.constants import STRING
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    KeysOnlyProjection,
    LocalSecondaryIndex,
)
from pynamodb.models import Model

from chatmemory.domain.time import from_storage, to_storage

INDEX_BY_CREATED = "by_created"
INDEX_PENDING = "pending_extraction"

_M = TypeVar("_M", bound=Model)


class StorageTimeAttribute(Attribute[datetime]):
    """An instant as `to_storage` text, so string order is time order (and LSI order)."""

    attr_type = STRING

    def serialize(self, value: datetime) -> str:
        return to_storage(value)

    def deserialize(self, value: str) -> datetime:
        return from_storage(value)


class DayAttribute(Attribute[date]):
    """A day as ISO text (YYYY-MM-DD), so string order is day order."""

    attr_type = STRING

    def serialize(self, value: date) -> str:
        return value.isoformat()

    def deserialize(self, value: str) -> date:
        return date.fromisoformat(value)


# PynamoDB's Index.__init_subclass__ is unannotated; subclassing is how indexes are declared.
class ByCreated(LocalSecondaryIndex[_M]):  # type: ignore[no-untyped-call]
    """The `by_created` LSI: (pk, lsi1sk), every attribute projected."""

    class Meta:
        index_name = INDEX_BY_CREATED
        projection = AllProjection()

    pk = UnicodeAttribute(hash_key=True)
    lsi1sk = UnicodeAttribute(range_key=True)


class PendingExtraction(GlobalSecondaryIndex[_M]):  # type: ignore[no-untyped-call]
    """The sparse `pending_extraction` GSI: (gsi1pk, gsi1sk), keys only."""

    class Meta:
        index_name = INDEX_PENDING
        projection = KeysOnlyProjection()

    gsi1pk = UnicodeAttribute(hash_key=True)
    gsi1sk = UnicodeAttribute(range_key=True)


class _Item(Model):
    """Keys every item has: the user's partition and a typed sort key."""

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)


class MemoryItem(_Item):
    lsi1sk = UnicodeAttribute()
    by_created: ByCreated[MemoryItem] = ByCreated()
    user_id = UnicodeAttribute()
    memory_id = UnicodeAttribute()
    text = UnicodeAttribute()
    persona = UnicodeAttribute()
    subject = UnicodeAttribute()
    witnessed = ListAttribute[str]()
    counterpart = UnicodeAttribute(null=True)
    room_id = UnicodeAttribute(null=True)
    kind = UnicodeAttribute()
    category = UnicodeAttribute()
    key = UnicodeAttribute(null=True)
    importance = NumberAttribute()
    stated_by = UnicodeAttribute()
    status = UnicodeAttribute()
    valid_from = StorageTimeAttribute(null=True)
    valid_to = StorageTimeAttribute(null=True)
    closed_by = UnicodeAttribute(null=True)
    supersedes = UnicodeAttribute(null=True)
    valid_until = StorageTimeAttribute(null=True)
    evidence = ListAttribute[str]()
    source_message_id = UnicodeAttribute(null=True)
    created_at = StorageTimeAttribute()
    updated_at = StorageTimeAttribute()
    last_used_at = StorageTimeAttribute(null=True)
    recall_count = NumberAttribute()
    stability_days = NumberAttribute(null=True)
    reinforced_at = StorageTimeAttribute(null=True)
    archived_at = StorageTimeAttribute(null=True)
    embedding = BinaryAttribute(null=True, legacy_encoding=False)
    meta = UnicodeAttribute()  # JSON text: exactly what the domain validated, keys sorted
    # Set only by the transaction that writes a tombstone naming this row; never cleared.
    hidden = BooleanAttribute(null=True)
    ttl = NumberAttribute(null=True)
    # Set while an active row waits for its vectors or its own uses (see
    # PendingExtraction, which it shares): what `pending_vectors` and `pending_uses` read
    # instead of scanning users.
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    pending: PendingExtraction[MemoryItem] = PendingExtraction()


class TombstoneItem(_Item):
    user_id = UnicodeAttribute()
    memory_id = UnicodeAttribute()
    deleted_at = StorageTimeAttribute()
    actor = UnicodeAttribute()
    persona = UnicodeAttribute()
    versions = ListAttribute[str]()
    source_message_ids = ListAttribute[str]()
    conversation_ids = ListAttribute[str]()
    purged_at = StorageTimeAttribute(null=True)
    purge_error = UnicodeAttribute(null=True)
    kind = UnicodeAttribute(null=True)  # absent on tombstones from before it was kept
    # Set while the purge has not finished (see PendingExtraction, which it shares).
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    pending: PendingExtraction[TombstoneItem] = PendingExtraction()


class UserStateItem(_Item):
    forgotten_before = StorageTimeAttribute(null=True)


class ConversationItem(_Item):
    # Absent on a temporary or empty conversation (and one last written before it existed).
    lsi1sk = UnicodeAttribute(null=True)
    by_created: ByCreated[ConversationItem] = ByCreated()
    user_id = UnicodeAttribute()
    conversation_id = UnicodeAttribute()
    persona = UnicodeAttribute()
    temporary = BooleanAttribute()
    expires_at = StorageTimeAttribute(null=True)
    created_at = StorageTimeAttribute()
    updated_at = StorageTimeAttribute()
    last_seq = NumberAttribute()
    summary = UnicodeAttribute()
    summary_upto_seq = NumberAttribute()
    fold_count = NumberAttribute()
    extracted_upto_seq = NumberAttribute()
    last_user_message_at = StorageTimeAttribute(null=True)
    ttl = NumberAttribute(null=True)
    # Set when its owner deleted it: every read treats it as missing from then on, and it
    # sits in the sweep's index under ERASE#<shard> until its purge removes it.
    deleted_at = StorageTimeAttribute(null=True)
    # Set while user messages wait for the write pipeline (see PendingExtraction), or
    # while a deleted conversation waits for its purge.
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    pending: PendingExtraction[ConversationItem] = PendingExtraction()


class RunItem(_Item):
    """A write-pipeline run: one JSON document, gone with its TTL."""

    user_id = UnicodeAttribute()
    run_id = UnicodeAttribute()
    conversation_id = UnicodeAttribute()
    body = UnicodeAttribute()
    ttl = NumberAttribute()


class MessageItem(_Item):
    user_id = UnicodeAttribute()
    conversation_id = UnicodeAttribute()
    seq = NumberAttribute()
    role = UnicodeAttribute()
    content = UnicodeAttribute()
    tokens = NumberAttribute()
    created_at = StorageTimeAttribute()
    expires_at = StorageTimeAttribute(null=True)
    memories_used = ListAttribute[str]()
    ttl = NumberAttribute(null=True)


class ProfileItem(_Item):
    user_id = UnicodeAttribute()
    persona = UnicodeAttribute()
    text = UnicodeAttribute()
    token_count = NumberAttribute()
    built_from = ListAttribute[str]()
    rebuilt_at = StorageTimeAttribute()
    review_at = StorageTimeAttribute(null=True)
    built_by = NumberAttribute(null=True)  # absent on items from before it: rules 1


class SettingsItem(_Item):
    user_id = UnicodeAttribute()
    enabled = BooleanAttribute()
    note = UnicodeAttribute()
    muted_personas = ListAttribute[str]()
    timezone = UnicodeAttribute(null=True)  # absent on items from before it: "UTC"
    updated_at = StorageTimeAttribute(null=True)


class EventItem(_Item):
    user_id = UnicodeAttribute()
    memory_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    op = UnicodeAttribute()
    actor = UnicodeAttribute()
    at = StorageTimeAttribute()
    related_id = UnicodeAttribute(null=True)
    # Absent on events from before the change feed described them.
    persona = UnicodeAttribute(null=True)
    kind = UnicodeAttribute(null=True)


class NoticeItem(_Item):
    lsi1sk = UnicodeAttribute()
    by_created: ByCreated[NoticeItem] = ByCreated()
    user_id = UnicodeAttribute()
    notice_id = UnicodeAttribute()
    text = UnicodeAttribute()
    memory_ids = ListAttribute[str]()
    created_at = StorageTimeAttribute()
    persona = UnicodeAttribute()
    conversation_id = UnicodeAttribute(null=True)
    undone_at = StorageTimeAttribute(null=True)


class RoomItem(_Item):
    """A room, under its own partition `R#<room_id>` (a room is no one user's)."""

    room_id = UnicodeAttribute()
    kind = UnicodeAttribute()
    incognito = BooleanAttribute()
    fiction = BooleanAttribute()
    personas = ListAttribute[str]()
    members = ListAttribute[str]()
    created_at = StorageTimeAttribute()
    version = NumberAttribute()
    last_seq = NumberAttribute()
    last_message_at = StorageTimeAttribute(null=True)
    threads_asked_on = DayAttribute(null=True)  # the last day a thread was raised here
    # Set while some seated persona has not read to the last message (see PendingExtraction).
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    pending: PendingExtraction[RoomItem] = PendingExtraction()


class RoomMessageItem(_Item):
    room_id = UnicodeAttribute()
    seq = NumberAttribute()
    speaker = UnicodeAttribute()
    text = UnicodeAttribute()
    created_at = StorageTimeAttribute()


class RoomBlockItem(_Item):
    """A persona's block as built for the room's members at `version`."""

    room_id = UnicodeAttribute()
    persona = UnicodeAttribute()
    version = NumberAttribute()
    text = UnicodeAttribute()
    memory_ids = ListAttribute[str]()
    chars_current = NumberAttribute()
    chars_limit = NumberAttribute()
    built_at = StorageTimeAttribute()


class RoomCursorItem(_Item):
    """The last seq a persona's write pipeline has read in the room."""

    room_id = UnicodeAttribute()
    persona = UnicodeAttribute()
    upto_seq = NumberAttribute()


class WitnessItem(_Item):
    """In a user's partition: some row of `persona`'s lists the user as a witness.

    Ids only, no text. `memory_id` is the last row written that named them, so a marker
    rewritten meanwhile is never deleted by a `drop_witness` that did not see that row.
    """

    user_id = UnicodeAttribute()
    persona = UnicodeAttribute()
    memory_id = UnicodeAttribute()


class SawItem(_Item):
    """In a user's partition: some row in `owner`'s partition lists the user as a witness.

    Ids only, no text. `writes` counts the writes that named them (each adds one), so a
    marker rewritten meanwhile is never deleted by a `drop_witness` that did not see that
    write — even one that rewrote a row it had already read (a memory id would not tell).
    """

    user_id = UnicodeAttribute()
    owner = UnicodeAttribute()
    writes = NumberAttribute()


class SpokeItem(_Item):
    """In a user's partition: the user said lines in `room_id`.

    Ids only, no text. `appends` counts the appends that held a line of theirs (each adds
    one), so a marker rewritten meanwhile is never deleted by a `forget_speaker` that did
    not see that append's lines.
    """

    user_id = UnicodeAttribute()
    room_id = UnicodeAttribute()
    appends = NumberAttribute()


class ThreadItem(_Item):
    """In a user's partition: their row `memory_id` is an active thread (of `persona`).

    Ids only, no text: what lets the read path find a user's threads without reading
    their other rows. Written and deleted in the row's own transactions; while the thread
    is live it also sits in the sweep's index under THREAD#<shard>, keyed by the day the
    nightly review would put it to sleep. It expires with its row (`ttl`).
    """

    user_id = UnicodeAttribute()
    memory_id = UnicodeAttribute()
    persona = UnicodeAttribute()
    ttl = NumberAttribute(null=True)
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    pending: PendingExtraction[ThreadItem] = PendingExtraction()


@dataclass(frozen=True, slots=True)
class BoundItems:
    """The item classes bound to one table, and the connection transactions go through."""

    connection: TableConnection
    memory: type[MemoryItem]
    tombstone: type[TombstoneItem]
    user_state: type[UserStateItem]
    conversation: type[ConversationItem]
    message: type[MessageItem]
    profile: type[ProfileItem]
    settings: type[SettingsItem]
    event: type[EventItem]
    notice: type[NoticeItem]
    run: type[RunItem]
    room: type[RoomItem]
    room_message: type[RoomMessageItem]
    room_block: type[RoomBlockItem]
    room_cursor: type[RoomCursorItem]
    witness: type[WitnessItem]
    saw: type[SawItem]
    spoke: type[SpokeItem]
    thread: type[ThreadItem]


def _table_description(table_name: str) -> dict[str, Any]:
    """What PynamoDB needs to know of template.yaml's table (no DescribeTable call)."""
    return {
        "TableName": table_name,
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "lsi1sk", "AttributeType": "S"},
            {"AttributeName": "gsi1pk", "AttributeType": "S"},
            {"AttributeName": "gsi1sk", "AttributeType": "S"},
        ],
        "LocalSecondaryIndexes": [
            {
                "IndexName": INDEX_BY_CREATED,
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "lsi1sk", "KeyType": "RANGE"},
                ],
            }
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": INDEX_PENDING,
                "KeySchema": [
                    {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                ],
            }
        ],
    }


def _bind(base: type[_M], table_name: str, region: str, host: str | None, conn: Any) -> type[_M]:
    meta = type("Meta", (), {"table_name": table_name, "region": region, "host": host})

    def body(namespace: dict[str, Any]) -> None:
        # A connection in the class namespace is what `Model._get_connection` reuses.
        namespace.update(Meta=meta, _connection=conn, __module__=base.__module__)

    bound: type[_M] = types.new_class(base.__name__, (base,), exec_body=body)
    return bound


def bind_items(table_name: str, region: str, host: str | None = None) -> BoundItems:
    """Item classes for `table_name`, sharing one lazily-created botocore client."""
    conn = TableConnection(
        table_name,
        region=region,
        host=host,
        meta_table=MetaTable(_table_description(table_name)),
    )
    return BoundItems(
        connection=conn,
        memory=_bind(MemoryItem, table_name, region, host, conn),
        tombstone=_bind(TombstoneItem, table_name, region, host, conn),
        user_state=_bind(UserStateItem, table_name, region, host, conn),
        conversation=_bind(ConversationItem, table_name, region, host, conn),
        message=_bind(MessageItem, table_name, region, host, conn),
        profile=_bind(ProfileItem, table_name, region, host, conn),
        settings=_bind(SettingsItem, table_name, region, host, conn),
        event=_bind(EventItem, table_name, region, host, conn),
        notice=_bind(NoticeItem, table_name, region, host, conn),
        run=_bind(RunItem, table_name, region, host, conn),
        room=_bind(RoomItem, table_name, region, host, conn),
        room_message=_bind(RoomMessageItem, table_name, region, host, conn),
        room_block=_bind(RoomBlockItem, table_name, region, host, conn),
        room_cursor=_bind(RoomCursorItem, table_name, region, host, conn),
        witness=_bind(WitnessItem, table_name, region, host, conn),
        saw=_bind(SawItem, table_name, region, host, conn),
        spoke=_bind(SpokeItem, table_name, region, host, conn),
        thread=_bind(ThreadItem, table_name, region, host, conn),
    )


class RhythmItem(_Item):
    """In a user's partition (sk RHYTHM): their rhythm's counters, samples and patterns as
    JSON (`domain.rhythm.as_record`), and its version, the compare-and-set token."""

    user_id = UnicodeAttribute()
    version = NumberAttribute()
    state = UnicodeAttribute()
    updated_at = StorageTimeAttribute()


class ObservedTurnItem(_Item):
    """In a user's partition (sk TURN#<turn id>): a turn a client reported after it
    happened, put in the same transaction as its messages so a retry stores nothing twice.
    Ids, seqs and the request's fingerprint only; it expires with its conversation (ttl)."""

    user_id = UnicodeAttribute()
    turn_id = UnicodeAttribute()
    conversation_id = UnicodeAttribute()
    first_seq = NumberAttribute()
    message_count = NumberAttribute()  # `count` is a Model method
    fingerprint = UnicodeAttribute()
    observed_at = StorageTimeAttribute()
    expires_at = StorageTimeAttribute(null=True)
    ttl = NumberAttribute(null=True)


def bind_item(items: BoundItems, base: type[_M]) -> type[_M]:
    """`base` bound to the table `items` are bound to, sharing their connection: for an
    item class a store binds for itself."""
    meta = items.memory.Meta
    # `bind_items` always sets the region; PynamoDB's Meta types it as optional.
    return _bind(base, meta.table_name, meta.region or "", meta.host, items.connection)


class QuotaItem(_Item):
    """In a user's partition (sk QUOTA#<quota>#<window>): how many units of the quota the
    user took in that minute. It holds a number only, and expires soon after (`ttl`)."""

    taken = NumberAttribute()
    ttl = NumberAttribute()


class DigestItem(_Item):
    """In a user's partition: their row `memory_id` is in use; what recall reads of it.

    Ids, numbers and times only, no text. `version` changes whenever the row's vectors
    may have; `stamp` whenever anything here does (what a conditional delete compares).
    It expires with its row (`ttl`).
    """

    memory_id = UnicodeAttribute()
    persona = UnicodeAttribute()
    importance = NumberAttribute()
    version = UnicodeAttribute()
    borrowed_uses = BooleanAttribute()
    created_at = StorageTimeAttribute()
    kind = UnicodeAttribute()
    category = UnicodeAttribute()
    stability_days = NumberAttribute(null=True)
    reinforced_at = StorageTimeAttribute(null=True)
    last_used_at = StorageTimeAttribute(null=True)
    archived_at = StorageTimeAttribute(null=True)
    valid_until = StorageTimeAttribute(null=True)
    ttl = NumberAttribute(null=True)
    stamp = UnicodeAttribute()


class UserMarkersItem(_Item):
    """The USER item as the per-turn reads see it: the forget watermark, and which of the
    user's markers are complete (`digests`, `tombstones`: until then those reads go to
    the items themselves)."""

    forgotten_before = StorageTimeAttribute(null=True)
    digest_markers = NumberAttribute(null=True)
    unpurged_copies = NumberAttribute(null=True)


class DataMigrationItem(_Item):
    """pk MIGRATION, sk <name>: how far a data migration that needs the package's Python
    got (`cursor`: the scan's last evaluated key, as JSON) and when it was done. No one's
    data."""

    cursor = UnicodeAttribute(null=True)
    done_at = StorageTimeAttribute(null=True)
