"""Builds exactly what a chat turn sends to the model: `/v1/context` returns it as is.

Unless the chat is temporary or memory is off for this user and persona: the profile,
the note, the threads the persona follows (seed 004, with what the day allows of each), the
return greeting's cue on a chat reopened after quiet days, and the memories recalled for
this message. Always: the conversation's summary
and its recent turns. Tombstones are checked before anything enters the prompt — a
profile or a summary that may still hold a deleted memory (its purge has not finished)
is withheld, not trusted, and so is a recent reply that quoted a memory since deleted
(raw messages are never rewritten; the user's own words stay).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

from chatmemory.domain import fading, rules
from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.errors import ConversationNotFound, InvalidField
from chatmemory.domain.ids import is_conversation_id
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.profile import PROFILE_RULES
from chatmemory.domain.prompt import (
    ContextBlocks,
    RememberedLine,
    RenderedPrompt,
    ThreadLine,
    Turn,
    UsedMemory,
    neutralise,
    one_line,
    render,
)
from chatmemory.domain.sensitive import is_sensitive
from chatmemory.domain.threads import (
    ThreadView,
    cue_thread,
    mentions,
    meta_of,
    return_cue,
    shown_threads,
)
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.clock import Clock
from chatmemory.ports.stores import Stores
from chatmemory.services.profile import ProfileRebuilds
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
    # Build from what was believed then (seed 003's as_of): the memories held at that
    # instant, read as they stood; no profile and no threads (both are today's).
    as_of: datetime | None = None


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
    def used(self) -> tuple[UsedMemory, ...]:
        """Every memory whose words are in the prompt, with the block that carried it."""
        return self.blocks.used()

    @property
    def memories_used(self) -> list[str]:
        """The ids of `used`: the recalled ones first, best first, then threads, profile."""
        return [item.memory_id for item in self.used]

    @property
    def recalled_ids(self) -> list[str]:
        """The memories recall chose for this message (a use that reinforces them)."""
        return [line.memory_id for line in self.blocks.memories]


@dataclass(frozen=True, slots=True)
class TurnScope:
    """Where a turn goes and what memory may do with it: read by a chat turn, its context
    and an observed turn alike."""

    conversation: Conversation | None  # None: the turn starts a conversation
    persona: str
    temporary: bool
    settings: MemorySettings
    memory_on: bool  # False: temporary chat, memory switched off or the persona muted


def turn_scope(
    stores: Stores,
    user_id: str,
    conversation_id: str | None,
    *,
    persona: str | None,
    temporary: bool,
) -> TurnScope:
    """The conversation a turn continues (ConversationNotFound for one that is not the
    user's; a temporary turn on a kept one is refused), its persona and whether memory is on."""
    conversation = _conversation(stores, user_id, conversation_id, temporary=temporary)
    chosen = persona or (conversation.persona if conversation else rules.DEFAULT_PERSONA)
    temporary = temporary or bool(conversation and conversation.temporary)
    settings = stores.user_state.get_settings(user_id)
    return TurnScope(
        conversation=conversation,
        persona=chosen,
        temporary=temporary,
        settings=settings,
        memory_on=settings.allows(chosen) and not temporary,
    )


def _conversation(
    stores: Stores, user_id: str, conversation_id: str | None, *, temporary: bool
) -> Conversation | None:
    if conversation_id is None:
        return None
    if not is_conversation_id(conversation_id):
        raise ConversationNotFound(conversation_id)
    conversation = stores.conversations.get_conversation(user_id, conversation_id)
    if conversation is None:
        raise ConversationNotFound(conversation_id)
    if temporary and not conversation.temporary:
        # A kept conversation is read by the write pipeline and never expires: a turn
        # in it cannot be off the record. Temporary is chosen when a chat starts.
        raise InvalidField(
            "temporary",
            "can only be chosen when a conversation starts; this one is kept "
            "(start a new conversation with temporary: true)",
        )
    return conversation


class ContextService:
    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        retriever: Retriever,
        system_prompt: str | None = None,
        *,
        profiles: ProfileRebuilds | None = None,
    ) -> None:
        self._stores = stores
        self._clock = clock
        self._retriever = retriever
        self._profiles = profiles
        self._system = system_prompt or chat_system_prompt()

    def build(self, request: ContextRequest) -> BuiltContext:
        scope = turn_scope(
            self._stores,
            request.user_id,
            request.conversation_id,
            persona=request.persona,
            temporary=request.temporary,
        )
        conversation, persona, temporary = scope.conversation, scope.persona, scope.temporary
        settings, memory_on = scope.settings, scope.memory_on

        pending = (
            self._stores.tombstones.list_tombstones(request.user_id, unpurged_only=True)
            if memory_on or conversation
            else []
        )
        summary, recent, messages = self._short_term(conversation, pending)
        profile_text, note, kickoff = "", "", ""
        profile_ids: tuple[str, ...] = ()
        recalled: list[Recalled] = []
        threads: list[ThreadView] = []
        degraded = False
        now = self._clock.now()
        if request.as_of is not None and request.as_of > now:
            raise InvalidField("as_of", "must not be in the future")
        seen_at = request.as_of or now  # the instant the memories are read at
        if memory_on and request.as_of is not None:
            note = settings.note
            recalled, degraded = recall_safely(
                self._retriever,
                request.user_id,
                request.message,
                persona=persona,
                as_of=request.as_of,
            )
        elif memory_on:
            profile_text, profile_ids = self._profile(request.user_id, persona, pending)
            note = settings.note
            threads = self._threads(request.user_id, persona, messages, now)
            kickoff = self._kickoff(request.user_id, persona, conversation, threads, now)
            recalled, degraded = recall_safely(
                self._retriever, request.user_id, request.message, persona=persona
            )
            # A thread the block already shows is not repeated among the recalled lines.
            shown = {view.memory.memory_id for view in threads}
            recalled = [item for item in recalled if item.memory.memory_id not in shown]
        # Stored text is neutralised here, so the blocks /v1/context returns are exactly
        # what the model reads: none of it can close or open a prompt section.
        blocks = ContextBlocks(
            system=self._system,
            profile=neutralise(profile_text),
            note=neutralise(note),
            summary=neutralise(summary),
            recent=recent,
            threads=tuple(
                ThreadLine(
                    memory_id=view.memory.memory_id,
                    text=one_line(view.memory.text),
                    line=one_line(view.line),
                )
                for view in threads
            ),
            kickoff=neutralise(kickoff),
            profile_ids=profile_ids,
            memories=tuple(
                RememberedLine(
                    memory_id=item.memory.memory_id,
                    text=one_line(item.memory.text),
                    date=item.memory.created_at.date().isoformat(),
                    due=fading.describe_due(fading.due_in(item.memory, seen_at)),
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

    def _threads(
        self, user_id: str, persona: str, messages: Sequence[Message], now: datetime
    ) -> list[ThreadView]:
        """The threads this persona follows about the user, as today allows each. Once a
        thread was raised in this conversation today (a reply named it), or any was raised
        today at all, a ripe one waits for another day: one per opening (law 1), one ask a
        day (law 8). A failure only loses the threads, never the turn."""
        today = now.date()
        try:
            listed = self._stores.threads.list_threads(user_id, persona)
        except Exception as exc:
            log.warning("threads unavailable", extra={"error_type": type(exc).__name__})
            return []
        # The threads block is in every prompt: a sensitive story (an operation) is only
        # recalled, when a message is about it.
        rows = [row for row in listed if not is_sensitive(row)]
        replies_today = [
            m.content for m in messages if m.role is Role.ASSISTANT and m.created_at.date() == today
        ]
        asked_here_today = any(meta_of(row).asked == today for row in listed) or any(
            mentions(reply, row.text) for reply in replies_today for row in listed
        )
        return shown_threads(rows, today, asked_here_today=asked_here_today)

    def _kickoff(
        self,
        user_id: str,
        persona: str,
        conversation: Conversation | None,
        threads: Sequence[ThreadView],
        now: datetime,
    ) -> str:
        """The return greeting (seed 004 ③): the first turn after at least three quiet days
        with this persona opens as a reunion, with at most one question — the ripe thread,
        by its details. None on a first meeting."""
        if conversation is not None:
            last_seen: datetime | None = conversation.updated_at
        else:
            last_seen = self._stores.conversations.last_seen(user_id, persona)
        ripe = cue_thread(threads)
        return return_cue(last_seen, now, ripe.memory.text if ripe else None) or ""

    def _short_term(
        self, conversation: Conversation | None, pending: list[Tombstone]
    ) -> tuple[str, tuple[Turn, ...], list[Message]]:
        if conversation is None:
            return "", (), []
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
        return summary, recent, messages

    def _replies_quoting_deleted(self, user_id: str, messages: list[Message]) -> set[int]:
        """Seqs of replies that used a memory which is gone since (deleted or forgotten —
        or expired, which is withheld too rather than told apart at this cost)."""
        used = {memory_id for m in messages for memory_id in m.memories_used}
        if not used:
            return set()
        gone = used - self._stores.memories.visible_ids(user_id, sorted(used))
        return {m.seq for m in messages if gone.intersection(m.memories_used)}

    def _profile(
        self, user_id: str, persona: str, pending: list[Tombstone]
    ) -> tuple[str, tuple[str, ...]]:
        """The profile's text and the memories its lines say; nothing while it may hold a
        deleted memory."""
        profile = self._stores.user_state.get_profile(user_id, persona)
        if profile is not None and profile.stale(self._clock.now()) and self._profiles:
            # Due without a write: a memory in it faded, or it was built by older rules.
            self._profiles.soon(user_id, persona)
        if profile is None or not profile.text:
            return "", ()
        if profile.built_by < PROFILE_RULES:
            # Older rules let in what must stay out (a sensitive fact): not used until the
            # rebuild just asked for has run.
            log.info("profile withheld until it is rebuilt by the current rules")
            return "", ()
        deleted = {version for tombstone in pending for version in tombstone.versions}
        if deleted & set(profile.built_from):
            log.info("profile withheld until its purge rebuilds it")
            return "", ()
        return profile.text, profile.built_from
