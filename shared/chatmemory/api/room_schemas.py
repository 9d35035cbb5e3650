"""Request and response models of the Rooms API (docs/api.md "Rooms"), validated by pydantic."""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

from chatmemory.api.schemas import ChatMessage, PersonaName, UsedMemoryOut
from chatmemory.domain import rules
from chatmemory.domain.persona_block import PersonaBlock
from chatmemory.domain.rooms import Room, RoomKind, RoomMessage, check_speaker
from chatmemory.domain.time import to_api
from chatmemory.ports.model import Usage

#: What one call may carry: a room's cast, the humans joined or left at once, the lines
#: posted at once (a burst the app batches; a transcript is posted as it happens).
PERSONAS_MAX: Final = 16
MEMBERS_MAX: Final = 64
MESSAGES_MAX: Final = 20

RoomIdValue = Annotated[
    str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$", examples=["room_42"])
]


def _user_id(value: str) -> str:
    return rules.user_id(value, "user_id")


UserIdValue = Annotated[
    str,
    Field(min_length=1, max_length=rules.USER_ID_MAX, examples=["dan"]),
    AfterValidator(_user_id),
]


def _speaker(value: str) -> str:
    return check_speaker(value)


Speaker = Annotated[
    str,
    Field(
        min_length=3,
        max_length=rules.USER_ID_MAX + 2,
        description="`u:<user id>` for a human member, `p:<persona>` for a seated persona.",
        examples=["u:dan", "p:warren"],
    ),
    AfterValidator(_speaker),
]


# ---- requests ----------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoomCreate(_Body):
    kind: RoomKind = Field(
        description="`private`: one human with the personas; `group`: any number.",
        examples=["private"],
    )
    personas: list[PersonaName] = Field(
        min_length=1, max_length=PERSONAS_MAX, examples=[["warren"]]
    )
    members: list[UserIdValue] = Field(
        default_factory=list,
        max_length=MEMBERS_MAX,
        description="The humans in the room (user ids). A private room has at most one.",
    )
    incognito: StrictBool = Field(default=False, description="Reads no memory and writes none.")
    fiction: StrictBool = Field(
        default=False, description="A game or a role-play runs here: nothing said is extracted."
    )
    room_id: RoomIdValue | None = Field(
        default=None, description="The app's own id for the room; omitted: one is made."
    )


class MembersJoin(_Body):
    user_ids: list[UserIdValue] = Field(min_length=1, max_length=MEMBERS_MAX, examples=[["cara"]])


class RoomMessageIn(_Body):
    speaker: Speaker
    text: ChatMessage


class RoomMessagesPost(_Body):
    messages: list[RoomMessageIn] = Field(
        min_length=1,
        max_length=MESSAGES_MAX,
        description=f"In the order they were said; at most {MESSAGES_MAX} per call.",
        examples=[[{"speaker": "u:dan", "text": "I sold the flat in Xuhui last month."}]],
    )


class RoomTurnRequest(_Body):
    persona: PersonaName | None = Field(
        default=None,
        description="The seated persona who speaks; may be left out when the room seats one.",
    )


# ---- responses ---------------------------------------------------------------------------


class RoomOut(BaseModel):
    room_id: str
    kind: str
    incognito: bool
    fiction: bool
    personas: list[str]
    members: list[str]
    version: int = Field(description="Moves on every join or leave (each rebuilds the blocks).")
    last_seq: int
    created_at: str
    last_message_at: str | None
    threads_asked_on: str | None = Field(
        default=None,
        description="The last day (YYYY-MM-DD) a persona raised someone's thread here: "
        "one ask per room per day, across personas.",
    )

    @classmethod
    def of(cls, room: Room) -> RoomOut:
        return cls(
            room_id=room.room_id,
            kind=room.kind.value,
            incognito=room.incognito,
            fiction=room.fiction,
            personas=sorted(room.personas),
            members=sorted(room.members),
            version=room.version,
            last_seq=room.last_seq,
            created_at=to_api(room.created_at),
            last_message_at=(
                None if room.last_message_at is None else to_api(room.last_message_at)
            ),
            threads_asked_on=(
                None if room.threads_asked_on is None else room.threads_asked_on.isoformat()
            ),
        )


class RoomMessageOut(BaseModel):
    message_id: str
    seq: int
    speaker: str
    text: str
    created_at: str

    @classmethod
    def of(cls, message: RoomMessage) -> RoomMessageOut:
        return cls(
            message_id=message.message_id,
            seq=message.seq,
            speaker=message.speaker,
            text=message.text,
            created_at=to_api(message.created_at),
        )


class RoomMessagesOut(BaseModel):
    messages: list[RoomMessageOut]


class RoomContextOut(BaseModel):
    persona: str
    text: str = Field(description="The persona's block, byte for byte what its turns send.")
    memory_ids: list[str]
    chars_current: int
    chars_limit: int
    meter: str = Field(description='"chars_current / chars_limit", as the manage page shows it.')
    room_version: int = Field(description="The room's version the block was built for.")

    @classmethod
    def of(cls, block: PersonaBlock, room_version: int) -> RoomContextOut:
        return cls(
            persona=block.persona,
            text=block.text,
            memory_ids=list(block.memory_ids),
            chars_current=block.chars_current,
            chars_limit=block.chars_limit,
            meter=block.meter,
            room_version=room_version,
        )


class UsageOut(BaseModel):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int

    @classmethod
    def of(cls, usage: Usage) -> UsageOut:
        return cls(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )


class RoomTurnOut(BaseModel):
    message: RoomMessageOut = Field(description="The persona's reply, as stored in the room.")
    memory_ids: list[str] = Field(description="ids in the persona's block for this turn")
    memories_used: list[str] = Field(
        description="Every memory whose words are in this turn's prompt (the block's)."
    )
    memories_used_in: list[UsedMemoryOut] = Field(
        description="The same memories, each with the block that carried it."
    )
    meter: str | None = Field(description="The block's meter; null when the turn had no block.")
    usage: UsageOut
    model: str = Field(description='the model that answered ("offline": the stand-in)')
