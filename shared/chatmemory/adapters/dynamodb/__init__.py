"""The AWS stores: one DynamoDB table, one partition per user (and one per room, one per
persona), through PynamoDB.

Item layout (pk = "U#<user_id>" for every item of a user; sk by type):

    memory        MEM#<memory_id>                   lsi1sk MEM#<created_at>#<memory_id>
    tombstone     TOMB#<memory_id>
    user state    USER                              (forgotten_before watermark)
    conversation  CONV#<conversation_id>             lsi1sk SEEN#<persona>#<updated_at>#<id>
                                                    (not on a temporary or empty one;
                                                    `deleted_at` once its owner deleted it)
    message       MSG#<conversation_id>#<seq:010d>
    profile       PROFILE#<persona>
    settings      SETTINGS
    event         EVT#<memory_id>#<at>#<event_id>
    notice        NOTICE#<notice_id>                lsi1sk NOTICE#<created_at>#<notice_id>
    run           RUN#<run_id>
    witness       WITNESS#<persona>                 (a row of the persona's lists the user)
    saw           SAW#<owner>                       (a row of another user's lists them)
    spoke         SPOKE#<room_id>                   (they said lines in the room)
    thread        THREAD#<memory_id>                (the row is an active thread; persona)
    rhythm        RHYTHM                            (when they chat: counters, samples, patterns)
    quota         QUOTA#<quota>#<window>            (turns taken that minute; expires by ttl)
    digest        DIGEST#<memory_id>                (the row is in use: what recall reads of it)
    unpurged      UNPURGED#<memory_id>              (a copy of a tombstone whose purge is pending)

A room is no one user's, so it never lives in a user's partition: pk = "R#<room_id>" for
everything of a room:

    room          ROOM                              (members, version, last_seq)
    room message  MSG#<seq:010d>
    persona block BLOCK#<persona>                   (the version it was built for)
    cursor        CURSOR#<persona>                  (the persona's extraction cursor)

Nor are a persona's own rows (world facts, its notes with no counterpart): pk =
"P#<persona>", with the memory item's layout:

    memory        MEM#<memory_id>                   lsi1sk MEM#<created_at>#<memory_id>

Every read is a GetItem, BatchGetItem or Query inside one partition, strongly
consistent (the LSI allows it), so a delete is invisible to the very next read. TTL
deletes lazily, so reads also drop rows whose expiry passed by the injected clock.

The sweep's sparse GSI (gsi1pk, gsi1sk) lists conversations awaiting extraction under
PENDING#<shard>, unpurged tombstones under PURGE#<shard>, rooms some seated persona
has not read to the end under QUIET#<shard>, and live threads' markers under
THREAD#<shard>, keyed by the day the nightly review would put them to sleep, and memory
rows still waiting for their vectors or their own uses under VECTORS#<shard> and
USES#<shard>, and conversations deleted whose purge has not finished under ERASE#<shard>
(see `keys`).

A data migration that needs Python keeps its place on one item of its own: pk = "MIGRATION",
sk = its name (the masking of old messages: MASK_MESSAGES).
"""

from __future__ import annotations

from chatmemory.adapters.dynamodb.conversation_erasure import DynamoConversationErasure
from chatmemory.adapters.dynamodb.conversations import DynamoConversationStore
from chatmemory.adapters.dynamodb.events import DynamoEventLog
from chatmemory.adapters.dynamodb.items import bind_items
from chatmemory.adapters.dynamodb.memories import DynamoMemoryStore
from chatmemory.adapters.dynamodb.notices import DynamoNoticeStore
from chatmemory.adapters.dynamodb.persona_memories import DynamoPersonaMemoryStore
from chatmemory.adapters.dynamodb.quotas import DynamoQuotaStore
from chatmemory.adapters.dynamodb.recall import DynamoRecallSource
from chatmemory.adapters.dynamodb.rhythm import DynamoRhythmStore
from chatmemory.adapters.dynamodb.rooms import DynamoRoomStore
from chatmemory.adapters.dynamodb.runs import DynamoRunStore
from chatmemory.adapters.dynamodb.table import Table
from chatmemory.adapters.dynamodb.tombstones import DynamoTombstoneStore
from chatmemory.adapters.dynamodb.unit_of_work import DynamoUnitOfWork
from chatmemory.adapters.dynamodb.user_state import DynamoUserStateStore
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores

__all__ = ["dynamodb_stores"]


def dynamodb_stores(
    *, table_name: str, region: str, clock: Clock, host: str | None = None
) -> Stores:
    """Every store on the table declared in template.yaml (or DynamoDB Local via `host`),
    sharing one `Table`: one botocore client and one unit of work."""
    table = Table(bind_items(table_name, region, host), clock)
    memories = DynamoMemoryStore(table)
    return Stores(
        memories=memories,
        visibility=memories,
        recall=DynamoRecallSource(table),
        tombstones=DynamoTombstoneStore(table),
        conversations=DynamoConversationStore(table),
        conversation_erasure=DynamoConversationErasure(table),
        runs=DynamoRunStore(table),
        user_state=DynamoUserStateStore(table),
        notices=DynamoNoticeStore(table),
        events=DynamoEventLog(table),
        rooms=DynamoRoomStore(table),
        persona_memories=DynamoPersonaMemoryStore(table),
        threads=memories,
        rhythm=DynamoRhythmStore(table),
        quotas=DynamoQuotaStore(table),
        unit_of_work=DynamoUnitOfWork(table),
    )
