"""Rooms as the app drives them: open one, follow who joins and leaves, add what was said
(a room speaking again after a quiet spell gets fresh blocks), serve each persona its block,
and let a persona take its turn through the chat model.

Every message arms the room's quiet timer; when it fires with nothing newer said, the
room's write runs once per persona seated (`services/room_writes.py`). A turn sends the
model the persona's stored block byte for byte (built at open, join or leave, never per
turn) so the cached prefix survives; if the block cannot be had, the turn goes on
without it — the memory machinery degrades a turn, it never breaks it.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources

from chatmemory.domain.errors import InvalidField, ModelUnavailable, RoomNotFound
from chatmemory.domain.persona_block import CUE_PREFIX, OPENING_TURN, PersonaBlock
from chatmemory.domain.prompt import (
    PromptMessage,
    RenderedPrompt,
    SystemBlock,
    Turn,
    neutralise,
)
from chatmemory.domain.quotas import MODEL_TURNS, ROOM_LINES
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind, RoomMessage
from chatmemory.domain.threads import first_since_return
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs
from chatmemory.ports.model import Model, ReplyDone, ToolCall, Usage
from chatmemory.ports.stores import Stores
from chatmemory.services.idle import IDLE_AFTER
from chatmemory.services.quotas import QuotaGuard
from chatmemory.services.rooms import RoomBlocks

log = logging.getLogger(__name__)

#: how much of the room's transcript a turn shows the model (the block carries the rest)
TURN_WINDOW = 24
_WAITING = "(It is your turn to speak in the room.)"


@dataclass(frozen=True, slots=True)
class RoomTurn:
    """A persona's reply, as stored in the room, and what its prompt held."""

    message: RoomMessage
    block: PersonaBlock | None  # None when the block could not be had (a degraded turn)
    usage: Usage
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NewRoom:
    """What the app asks for; the service gives the room its id and its time."""

    kind: RoomKind
    personas: Sequence[str]
    members: Sequence[str] = ()
    incognito: bool = False
    fiction: bool = False
    room_id: str | None = None


class RoomService:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        blocks: RoomBlocks,
        jobs: Jobs,
        model: Model | Callable[[], Model],
        *,
        quiet_after: timedelta = IDLE_AFTER,
        quotas: QuotaGuard | None = None,
    ) -> None:
        self._quotas = quotas
        self._stores = stores
        self._clock = clock
        self._blocks = blocks
        self._jobs = jobs
        self._model_or_factory = model
        self.quiet_after = quiet_after

    @property
    def _model(self) -> Model:
        if not isinstance(self._model_or_factory, Model):
            self._model_or_factory = self._model_or_factory()
        return self._model_or_factory

    # ---- the room -------------------------------------------------------------------

    def open(self, new: NewRoom) -> Room:
        """Create the room and build each seated persona's block for who is there.
        ConcurrentChange if an app-chosen id is taken."""
        if not new.personas:
            raise InvalidField("personas", "a room seats at least one persona")
        if new.kind is RoomKind.PRIVATE and len(set(new.members)) > 1:
            raise InvalidField("members", "a private chat has one human")
        room = Room(
            room_id=new.room_id or f"room_{uuid.uuid4().hex}",
            kind=new.kind,
            created_at=self._clock.now(),
            incognito=new.incognito,
            fiction=new.fiction,
            personas=frozenset(new.personas),
            members=frozenset(new.members),
        )
        return self._blocks.open(room)

    def get(self, room_id: str) -> Room:
        room = self._stores.rooms.get_room(room_id)
        if room is None:
            raise RoomNotFound(room_id)
        return room

    def join(self, room_id: str, user_ids: Sequence[str]) -> Room:
        room = self.get(room_id)
        if room.kind is RoomKind.PRIVATE and len(room.members | set(user_ids)) > 1:
            raise InvalidField("user_id", "a private chat has one human")
        return self._blocks.join(room_id, user_ids)

    def leave(self, room_id: str, user_ids: Sequence[str]) -> Room:
        return self._blocks.leave(room_id, user_ids)

    # ---- what is said ---------------------------------------------------------------

    def post(self, room_id: str, messages: Sequence[NewRoomMessage]) -> list[RoomMessage]:
        """Store what was said, in order, and arm the quiet timer. Humans must be members
        and personas seated: a line by someone not in the room is refused, nothing kept."""
        room = self.get(room_id)
        if not messages:
            raise InvalidField("messages", "at least one message")
        for message in messages:
            _check_in_room(room, message.speaker)
        self._charge_lines(room, messages)
        now = self._clock.now()
        stored = self._stores.rooms.append_room_messages(room_id, messages, now)
        self._arm_quiet_timer(room_id, now)
        last = room.last_message_at
        if last is not None and now - last >= self.quiet_after:
            self._resume(room_id, last)
        return stored

    def _charge_lines(self, room: Room, messages: Sequence[NewRoomMessage]) -> None:
        """Each human's lines taken from their quota before any is stored (RateLimited,
        StorageFull); in a private chat the personas' lines count as its human's."""
        if self._quotas is None:
            return
        spoken = Counter(m.speaker[2:] for m in messages if m.speaker.startswith("u:"))
        if room.is_private_chat:
            [human] = room.members
            spoken[human] += sum(1 for m in messages if not m.speaker.startswith("u:"))
        for user_id, lines in sorted(spoken.items()):
            if lines:
                self._quotas.charge(user_id, ROOM_LINES, cost=lines)

    def context(self, room_id: str, persona: str) -> PersonaBlock:
        """The persona's block for the room as it is now: the same bytes every turn."""
        return self._blocks.block(room_id, persona)

    def preview(self, room_id: str, persona: str) -> tuple[RenderedPrompt, PersonaBlock | None]:
        """Exactly what the persona's next turn would send the model, and the block in it
        (None when the block could not be had): the leak exam reads this."""
        room = self.get(room_id)
        if persona not in room.personas:
            raise InvalidField("persona", "is not in this room")
        block = self._block_or_none(room, persona)
        recent = self._stores.rooms.list_room_messages(room_id, last=TURN_WINDOW)
        opening = (
            block is not None
            and CUE_PREFIX in block.text
            and first_since_return([(m.speaker, m.created_at) for m in recent], f"p:{persona}")
        )
        return render_room_turn(persona, room, block, recent, opening=opening), block

    def turn(self, room_id: str, persona: str, *, charged_to: str | None = None) -> RoomTurn:
        """The persona speaks: its block and the room's recent lines go to the model, the
        reply is stored as the persona's line. ModelUnavailable keeps nothing.

        `charged_to`: the user whose quota the turn is taken from (a user asking in their
        own private chat), RateLimited before anything is read when it is used up; None
        for the app credential, which acts for every user and is bounded by the API's
        throttle instead."""
        if charged_to is not None and self._quotas is not None:
            self._quotas.charge(charged_to, MODEL_TURNS)
        prompt, block = self.preview(room_id, persona)
        done = self._reply(prompt)
        text = done.text.strip()
        if not text:
            raise ModelUnavailable("the model ended without a reply")
        now = self._clock.now()
        stored = self._stores.rooms.append_room_messages(
            room_id, [NewRoomMessage(f"p:{persona}", text)], now
        )
        self._arm_quiet_timer(room_id, now)
        return RoomTurn(message=stored[0], block=block, usage=done.usage, model=self._model.name)

    def check_soon(self, room_id: str) -> None:
        """Ask for the room's quiet check now (the daily sweep hands a lost timer back)."""
        self._jobs.room_quiet_later(room_id, self._clock.now())

    # ---- helpers --------------------------------------------------------------------

    def _block_or_none(self, room: Room, persona: str) -> PersonaBlock | None:
        try:
            return self._blocks.block_in(room, persona)
        except Exception as exc:  # the turn goes on without what the persona remembers
            log.warning("persona block unavailable", extra={"error_type": type(exc).__name__})
            return None

    def _reply(self, prompt: RenderedPrompt) -> ReplyDone:
        def no_tools(call: ToolCall) -> str:
            return "No tools are available in a room."

        done: ReplyDone | None = None
        for event in self._model.reply(prompt, (), no_tools):
            if isinstance(event, ReplyDone):
                done = event
        if done is None or done.stop_reason == "refusal":
            raise ModelUnavailable("the model did not reply")
        return done

    def _resume(self, room_id: str, last_seen: datetime) -> None:
        """A room speaking again after a quiet spell gets fresh blocks (what its writes
        learned, the day's ages, the return greeting); a failure keeps the old ones."""
        try:
            self._blocks.resume(room_id, last_seen)
        except Exception as exc:
            log.warning("blocks not rebuilt", extra={"error_type": type(exc).__name__})

    def _arm_quiet_timer(self, room_id: str, at: datetime) -> None:
        try:
            self._jobs.room_quiet_later(room_id, at + self.quiet_after)
        except Exception as exc:  # the daily sweep catches a room whose timer was lost
            log.warning("quiet timer not armed", extra={"error_type": type(exc).__name__})


