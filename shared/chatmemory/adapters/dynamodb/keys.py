"""The table's keys: every pk/sk (users', rooms' and personas' partitions), the sweep
index's keys and the memory listing's cursor."""

from __future__ import annotations

import hashlib
from datetime import date, datetime

from chatmemory.adapters.cursors import decode_cursor, encode_cursor
from chatmemory.domain import rules
from chatmemory.domain.conversation import Conversation
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.domain.tombstone import Tombstone
from chatmemory.domain.uses_origin import awaits_uses

AFTER_IDS = "~"  # sorts after every character an id may hold ([A-Za-z0-9_.:-])
USER_SK = "USER"
SETTINGS_SK = "SETTINGS"
MEMORY_PREFIX = "MEM#"
TOMBSTONE_PREFIX = "TOMB#"
CONVERSATION_PREFIX = "CONV#"
SEEN_PREFIX = "SEEN#"  # a conversation's key in the by_created LSI
PROFILE_PREFIX = "PROFILE#"
NOTICE_PREFIX = "NOTICE#"
RUN_PREFIX = "RUN#"
EVENT_PREFIX = "EVT#"  # the audit log; the change feed's stream filter matches it
ROOM_SK = "ROOM"
ROOM_MESSAGE_PREFIX = "MSG#"
MESSAGE_PREFIX = "MSG#"  # a conversation's messages, in its user's partition
MAX_SEQ = 9_999_999_999  # ten digits: the widest seq a message id carries

WITNESS_PREFIX = "WITNESS#"
SAW_PREFIX = "SAW#"
SPOKE_PREFIX = "SPOKE#"
THREAD_PREFIX = "THREAD#"
OBSERVED_TURN_PREFIX = "TURN#"

PENDING_SHARDS = 8  # spreads the sweep's index over partitions
PENDING_PREFIX = "PENDING#"
PURGE_PREFIX = "PURGE#"
QUIET_PREFIX = "QUIET#"
USES_PREFIX = "USES#"
ERASE_PREFIX = "ERASE#"  # a deleted conversation waiting for its purge
VECTORS_PREFIX = "VECTORS#"


USER_PK_PREFIX = "U#"


def pk(user_id: str) -> str:
    return f"{USER_PK_PREFIX}{user_id}"


def user_of(pk_value: str) -> str:
    """The user id a pk names."""
    return pk_value.removeprefix(USER_PK_PREFIX)


def memory_sk(memory_id: str) -> str:
    return f"{MEMORY_PREFIX}{memory_id}"


def memory_lsi(created_at: str, memory_id: str) -> str:
    return f"{MEMORY_PREFIX}{created_at}#{memory_id}"


def memory_lsi_after(created_at: str | None) -> str:
    """The lowest LSI key of a memory created strictly after `created_at` (storage form)."""
    return MEMORY_PREFIX if created_at is None else f"{MEMORY_PREFIX}{created_at}#{AFTER_IDS}"


MEMORY_LSI_END = f"{MEMORY_PREFIX}{AFTER_IDS}"


def tombstone_sk(memory_id: str) -> str:
    return f"{TOMBSTONE_PREFIX}{memory_id}"


def conversation_sk(conversation_id: str) -> str:
    return f"{CONVERSATION_PREFIX}{conversation_id}"


def conversation_seen_key(conversation: Conversation) -> str | None:
    """The `by_created` LSI's key of a conversation that is not temporary and has
    messages: its persona, then when it was last updated, so a persona's latest is one
    row away (a new chat's return greeting); None for others, never a last meeting."""
    if conversation.temporary or conversation.last_seq == 0:
        return None
    return seen_prefix(conversation.persona) + (
        f"{to_storage(conversation.updated_at)}#{conversation.conversation_id}"
    )


def seen_prefix(persona: str) -> str:
    """Every conversation key of `conversation_seen_key` with this persona starts so (a
    persona holds no `#`)."""
    return f"{SEEN_PREFIX}{persona}#"


def message_sk(conversation_id: str, seq: int) -> str:
    return f"MSG#{conversation_id}#{seq:010d}"


def messages_prefix(conversation_id: str) -> str:
    """Every message key of this conversation starts so (and no other conversation's)."""
    return f"MSG#{conversation_id}#"


def observed_turn_sk(turn_id: str) -> str:
    return f"{OBSERVED_TURN_PREFIX}{turn_id}"


def profile_sk(persona: str) -> str:
    return f"{PROFILE_PREFIX}{persona}"


def event_prefix(memory_id: str) -> str:
    return f"{EVENT_PREFIX}{memory_id}#"


def event_sk(event: MemoryEvent) -> str:
    # Deterministic from the event, so re-adding it overwrites itself instead of duplicating.
    return f"{event_prefix(event.memory_id)}{to_storage(event.at)}#{event.event_id}"


def notice_sk(notice_id: str) -> str:
    return f"{NOTICE_PREFIX}{notice_id}"


def notice_lsi(created_at: datetime, notice_id: str) -> str:
    return f"{NOTICE_PREFIX}{to_storage(created_at)}#{notice_id}"


