"""Request and response models of `POST /v1/observe` (docs/api.md "Observe")."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

from chatmemory.api.schemas import ChatMessage, PersonaName
from chatmemory.domain import rules
from chatmemory.domain.observed_turn import TURN_ID_MAX
from chatmemory.domain.observed_turn import turn_id as checked_turn_id
from chatmemory.services.observe import Observed


def _reply(value: str) -> str:
    return rules.text("assistant", value, rules.ASSISTANT_MESSAGE_MAX, allow_empty=True)


TurnId = Annotated[
    str,
    Field(min_length=1, max_length=TURN_ID_MAX, pattern=r"^[A-Za-z0-9_.:-]+$"),
    AfterValidator(checked_turn_id),
]
Reply = Annotated[str, Field(max_length=rules.ASSISTANT_MESSAGE_MAX), AfterValidator(_reply)]


class ObserveBody(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    conversation_id: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="Omitted: the turn starts a new conversation."
    )
    turn_id: TurnId = Field(
        description="Your id for this turn, 1..128 letters, digits and _ . : - (a uuid, or "
        "your conversation's id and the turn's number). Unique per user: the same id "
        "sent again is a retry and stores nothing twice.",
        examples=["7f9c2e4a-turn-12"],
    )
    user: ChatMessage = Field(description="What the user said, 1..8000 characters.")
    assistant: Reply = Field(
        default="", description="What the assistant replied, 0..32000 characters."
    )
    persona: PersonaName | None = Field(default=None, description='Default "assistant".')
    temporary: StrictBool = Field(
        default=False, description="Learns nothing; the messages expire (a new conversation)."
    )


class ObservedOut(BaseModel):
    conversation_id: str
    message_ids: list[str] = Field(description="The user's message, then the reply.")
    stored: bool = Field(description="false: this turn id was stored before; nothing was written.")
    learns: bool = Field(
        description="true: the background write will learn from it once the conversation is "
        "quiet; false with memory off, the persona muted, or a temporary chat."
    )

    @classmethod
    def of(cls, observed: Observed) -> ObservedOut:
        return cls(
            conversation_id=observed.conversation_id,
            message_ids=observed.message_ids,
            stored=observed.stored,
            learns=observed.learns,
        )
