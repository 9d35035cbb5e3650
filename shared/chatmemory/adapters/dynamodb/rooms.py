"""Rooms on DynamoDB: everything of a room under its own partition `R#<room_id>` — the
ROOM item, MSG#<seq> messages, BLOCK#<persona> blocks and CURSOR#<persona> cursors —
and SPOKE#<room_id> markers in the partition of each user who said a line there.

The ROOM item sits in the sweep's index under QUIET#<shard> while some seated persona
has not read to its last message: a message puts it there, and the cursor move that
brings the last seated persona to the end takes it out, in the same write.

An append that holds a user's line also updates, in the same transaction, a marker in
their partition `U#<user>` naming the room (and counting the appends), so
`forget_speaker` reads the user's markers instead of scanning every room's transcript.
A room with a line of theirs always has its marker; a marker whose lines are forgotten
only costs a query.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

from pynamodb.expressions.condition import Condition, Or
from pynamodb.expressions.update import Action

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.room_mapping import (
    room_block_from_item,
    room_block_item,
    room_cursor_item,
    room_from_item,
    room_item,
    room_members,
    room_message_from_item,
    room_message_item,
)
from chatmemory.adapters.dynamodb.table import (
    TRANSACTION_MAX,
    LostRace,
    Table,
    Write,
    all_of,
    unique,
)
from chatmemory.domain import rules
from chatmemory.domain.errors import ConcurrentChange, InvalidField, RoomNotFound
from chatmemory.domain.persona_block import PersonaBlock
from chatmemory.domain.rooms import FORGOTTEN_LINE, NewRoomMessage, Room, RoomMessage
from chatmemory.ports.rooms import RoomStore


class DynamoRoomStore(RoomStore):
    """Rooms and what belongs to them; sequence numbers and the member version come from
    the ROOM item, each write guarded on what it read and retried through `optimistic`."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._cls = table.items.room

    def create_room(self, room: Room) -> None:
        item = room_item(self._table.items, room)
        quiet = _quiet_keys(room)
        if quiet:
            item.gsi1pk, item.gsi1sk = quiet["gsi1pk"], quiet["gsi1sk"]
        try:
            self._table.commit([Write("put", item, self._cls.sk.does_not_exist())])
        except LostRace as exc:
            raise ConcurrentChange("room id already exists") from exc

    def get_room(self, room_id: str) -> Room | None:
        item = self._table.get_at(self._cls, keys.room_pk(room_id), keys.ROOM_SK)
        return None if item is None else room_from_item(item)

    def change_members(
        self, room_id: str, *, join: Sequence[str] = (), leave: Sequence[str] = ()
    ) -> Room:
        cls = self._cls

        def change() -> Room:
            room = self._existing(room_id)
            changed = room.with_members(join=join, leave=leave)
            if changed is room:
                return room
            actions = [cls.members.set(room_members(changed)), cls.version.set(changed.version)]
            self._table.commit([self._update(room_id, actions, cls.version == room.version)])
            return changed

        return self._table.optimistic(change, what="its members changed", changing="the room")

    def append_room_messages(
        self, room_id: str, messages: Sequence[NewRoomMessage], at: datetime
    ) -> list[RoomMessage]:
        cls = self._cls
        message_cls = self._table.items.room_message
        spoke = self._spoke_writes(room_id, messages)
        if 1 + len(messages) + len(spoke) > TRANSACTION_MAX:  # the room, lines, markers
            raise InvalidField("messages", "too many to store in one atomic write")

        def append() -> list[RoomMessage]:
            room = self._existing(room_id)
            stored = room.numbered(messages, at)
            if not stored:
                return []
            moved = room.appended(stored, at)
            actions = [cls.last_seq.set(moved.last_seq), cls.last_message_at.set(at)]
            quiet = _quiet_keys(moved)
            if quiet:  # every seated persona is now behind: listed for the sweep
                actions += [cls.gsi1pk.set(quiet["gsi1pk"]), cls.gsi1sk.set(quiet["gsi1sk"])]
            # Guarded on the last_seq the append numbered from: two appends that read the
            # same room cannot both commit, so they never share a seq.
            writes = [self._update(room_id, actions, cls.last_seq == room.last_seq)]
            writes += [
                Write(
                    "put",
                    room_message_item(self._table.items, message),
                    message_cls.sk.does_not_exist(),
                )
                for message in stored
            ]
            self._table.commit([*writes, *spoke])
            return stored

        return self._table.optimistic(append, what="a message was appended", changing="the room")

    def list_room_messages(
        self,
        room_id: str,
        *,
        after_seq: int = 0,
        upto_seq: int | None = None,
        last: int | None = None,
    ) -> list[RoomMessage]:
        window = keys.seq_range(after_seq, upto_seq, last)
        if window is None:
            return []
        first, final = window
        cls = self._table.items.room_message
        rows = cls.query(
            keys.room_pk(room_id),
            cls.sk.between(keys.room_message_sk(first), keys.room_message_sk(final)),
            consistent_read=True,
            scan_index_forward=last is None,
            limit=last,
        )
        return sorted((room_message_from_item(row) for row in rows), key=lambda m: m.seq)

    def forget_speaker(self, user_id: str) -> int:
        rules.user_id(user_id)
        spoke = self._table.items.spoke
        rooms = [
            marker.room_id
            for marker in spoke.query(
                keys.pk(user_id), spoke.sk.startswith(keys.SPOKE_PREFIX), consistent_read=True
            )
        ]
        return sum(self._forget_in(user_id, room_id) for room_id in rooms)

    def mark_threads_asked(self, room_id: str, on: date) -> None:
        cls = self._cls
        # Only ever forward: a stamp of that day or a later one (a skewed clock) stays.
        later = Or(cls.threads_asked_on.does_not_exist(), cls.threads_asked_on < on)
        try:
            self._table.commit([self._update(room_id, [cls.threads_asked_on.set(on)], later)])
        except LostRace:
            self._existing(room_id)  # RoomNotFound; else the stamp already said as much

    def put_block(self, room_id: str, version: int, block: PersonaBlock, at: datetime) -> None:
        rules.opaque_id("room_id", room_id)
        rules.persona(block.persona)
        rules.int_range("version", version, 0)
        cls = self._table.items.room_block
        item = room_block_item(self._table.items, room_id, version, block, at)
        try:
            self._table.commit(
                [Write("put", item, Or(cls.sk.does_not_exist(), cls.version <= version))]
            )
        except LostRace:
            return  # a block built for newer members is already there: it stays

    def get_block(self, room_id: str, persona: str, version: int) -> PersonaBlock | None:
        cls = self._table.items.room_block
        item = self._table.get_at(cls, keys.room_pk(room_id), keys.room_block_sk(persona))
        if item is None or int(item.version) != version:
            return None
        return room_block_from_item(item)

    def extraction_cursor(self, room_id: str, persona: str) -> int:
        cls = self._table.items.room_cursor
        item = self._table.get_at(cls, keys.room_pk(room_id), keys.room_cursor_sk(persona))
        return 0 if item is None else int(item.upto_seq)

    def advance_room_extraction(
        self, room_id: str, persona: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        rules.persona(persona)
        rules.int_range("upto_seq", upto_seq, 0)

        def advance() -> bool:
            room = self.get_room(room_id)
            if room is None or upto_seq > room.last_seq:
                return False
            cursors = self._cursors(room_id)
            if cursors.get(persona, 0) != expected_upto_seq:
                return False
            self._table.commit(self._advanced(room, persona, upto_seq, expected_upto_seq, cursors))
            return True

        return self._table.optimistic(advance, what="a cursor moved", changing="the room")

    def quiet_rooms(self, said_before: datetime, limit: int = 100) -> list[str]:
        rules.int_range("limit", limit, 1)
        cls = self._cls
        below = keys.said_at_or_before(said_before)
        found: list[tuple[str, str]] = []
        for shard in keys.pending_shards(keys.QUIET_PREFIX):
            for row in cls.pending.query(shard, cls.gsi1sk < below, limit=limit, page_size=limit):
                found.append((str(row.gsi1sk), keys.room_of(row.pk)))
        # The index key is <last_message_at>#<room_id>: its order is the listing's.
        found.sort()
        return [room_id for _, room_id in found[:limit]]

    # ---- pieces of the writes ---------------------------------------------------------------

    def _existing(self, room_id: str) -> Room:
        room = self.get_room(room_id)
        if room is None:
            raise RoomNotFound(room_id)
        return room

    def _spoke_writes(self, room_id: str, messages: Sequence[NewRoomMessage]) -> list[Write]:
        """A marker update for every user with a line among `messages`, for the append's
        transaction: an update, not a put, so each append adds one to the marker's count,
        the token `forget_speaker` checks before it deletes the marker."""
        spoke = self._table.items.spoke
        users = unique(m.speaker[2:] for m in messages if m.speaker.startswith("u:"))
        return [
            Write(
                "update",
                spoke(keys.pk(user), keys.spoke_sk(room_id)),
                actions=(spoke.user_id.set(user), spoke.room_id.set(room_id), spoke.appends.add(1)),
            )
            for user in users
        ]

    def _forget_in(self, user_id: str, room_id: str) -> int:
        """Replace the user's lines in the room, then delete the marker — unless an append
        with a line of theirs landed meanwhile (its count moved on): then go round again."""
        cls, spoke = self._table.items.room_message, self._table.items.spoke
        marker_key = spoke(keys.pk(user_id), keys.spoke_sk(room_id))
        speaker = f"u:{user_id}"
        changed = 0

        def sweep() -> None:
            nonlocal changed
            marker = self._table.get(spoke, user_id, keys.spoke_sk(room_id))
            if marker is None:
                return
            rows = cls.query(
                keys.room_pk(room_id),
                cls.sk.startswith(keys.ROOM_MESSAGE_PREFIX),
                filter_condition=all_of(cls.speaker == speaker, cls.text != FORGOTTEN_LINE),
                consistent_read=True,
            )
            for row in rows:
                changed += self._forget_line(room_id, int(row.seq), speaker)
            self._table.commit([Write("delete", marker_key, spoke.appends == marker.appends)])

        self._table.optimistic(sweep, what="a speaker was forgotten", changing="the room")
        return changed

    def _forget_line(self, room_id: str, seq: int, speaker: str) -> int:
        """1 once the line reads `FORGOTTEN_LINE`, 0 if it already did. Guarded on the line
        existing and being the speaker's, so a line is never written into being again."""
        cls = self._table.items.room_message
        key = cls(keys.room_pk(room_id), keys.room_message_sk(seq))
        guard = all_of(cls.sk.exists(), cls.speaker == speaker, cls.text != FORGOTTEN_LINE)
        try:
            self._table.commit([Write("update", key, guard, (cls.text.set(FORGOTTEN_LINE),))])
        except LostRace:
            return 0  # forgotten meanwhile (a concurrent call), or no longer there
        return 1

    def _cursors(self, room_id: str) -> dict[str, int]:
        """Every persona's cursor in the room that was ever written, by persona."""
        cls = self._table.items.room_cursor
        rows = cls.query(
            keys.room_pk(room_id),
            cls.sk.startswith(keys.ROOM_CURSOR_PREFIX),
            consistent_read=True,
        )
        return {row.persona: int(row.upto_seq) for row in rows}

    def _advanced(
        self,
        room: Room,
        persona: str,
        upto_seq: int,
        expected_upto_seq: int,
        cursors: dict[str, int],
    ) -> list[Write]:
        """The cursor's write, with the ROOM item's: out of the sweep's index if every
        seated persona has now read to the last message, back in it if this one moved
        back from the end, else a check that the room still reaches `upto_seq`."""
        cls, cursor_cls = self._cls, self._table.items.room_cursor
        read_at: Condition = cursor_cls.upto_seq == expected_upto_seq
        if persona not in cursors:  # a cursor never written reads as 0
            read_at = Or(cursor_cls.sk.does_not_exist(), read_at)
        cursor = room_cursor_item(self._table.items, room.room_id, persona, upto_seq)
        writes = [Write("put", cursor, read_at)]
        room_key = cls(keys.room_pk(room.room_id), keys.ROOM_SK)
        if upto_seq < room.last_seq:
            quiet = _quiet_keys(room)
            if quiet and persona in room.personas and expected_upto_seq >= room.last_seq:
                # Moved back from the end: behind again, so listed again.
                back = (cls.gsi1pk.set(quiet["gsi1pk"]), cls.gsi1sk.set(quiet["gsi1sk"]))
                return [*writes, self._update(room.room_id, back, cls.last_seq >= upto_seq)]
            return [*writes, Write("check", room_key, cls.last_seq >= upto_seq)]
        # This move may finish the room, so it is decided on the others' cursors as read:
        # they are checked in the same transaction, and two personas finishing at once
        # cannot both conclude the other is still behind.
        after = {**cursors, persona: upto_seq}
        others = sorted(room.personas - {persona})
        writes += [self._cursor_as_read(room.room_id, other, cursors) for other in others]
        if all(after.get(seated, 0) >= room.last_seq for seated in room.personas):
            out = (cls.gsi1pk.remove(), cls.gsi1sk.remove())
            return [*writes, self._update(room.room_id, out, cls.last_seq == room.last_seq)]
        return [*writes, Write("check", room_key, cls.last_seq >= upto_seq)]

    def _cursor_as_read(self, room_id: str, persona: str, cursors: dict[str, int]) -> Write:
        cls = self._table.items.room_cursor
        key = cls(keys.room_pk(room_id), keys.room_cursor_sk(persona))
        if persona not in cursors:
            return Write("check", key, cls.sk.does_not_exist())
        return Write("check", key, cls.upto_seq == cursors[persona])

    def _update(self, room_id: str, actions: Sequence[Action], condition: Condition) -> Write:
        """An update of a ROOM item that exists and meets `condition`."""
        cls = self._cls
        item = cls(keys.room_pk(room_id), keys.ROOM_SK)
        return Write("update", item, all_of(cls.sk.exists(), condition), tuple(actions))


def _quiet_keys(room: Room) -> dict[str, str]:
    """The sweep's index keys of a room with messages no seated persona has read yet
    (right after an append, or a room created with a transcript), else none."""
    if not room.personas or room.last_seq == 0 or room.last_message_at is None:
        return {}
    return keys.quiet_room_keys(room.room_id, room.last_message_at)