NOTICE_LSI_END = f"{NOTICE_PREFIX}{AFTER_IDS}"


def run_sk(run_id: str) -> str:
    return f"{RUN_PREFIX}{run_id}"


def seq_range(after_seq: int, upto_seq: int | None, last: int | None) -> tuple[int, int] | None:
    """The first and final seq of a transcript window (after_seq < seq <= upto_seq, within
    what a key can carry); None when the window, or `last=0`, holds nothing."""
    if last is not None:
        rules.int_range("last", last, 0)
    first = max(after_seq, 0) + 1
    final = MAX_SEQ if upto_seq is None else min(upto_seq, MAX_SEQ)
    if first > final or last == 0:
        return None
    return first, final


# ---- a room's partition (no user's: everything of one room, under its own pk) ------------


def room_pk(room_id: str) -> str:
    return f"R#{room_id}"


def room_message_sk(seq: int) -> str:
    return f"{ROOM_MESSAGE_PREFIX}{seq:010d}"


def room_block_sk(persona: str) -> str:
    return f"BLOCK#{persona}"


ROOM_CURSOR_PREFIX = "CURSOR#"


def room_cursor_sk(persona: str) -> str:
    return f"{ROOM_CURSOR_PREFIX}{persona}"


def room_of(pk_value: str) -> str:
    """The room id a room's pk names."""
    return pk_value.removeprefix("R#")


def spoke_sk(room_id: str) -> str:
    """The marker in a user's partition saying they said lines in `room_id`: what lets
    `forget_speaker` find those rooms without a scan. No other query of a user's
    partition reaches `SPOKE#`, and markers carry no LSI key."""
    return f"{SPOKE_PREFIX}{room_id}"


def thread_sk(memory_id: str) -> str:
    """The marker in a user's partition saying their row `memory_id` is an active thread:
    what lets `list_threads` read only the thread rows. No other query of a user's
    partition reaches `THREAD#`, and markers carry no LSI key."""
    return f"{THREAD_PREFIX}{memory_id}"


# ---- a persona's partition (its own rows, no one user's) and the witness markers ----------


def persona_pk(persona: str) -> str:
    """`P#<persona>`: never a user's `U#<user_id>`, so a user id cannot collide with it."""
    return f"P#{persona}"


def witness_sk(persona: str) -> str:
    """The marker in a user's partition saying some row of `persona` lists them as a
    witness: what lets `drop_witness` find those rows without a scan."""
    return f"{WITNESS_PREFIX}{persona}"


def saw_sk(owner: str) -> str:
    """The marker in a user's partition saying some row in `owner`'s partition lists them
    as a witness: what lets the memory store's `drop_witness` find those rows without a
    scan. No other query of a user's partition reaches `SAW#`, and markers carry no LSI key."""
    return f"{SAW_PREFIX}{owner}"


# ---- the memory listing's cursor ----------------------------------------------------------


def memory_cursor(memory: Memory) -> str:
    """The cursor that resumes a listing after this row."""
    position = {"c": to_storage(memory.created_at), "i": memory.memory_id}
    return encode_cursor(memory.user_id, position)


def cursor_key(user_id: str, cursor: str) -> str:
    """The LSI key of the row a cursor stopped at; InvalidField("next") for anything else."""
    position = decode_cursor(user_id, cursor)
    created, memory_id = position.get("c"), position.get("i")
    refused = InvalidField("next", "is not a cursor this service issued")
    if not isinstance(created, str) or not isinstance(memory_id, str):
        raise refused
    try:
        rules.opaque_id("memory_id", memory_id)
        canonical = to_storage(from_storage(created))
    except ValueError as exc:  # InvalidField is a ValueError too
        raise refused from exc
    if canonical != created:
        raise refused
    return memory_lsi(created, memory_id)


# ---- the sweep's index (sparse GSI, sharded) ----------------------------------------------


def _shard(owner: str) -> int:
    """The index shard of a user's (or a room's) entries."""
    return int(hashlib.sha256(owner.encode()).hexdigest(), 16) % PENDING_SHARDS


def pending_shards(prefix: str) -> list[str]:
    """Every shard's partition key of the sweep index under `prefix`."""
    return [f"{prefix}{shard}" for shard in range(PENDING_SHARDS)]


def pending_keys_at(user_id: str, conversation_id: str, said_at: datetime) -> dict[str, str]:
    """The sweep's index keys of a conversation whose last user message came at `said_at`."""
    return {
        "gsi1pk": f"{PENDING_PREFIX}{_shard(user_id)}",
        "gsi1sk": f"{to_storage(said_at)}#{user_id}#{conversation_id}",
    }


def pending_extraction_keys(conversation: Conversation) -> dict[str, str]:
    """The sweep's index keys while the conversation is `awaiting_extraction`, else none."""
    said = conversation.last_user_message_at
    if not conversation.awaiting_extraction or said is None:
        return {}
    return pending_keys_at(conversation.user_id, conversation.conversation_id, said)


