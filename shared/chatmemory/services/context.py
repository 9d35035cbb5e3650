"""Builds exactly what a chat turn sends to the model: `/v1/context` returns it as is.

Unless the chat is temporary or memory is off for this user and persona: the profile,
the note and the memories recalled for this message. Always: the conversation's summary
and its recent turns. Tombstones are checked before anything enters the prompt — a
profile or a summary that may still hold a deleted memory (its purge has not finished)
is withheld, not trusted, and so is a recent reply that quoted a memory since deleted
(raw messages are never rewritten; the user's own words stay).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources

from chatmemory.domain import rules
from chatmemory.domain.conversation import Conversation, Message
from chatmemory.domain.errors import ConversationNotFound, InvalidField
from chatmemory.domain.ids import is_conversation_id
from chatmemory.domain.prompt import (
    ContextBlocks,
    RememberedLine,
    RenderedPrompt,
    Turn,
    neutralise,
    one_line,
    render,
)
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores
from chatmemory.services.retrieval import Recalled, Retriever, recall_safely

log = logging.getLogger(__name__)

#: verbatim turns kept after the summary; folding keeps this under 12 exchanges
RECENT_MESSAGES_CAP = 24
#: what the model sees instead of a reply that quoted a memory the user has deleted
WITHDRAWN_REPLY = "(reply withdrawn: it used a memory the user has since deleted)"


def chat_system_prompt() -> str:
    return (
        resources.files("chatmemory.prompts").joinpath("chat_system.txt").read_text("utf-8").strip()
    )


@dataclass(frozen=True, slots=True)
class ContextRequest:
    user_id: str
    message: str
    conversation_id: str | None = None
    temporary: bool = False
    persona: str | None = None


@dataclass(frozen=True, slots=True)
class BuiltContext:
    conversation: Conversation | None
    persona: str
    temporary: bool
    memory_on: bool  # False: temporary chat or memory switched off — nothing read or written
    blocks: ContextBlocks
    recalled: tuple[Recalled, ...]
    rendered: RenderedPrompt
    degraded: bool  # recall failed and the turn goes on without memories

    @property
    def memories_used(self) -> list[str]:
        return [line.memory_id for line in self.blocks.memories]


class ContextService:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        retriever: Retriever,
        system_prompt: str | None = None,
    ) -> None:
        self._stores = stores
        self._clock = clock
        self._retriever = retriever
        self._system = system_prompt or chat_system_prompt()

    def build(self, request: ContextRequest) -> BuiltContext:
        conversation = self._conversation(request)
        persona = request.persona or (
            conversation.persona if conversation else rules.DEFAULT_PERSONA
        )
        temporary = request.temporary or bool(conversation and conversation.temporary)
        settings = self._stores.user_state.get_settings(request.user_id)
        memory_on = settings.allows(persona) and not temporary

        pending = (
            self._stores.tombstones.list_tombstones(request.user_id, unpurged_only=True)
            if memory_on or conversation
            else []
        )
        summary, recent = self._short_term(conversation, pending)
        profile_text, note = "", ""
        recalled: list[Recalled] = []
        degraded = False
        if memory_on:
            profile_text = self._profile(request.user_id, persona, pending)
            note = settings.note
            recalled, degraded = recall_safely(
                self._retriever, request.user_id, request.message, persona=persona
            )
        # Stored text is neutralised here, so the blocks /v1/context returns are exactly
        # what the model reads: none of it can close or open a prompt section.
        blocks = ContextBlocks(
            system=self._system,
            profile=neutralise(profile_text),
            note=neutralise(note),
            summary=neutralise(summary),
            recent=recent,
            memories=tuple(
                RememberedLine(
                    memory_id=item.memory.memory_id,
                    text=one_line(item.memory.text),
                    date=item.memory.created_at.date().isoformat(),
                )
                for item in recalled
            ),
        )
        return BuiltContext(
            conversation=conversation,
            persona=persona,
            temporary=temporary,
            memory_on=memory_on,
            blocks=blocks,
            recalled=tuple(recalled),
            rendered=render(blocks, request.message),
            degraded=degraded,
        )

    def _conversation(self, request: ContextRequest) -> Conversation | None:
        if request.conversation_id is None:
            return None
        if not is_conversation_id(request.conversation_id):
            raise ConversationNotFound(request.conversation_id)
        conversation = self._stores.conversations.get_conversation(
            request.user_id, request.conversation_id
        )
        if conversation is None:
            raise ConversationNotFound(request.conversation_id)
        if request.temporary and not conversation.temporary:
            # A kept conversation is read by the write pipeline and never expires: a turn
            # in it cannot be off the record. Temporary is chosen when a chat starts.
            raise InvalidField(
                "temporary",
                "can only be chosen when a conversation starts; this one is kept "
                "(start a new conversation with temporary: true)",
            )
        return conversation

    def _short_term(
        self, conversation: Conversation | None, pending: list[Tombstone]
    ) -> tuple[str, tuple[Turn, ...]]:
        if conversation is None:
            return "", ()
        messages: list[Message] = self._stores.conversations.list_messages(
            conversation.user_id,
            conversation.conversation_id,
            after_seq=conversation.summary_upto_seq,
            last=RECENT_MESSAGES_CAP,
        )
        quoted_deleted = self._replies_quoting_deleted(conversation.user_id, messages)
        recent = tuple(
            Turn(m.role.value, WITHDRAWN_REPLY if m.seq in quoted_deleted else m.content)
            for m in messages
        )
        summary = conversation.summary
        if summary and pending:
            # A summary may hold a deleted memory through the turn that stated it or a
            # reply that used it, in any conversation; until the purge has rewritten the
            # summaries that do, none is trusted.
            log.info("summary withheld until a purge finishes")
            summary = ""
        return summary, recent

    def _replies_quoting_deleted(self, user_id: str, messages: list[Message]) -> set[int]:
        """Seqs of replies that used a memory which is gone since (deleted or forgotten —
        or expired, which is withheld too rather than told apart at this cost)."""
        used = {memory_id for m in messages for memory_id in m.memories_used}
        if not used:
            return set()
        gone = used - self._stores.memories.visible_ids(user_id, sorted(used))
        return {m.seq for m in messages if gone.intersection(m.memories_used)}

    def _profile(self, user_id: str, persona: str, pending: list[Tombstone]) -> str:
        profile = self._stores.user_state.get_profile(user_id, persona)
        if profile is None:
            return ""
        deleted = {version for tombstone in pending for version in tombstone.versions}
        if deleted & set(profile.built_from):
            log.info("profile withheld until its purge rebuilds it")
            return ""
        return profile.text
