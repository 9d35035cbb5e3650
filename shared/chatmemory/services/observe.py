"""A turn that happened elsewhere, stored as if the chat had run here (`POST /v1/observe`).

An agent with its own model (an MCP host, an app) reports each turn once it is over: the
user's message and the reply go into the conversation exactly as a chat turn's would, and
from there on it is a chat turn (`services/after_turn.py`): the idle timer is re-armed, so
the background write learns from it once the conversation goes quiet; said with memory
off or the persona muted, it is never read; a temporary one expires unread. No model is
called and nothing is recalled. The turn id is the client's, so a retry after a lost
answer stores nothing twice (`ConversationStore.append_observed`). Each turn is taken from
the user's observed-turns quota first (the background write it re-arms calls a model).
"""

from __future__ import annotations

from dataclasses import dataclass

from chatmemory.domain import rules
from chatmemory.domain.conversation import Conversation, NewMessage, Role
from chatmemory.domain.errors import ConcurrentChange
from chatmemory.domain.ids import new_conversation_id
from chatmemory.domain.observed_turn import fingerprint, turn_id
from chatmemory.domain.quotas import OBSERVED_TURNS
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores
from chatmemory.services.after_turn import AfterTurn, StoredExchange
from chatmemory.services.chat import TEMPORARY_TTL
from chatmemory.services.context import turn_scope
from chatmemory.services.quotas import QuotaGuard


@dataclass(frozen=True, slots=True)
class ObserveRequest:
    user_id: str
    turn_id: str  # the client's: the same id is the same turn
    user_message: str
    assistant_message: str
    conversation_id: str | None = None
    persona: str | None = None
    temporary: bool = False


@dataclass(frozen=True, slots=True)
class Observed:
    conversation_id: str
    message_ids: list[str]  # the user's message, then the reply
    stored: bool  # False: this turn was stored before (a retry), nothing was written now
    learns: bool  # the background write will read it: memory on, persona heard, kept


class ObserveService:
    def __init__(
        self, stores: Stores, clock: Clock, after: AfterTurn, quotas: QuotaGuard | None = None
    ) -> None:
        self._stores = stores
        self._clock = clock
        self._after = after
        self._quotas = quotas

    def observe(self, request: ObserveRequest) -> Observed:
        """Store the turn once; ConcurrentChange when its id was used for another turn,
        RateLimited (nothing read or written) past the user's observed turns this minute.
        A retry counts as a turn: the quota is taken before the store is asked."""
        turn_id(request.turn_id)
        rules.text("user", request.user_message, rules.MESSAGE_MAX)
        rules.text(
            "assistant", request.assistant_message, rules.ASSISTANT_MESSAGE_MAX, allow_empty=True
        )
        if self._quotas is not None:
            self._quotas.charge(request.user_id, OBSERVED_TURNS)
        scope = turn_scope(
            self._stores,
            request.user_id,
            request.conversation_id,
            persona=request.persona,
            temporary=request.temporary,
        )
        now = self._clock.now()
        conversation = scope.conversation
        create: Conversation | None = None
        if conversation is not None:
            conversation_id = conversation.conversation_id
        else:
            conversation_id = new_conversation_id()
            create = Conversation(
                user_id=request.user_id,
                conversation_id=conversation_id,
                created_at=now,
                updated_at=now,
                persona=scope.persona,
                temporary=scope.temporary,
                expires_at=now + TEMPORARY_TTL if scope.temporary else None,
            )
        asked = fingerprint(
            user_message=request.user_message,
            assistant_message=request.assistant_message,
            conversation_id=request.conversation_id,
            persona=request.persona,
            temporary=request.temporary,
        )
        turn, stored = self._stores.conversations.append_observed(
            request.user_id,
            conversation_id,
            [
                NewMessage(Role.USER, request.user_message, estimate_tokens(request.user_message)),
                NewMessage(
                    Role.ASSISTANT,
                    request.assistant_message,
                    estimate_tokens(request.assistant_message),
                ),
            ],
            now,
            turn_id=request.turn_id,
            fingerprint=asked,
            create=create,
        )
        if turn.fingerprint != asked:
            raise ConcurrentChange(
                "turn_id was already used for a different turn; give each turn its own id"
            )
        if stored:
            self._after.follow(
                StoredExchange(
                    user_id=request.user_id,
                    conversation_id=turn.conversation_id,
                    persona=scope.persona,
                    writes_for=conversation.persona if conversation else scope.persona,
                    message=request.user_message,
                    last_seq=turn.first_seq + turn.count - 1,
                    read_upto=conversation.extracted_upto_seq if conversation else 0,
                    memory_on=scope.memory_on,
                    temporary=scope.temporary,
                    at=now,
                )
            )
        return Observed(
            conversation_id=turn.conversation_id,
            message_ids=turn.message_ids,
            stored=stored,
            learns=scope.memory_on,
        )
