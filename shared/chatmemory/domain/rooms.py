"""The room: where personas and humans meet, and the switches that govern its memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.secrets import mask_secrets, secret_values
from chatmemory.domain.time import require_utc

# What a room line reads as once the user who said it forgot everything: their words
# are gone, the line's seq, speaker and time stay, so the transcript's numbering holds.
FORGOTTEN_LINE = "(deleted by its author)"


class RoomKind(StrEnum):
    """A private chat (one human with personas) or a group."""

    PRIVATE = "private"
    GROUP = "group"


@dataclass(frozen=True, slots=True, kw_only=True)
class Room:
    """A room as the memory rules see it.

    `incognito` rooms neither read nor write memories; `fiction` means a game or a
    role-play is running, so nothing said there is extracted as real life (seed 000 §2.1).
    `members` are the user ids of the humans in the room.
    """

    room_id: str
    kind: RoomKind
    created_at: datetime
    incognito: bool = False
    fiction: bool = False
    personas: frozenset[str] = frozenset()
    members: frozenset[str] = frozenset()
    # Bumped on every join or leave: a persona block records the version it was built for,
    # so a stale block is never served after the room's audience changed.
    version: int = 0
    last_seq: int = 0
    last_message_at: datetime | None = None
    # The last day a persona raised one of someone's threads here: one stamp for every
    # persona in the room, so two minds never both ask on one day (seed 004 law 8).
    threads_asked_on: date | None = None

    def __post_init__(self) -> None:
        rules.opaque_id("room_id", self.room_id)
        try:
            object.__setattr__(self, "kind", RoomKind(str(self.kind)))
        except ValueError as exc:
            raise InvalidField("kind", "must be one of: private, group") from exc
        object.__setattr__(self, "created_at", require_utc("created_at", self.created_at))
        for name in ("incognito", "fiction"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidField(name, "must be true or false")
        personas = frozenset(rules.persona(p, "personas") for p in self.personas)
        object.__setattr__(self, "personas", personas)
        members = frozenset(rules.user_id(m, "members") for m in self.members)
        object.__setattr__(self, "members", members)
        rules.int_range("version", self.version, 0)
        rules.int_range("last_seq", self.last_seq, 0)
        if self.last_message_at is not None:
            object.__setattr__(
                self, "last_message_at", require_utc("last_message_at", self.last_message_at)
            )
        if self.threads_asked_on is not None and type(self.threads_asked_on) is not date:
            raise InvalidField("threads_asked_on", "must be a date")

    @property
    def is_private_chat(self) -> bool:
        """One human alone with the personas: the only room v1 loads personal memories in."""
        return self.kind is RoomKind.PRIVATE and len(self.members) == 1

    def with_members(self, *, join: Sequence[str] = (), leave: Sequence[str] = ()) -> Room:
        """The room once these humans joined and left; the same room if nothing changed."""
        members = (self.members | frozenset(join)) - frozenset(leave)
        if members == self.members:
            return self
        return dataclasses.replace(self, members=members, version=self.version + 1)

    def numbered(self, messages: Sequence[NewRoomMessage], at: datetime) -> list[RoomMessage]:
        """`messages` as the room's next ones: seq last_seq+1, +2, … (the store writes them
        guarded on `last_seq`, so two appends never take the same seq)."""
        said = secret_values(new.text for new in messages)
        return [
            RoomMessage(
                room_id=self.room_id,
                seq=self.last_seq + offset,
                speaker=new.speaker,
                text=mask_secrets(new.text, said),  # secrets are never stored, in a room neither
                created_at=at,
            )
            for offset, new in enumerate(messages, start=1)
        ]

    def appended(self, stored: Sequence[RoomMessage], at: datetime) -> Room:
        """The room once `stored` (from `numbered`) are its newest messages."""
        if not stored:
            return self
        return dataclasses.replace(self, last_seq=stored[-1].seq, last_message_at=at)


def check_speaker(speaker: str) -> str:
    """`u:<user id>` (a human) or `p:<persona>` (a persona): who said a room message."""
    kind, _, name = speaker.partition(":")
    if kind == "u" and name:
        rules.user_id(name, "speaker")
        return speaker
    if kind == "p" and name:
        rules.persona(name, "speaker")
        return speaker
    raise InvalidField("speaker", "must be 'u:<user id>' or 'p:<persona>'")


@dataclass(frozen=True, slots=True)
class NewRoomMessage:
    """A room message to append; the room gives it its sequence number."""

    speaker: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RoomMessage:
    """One line of a room's transcript."""

    room_id: str
    seq: int
    speaker: str
    text: str
    created_at: datetime

    def __post_init__(self) -> None:
        rules.opaque_id("room_id", self.room_id)
        rules.int_range("seq", self.seq, 1)
        check_speaker(self.speaker)
        said_by_persona = self.speaker.startswith("p:")
        limit = rules.ASSISTANT_MESSAGE_MAX if said_by_persona else rules.MESSAGE_MAX
        rules.text("text", self.text, limit)
        object.__setattr__(self, "created_at", require_utc("created_at", self.created_at))

    @property
    def message_id(self) -> str:
        """Stable across reads: the room and the seq (evidence points at it)."""
        return f"{self.room_id}_{self.seq}"