def _check_in_room(room: Room, speaker: str) -> None:
    kind, _, name = speaker.partition(":")
    if kind == "u" and name not in room.members:
        raise InvalidField("speaker", "is not a member of this room")
    if kind == "p" and name not in room.personas:
        raise InvalidField("speaker", "is not a persona of this room")


def _room_rules() -> str:
    return (resources.files("chatmemory.prompts") / "room_system.txt").read_text("utf-8")


def render_room_turn(
    persona: str,
    room: Room,
    block: PersonaBlock | None,
    recent: Sequence[RoomMessage],
    *,
    opening: bool = False,
) -> RenderedPrompt:
    """The prompt of a persona's turn: the rules, the persona's block as its own cached
    system block, then the room's recent lines (the persona's own as its turns, everyone
    else's as user turns naming the speaker). `opening`: this is the persona's first turn
    since the person came back, so the block's reunion cue is still to be acted on (a
    line after the last one says so). Pure, so a test can read exactly what a turn would
    send."""
    setting = "a private chat with one person" if room.is_private_chat else "a group room"
    rules_text = _room_rules().replace("{persona}", persona).replace("{setting}", setting)
    system = [SystemBlock(rules_text, cache=True)]
    if block is not None and block.text:
        system.append(SystemBlock(block.text, cache=True))
    own = f"p:{persona}"
    turns: list[Turn] = []
    for message in recent:
        if message.speaker == own:
            turn = Turn("assistant", message.text)
        else:
            turn = Turn("user", f"[{message.speaker}] {neutralise(message.text)}")
        if turns and turns[-1].role == turn.role:
            turns[-1] = Turn(turn.role, f"{turns[-1].content}\n{turn.content}")
        else:
            turns.append(turn)
    while turns and turns[0].role != "user":
        turns = turns[1:]
    if not turns or turns[-1].role != "user":
        turns.append(Turn("user", _WAITING))
    if opening:
        turns[-1] = Turn("user", f"{turns[-1].content}\n{OPENING_TURN}")
    messages = tuple(
        PromptMessage(turn.role, turn.content, cache=index == len(turns) - 2)
        for index, turn in enumerate(turns)
    )
    rendered = RenderedPrompt(system=tuple(system), messages=messages)
    return RenderedPrompt(
        system=rendered.system, messages=messages, tokens=estimate_tokens(rendered.text())
    )
