"""One chat turn: the product's main job.

build the context (exactly what /v1/context returns) → stream the model's reply, running
save_memory when it asks → once the reply is complete, store the exchange (and a new
conversation) in one atomic write, then the memories the model saved, linked to the
user's message → reinforce the memories used → fold later if the window is full.
If the model fails, nothing of the turn is kept.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from chatmemory.domain import rules, write_filter
from chatmemory.domain.cadence import COLD_DELAY, asks_to_remember_conversation
from chatmemory.domain.conversation import Conversation, NewMessage, Role
from chatmemory.domain.errors import DomainError, InvalidField, ModelUnavailable
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.extraction import looks_pasted
from chatmemory.domain.ids import new_conversation_id, new_event_id
from chatmemory.domain.prompt import UsedMemory
from chatmemory.domain.quotas import DEEP_WRITE_COST, MODEL_TURNS
from chatmemory.domain.secrets import find_secret, without_secrets
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.domain.uses import MAX_USES, clean_uses
from chatmemory.ports.clock import Clock
from chatmemory.ports.jobs import Jobs
from chatmemory.ports.model import Model, ReplyDelta, ReplyDone, ToolCall, ToolSpec
from chatmemory.ports.stores import Stores
from chatmemory.services.after_turn import AfterTurn, StoredExchange
from chatmemory.services.context import BuiltContext, ContextRequest, ContextService
from chatmemory.services.idle import IDLE_AFTER, IdleDelays
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.quotas import QuotaGuard
from chatmemory.services.rhythm import RhythmKeeper

log = logging.getLogger(__name__)

TEMPORARY_TTL = timedelta(hours=24)

SAVE_MEMORY = ToolSpec(
    name="save_memory",
    description=(
        "Save one standalone sentence about the user that they asked you to remember "
        '("remember that …") or a correction of something you remembered. Write it in the '
        'third person without their name ("Is vegetarian."). Never save secrets '
        "(passwords, card or id numbers) or things they did not ask you to keep."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": rules.EXTRACTED_TEXT_MAX},
            "category": {
                "type": "string",
                "description": "snake_case, e.g. diet, location, work, family, pets, health",
            },
            "key": {
                "type": "string",
                "description": "for standing facts a newer one replaces, e.g. home_city, diet, job",
            },
            "uses": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": MAX_USES,
                "description": "short requests this fact should change, as the user would ask them",
            },
            "importance": {"type": "integer", "minimum": 1, "maximum": 10},
            "replaces": {
                "type": "string",
                "description": "the number of the remembered fact this corrects, if any",
            },
        },
        "required": ["text", "category"],
    },
)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    user_id: str
    message: str
    conversation_id: str | None = None
    temporary: bool = False
    persona: str | None = None


@dataclass(frozen=True, slots=True)
class ChatResult:
    conversation_id: str
    message_id: str
    reply: str
    memories_used: list[str]
    saved: list[str]
    model: str
    used_in: tuple[UsedMemory, ...] = ()


@dataclass
class _Saves:
    """What the model asked to save; written only once its reply is complete."""

    context: BuiltContext
    message: str
    pending: list[tuple[NewMemory, str | None]] = field(default_factory=list)

    def run(self, call: ToolCall) -> str:
        if call.name != SAVE_MEMORY.name:
            return f"unknown tool {call.name}"
        if looks_pasted(self.message):
            # Text the user pasted is not about the user: it cannot plant a memory.
            return (
                "not saved: this message quotes or pastes material; only what the user "
                "says about themselves is kept"
            )
        if write_filter.instruction_shape(self.message):
            # A message that tries to steer the assistant cannot plant a memory either.
            return "not saved: this message reads as instructions to the assistant"
        try:
            new, replaces = self._parse(call.arguments)
        except (InvalidField, ValueError, TypeError) as exc:
            return f"not saved: {exc}"
        screened, left_out = _without_secret(new)
        refused = write_filter.first_refusal(
            write_filter.memory_fields(screened.text, uses=screened.uses, key=screened.key)
        )
        if refused is not None:
            return f"not saved: {refused}"
        self.pending.append((screened, replaces))
        return f"saved{left_out} — it will be remembered from the next message on"

    def _parse(self, arguments: dict[str, Any]) -> tuple[NewMemory, str | None]:
        text = rules.text("text", str(arguments.get("text", "")).strip(), rules.MEMORY_TEXT_MAX)
        category = rules.category(str(arguments.get("category") or rules.DEFAULT_CATEGORY))
        key = arguments.get("key")
        uses = arguments.get("uses") or []
        importance = int(arguments.get("importance") or 7)  # asked for: above the mundane
        new = NewMemory(
            text=text,
            category=category,
            persona=self.context.persona,
            key=rules.key(str(key)) if key else None,
            importance=min(10, max(1, importance)),
            uses=clean_uses(uses),
        )
        return new, self._numbered(arguments.get("replaces"))

    def _numbered(self, number: object) -> str | None:
        """The model names a remembered fact by its number, never by id; unknown → none."""
        if number is None:
            return None
        try:
            index = int(str(number).strip().lstrip("#")) - 1
        except ValueError:
            return None
        memories = self.context.blocks.memories
        return memories[index].memory_id if 0 <= index < len(memories) else None


def _without_secret(new: NewMemory) -> tuple[NewMemory, str]:
    """Keep the facts, drop the secret ("my PIN is 4821 and I'm allergic to peanuts"): the
    memory without the clauses that hold one, and a note saying what was left out. When
    nothing but the secret is there, the memory comes back whole for the filter to refuse."""
    secret = find_secret(new.text)
    kept = without_secrets(new.text) if secret else new.text
    if not secret or not kept:
        return new, ""
    return dataclasses.replace(new, text=kept), f" (without the {secret}: never stored)"


class ChatService:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        *,
        context: ContextService,
        model: Model,
        memories: MemoryService,
        jobs: Jobs,
        idle_after: timedelta = IDLE_AFTER,
        idle_cold_after: timedelta = COLD_DELAY,
        rhythm: RhythmKeeper | None = None,
        quotas: QuotaGuard | None = None,
    ) -> None:
        self._quotas = quotas
        self._stores = stores
        self._clock = clock
        self._context = context
        self._model = model
        self._memories = memories
        # cold or warm, judged as the idle check judges it (services/idle.py)
        idle = IdleDelays(stores, warm=idle_after, cold=idle_cold_after)
        self._after = AfterTurn(stores, jobs, idle, rhythm)

    def turn(self, request: ChatRequest) -> Iterator[ReplyDelta | ChatResult]:
        """Stream the reply's pieces, then one ChatResult once the turn is stored.
        RateLimited, before anything is read or written, when the user's turns for this
        minute are used up."""
        self._charge(request)
        built = self._context.build(
            ContextRequest(
                user_id=request.user_id,
                message=request.message,
                conversation_id=request.conversation_id,
                temporary=request.temporary,
                persona=request.persona,
            )
        )
        saves = _Saves(built, request.message)
        tools = [SAVE_MEMORY] if built.memory_on else []
        done: ReplyDone | None = None
        for event in self._model.reply(built.rendered, tools, saves.run):
            if isinstance(event, ReplyDelta):
                yield event
            else:
                done = event
        if done is None:  # a model that ends without its done event did not answer
            raise ModelUnavailable("the model ended without finishing its reply")
        if done.stop_reason == "refusal":
            # A refused turn must not be continued from: keep none of it, save nothing.
            yield self._refused(built, done)
            return
        yield self._store_turn(request, built, done, saves)

    def _charge(self, request: ChatRequest) -> None:
        """Take the turn from the user's quota. Asking to remember the whole conversation
        costs more: it starts a deep read of it with the stronger model at once."""
        if self._quotas is None:
            return
        deep = not request.temporary and asks_to_remember_conversation(request.message)
        cost = DEEP_WRITE_COST if deep else 1
        self._quotas.charge(request.user_id, MODEL_TURNS, cost=cost)

    def _refused(self, built: BuiltContext, done: ReplyDone) -> ChatResult:
        conversation_id = built.conversation.conversation_id if built.conversation else ""
        return ChatResult(
            conversation_id=conversation_id,
            message_id="",
            reply=done.text,
            memories_used=[],
            saved=[],
            model=self._model.name,
        )

    def _store_turn(
        self, request: ChatRequest, built: BuiltContext, done: ReplyDone, saves: _Saves
    ) -> ChatResult:
        now = self._clock.now()
        conversation = built.conversation
        create: Conversation | None = None
        if conversation is None:
            conversation_id = new_conversation_id()
            create = Conversation(
                user_id=request.user_id,
                conversation_id=conversation_id,
                created_at=now,
                updated_at=now,
                persona=built.persona,
                temporary=built.temporary,
                expires_at=now + TEMPORARY_TTL if built.temporary else None,
            )
        else:
            conversation_id = conversation.conversation_id
        # Every memory whose words were in the prompt: a reply may quote any of them, so
        # deleting one withdraws the reply (context.py) and rewrites summaries (purge.py).
        used = built.memories_used
        user_message, reply_message = self._stores.conversations.append_messages(
            request.user_id,
            conversation_id,
            [
                NewMessage(Role.USER, request.message, estimate_tokens(request.message)),
                NewMessage(Role.ASSISTANT, done.text, estimate_tokens(done.text), tuple(used)),
            ],
            now,
            create=create,
        )
        saved = self._save(request.user_id, conversation_id, user_message.message_id, saves)
        recalled = built.recalled_ids  # chosen for this message: a use that reinforces them
        if recalled:
            self._stores.memories.record_use(
                request.user_id,
                recalled,
                now,
                [self._use_event(request.user_id, m, now) for m in recalled],
            )
        self._after.follow(
            StoredExchange(
                user_id=request.user_id,
                conversation_id=conversation_id,
                persona=built.persona,
                writes_for=conversation.persona if conversation is not None else built.persona,
                message=request.message,
                last_seq=reply_message.seq,
                read_upto=conversation.extracted_upto_seq if conversation else 0,
                memory_on=built.memory_on,
                temporary=built.temporary,
                at=now,
            )
        )
        return ChatResult(
            conversation_id=conversation_id,
            message_id=reply_message.message_id,
            reply=done.text,
            memories_used=used,
            used_in=built.used,
            saved=saved,
            model=self._model.name,
        )

    def _save(
        self, user_id: str, conversation_id: str, source_message_id: str, saves: _Saves
    ) -> list[str]:
        saved = []
        for new, replaces in saves.pending:
            linked = NewMemory(
                text=new.text,
                category=new.category,
                persona=new.persona,
                key=new.key,
                importance=new.importance,
                uses=new.uses,
                source_message_id=source_message_id,
                room_id=conversation_id,
            )
            try:
                memory = self._memories.remember_from_chat(
                    user_id, linked, replaces=replaces, actor=Actor.MODEL
                )
            except DomainError as exc:  # e.g. memory switched off a moment ago
                log.info("a save_memory call was not applied", extra={"reason": exc.code})
                continue
            saved.append(memory.memory_id)
        return saved

    @staticmethod
    def _use_event(user_id: str, memory_id: str, at: datetime) -> MemoryEvent:
        return MemoryEvent(
            user_id=user_id,
            memory_id=memory_id,
            event_id=new_event_id(at),
            op=Op.USE,
            actor=Actor.SYSTEM,
            at=at,
        )