def sweep_time(gsi1sk: str) -> str:
    """When (storage form) a sweep index key's conversation or tombstone entered the index."""
    return gsi1sk.partition("#")[0]


def erase_pending_keys(user_id: str, conversation_id: str, deleted_at: datetime) -> dict[str, str]:
    """The sweep's index keys of a deleted conversation until its purge removes it."""
    return {
        "gsi1pk": f"{ERASE_PREFIX}{_shard(user_id)}",
        "gsi1sk": f"{to_storage(deleted_at)}#{user_id}#{conversation_id}",
    }


#: the data migrations' records: one item each, in a partition of its own (no user's)
MIGRATION_PK = "MIGRATION"
MASK_MESSAGES_SK = "MASK_MESSAGES"


def purge_pending_keys(tombstone: Tombstone) -> dict[str, str]:
    """The sweep's index keys while a tombstone's purge has not finished."""
    if tombstone.purged_at is not None:
        return {}
    return {
        "gsi1pk": f"{PURGE_PREFIX}{_shard(tombstone.user_id)}",
        "gsi1sk": f"{to_storage(tombstone.deleted_at)}#{tombstone.user_id}#{tombstone.memory_id}",
    }


def quiet_room_keys(room_id: str, said_at: datetime) -> dict[str, str]:
    """The sweep's index keys of a room whose last message came at `said_at` and that
    some seated persona has not read to the end."""
    return {
        "gsi1pk": f"{QUIET_PREFIX}{_shard(room_id)}",
        "gsi1sk": f"{to_storage(said_at)}#{room_id}",
    }


def thread_due_keys(user_id: str, memory_id: str, review_on: date) -> dict[str, str]:
    """The sweep's index keys of a live thread the nightly review would put to sleep on
    `review_on`: a day's keys sort together, oldest day first."""
    return {
        "gsi1pk": f"{THREAD_PREFIX}{_shard(user_id)}",
        "gsi1sk": f"{review_on.isoformat()}#{user_id}#{memory_id}",
    }


def pending_keys(memory: Memory) -> dict[str, str]:
    """The sweep's index keys while an active row waits for the uses job, else none; rows
    sort by when they were written. Under VECTORS# while it has no vectors (the embedder
    failed when it was written: recall cannot find it), else under USES# while its uses
    wait to be written for it (borrowed from its category, carried from the version it
    corrects, or none). A row has one place in the index, so a row waiting for both is
    under VECTORS# until its vectors land."""
    if memory.status is not Status.ACTIVE:
        return {}
    if memory.embedding is None:
        prefix = VECTORS_PREFIX
    elif awaits_uses(memory.meta):
        prefix = USES_PREFIX
    else:
        return {}
    return {
        "gsi1pk": f"{prefix}{_shard(memory.user_id)}",
        "gsi1sk": f"{to_storage(memory.created_at)}#{memory.user_id}#{memory.memory_id}",
    }


def thread_due_after(on: date) -> str:
    """The lowest thread index key past every thread due on or before `on`: the day and a
    separator sorting just after `#`, so ids with any character stay below it."""
    return f"{on.isoformat()}{chr(ord('#') + 1)}"


def said_at_or_before(said_before: datetime) -> str:
    """The lowest sweep index key past every entry said at or before `said_before`."""
    return f"{to_storage(said_before)}#{AFTER_IDS}"


def purge_pending_of(gsi1sk: str) -> tuple[str, str]:
    """(deleted_at in storage form, user id) from a pending-purge key."""
    _, _, rest = gsi1sk.partition("#")
    return sweep_time(gsi1sk), rest.rpartition("#")[0]


# ---- a user's rhythm (seed 003): one item in their partition --------------------------------

RHYTHM_SK = "RHYTHM"


# ---- a user's quota counters (domain/quotas.py): one item per quota per minute ---------------

QUOTA_PREFIX = "QUOTA#"


def quota_sk(quota: str, window: str) -> str:
    """The counter of one quota in one window (`domain/quotas.window_key`). No other query
    of a user's partition reaches `QUOTA#`, and counters carry no LSI key."""
    return f"{QUOTA_PREFIX}{quota}#{window}"


# ---- per-turn recall's digest markers (see `digests`) ---------------------------------------

DIGEST_PREFIX = "DIGEST#"


def digest_sk(memory_id: str) -> str:
    """The marker in a user's partition saying their row `memory_id` is in use, with what
    per-turn recall reads of it. No other query of a user's partition reaches `DIGEST#`,
    and markers carry no LSI key."""
    return f"{DIGEST_PREFIX}{memory_id}"


UNPURGED_PREFIX = "UNPURGED#"


def unpurged_sk(memory_id: str) -> str:
    """A copy of the tombstone TOMB#<memory_id> while its purge has not finished: what
    lets a turn read the pending tombstones without reading every tombstone the user
    ever had. No other query of a user's partition reaches `UNPURGED#`."""
    return f"{UNPURGED_PREFIX}{memory_id}"
