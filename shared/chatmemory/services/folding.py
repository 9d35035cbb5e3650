"""Short-term memory: recent turns verbatim, older ones folded into a running summary.

Seed 002: when the verbatim window reaches 12 turns, the oldest 4 are folded into the
summary (≤ 400 tokens) — in blocks, not every turn, so the prompt's start stays stable
for the cache. Every 10 folds the summary is rebuilt from the raw messages, because a
summary of a summary of a summary drifts. Raw messages are never deleted by folding.

A turn that stated a deleted memory, or whose reply used one, is never folded in, and the
purge rewrites a summary that already holds one (see `rewrite_without_deleted`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.errors import ConcurrentChange, ModelUnavailable
from chatmemory.domain.prompt import Turn
from chatmemory.domain.tokens import estimate_tokens
from chatmemory.domain.write_filter import redact_secrets
from chatmemory.ports.clock import Clock
from chatmemory.ports.model import Model
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)

WINDOW_TURNS = 12
FOLD_TURNS = 4
REBUILD_EVERY = 10
SUMMARY_TOKENS = 400


@dataclass(frozen=True, slots=True)
class FoldOutcome:
    folded: bool
    rebuilt: bool = False
    upto_seq: int = 0


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What a purge did to one conversation's summary."""

    rewritten: bool
    turns_left_out: int = 0


def turns_of(messages: list[Message]) -> list[list[Message]]:
    """Messages grouped into turns, each starting at a user message."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.role is Role.USER or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def _stored(summary: str) -> str:
    """The summary as it is kept: secrets said in the folded turns withheld (a summary is
    a long-lived copy in every later prompt), within its budget."""
    return _within_budget(redact_secrets(summary))


def fold_due(unsummarized_user_turns: int) -> bool:
    return unsummarized_user_turns >= WINDOW_TURNS


class Folder:
    def __init__(self, stores: Stores, clock: Clock, model: Model) -> None:
        self._stores = stores
        self._clock = clock
        self._model = model

    def fold(self, user_id: str, conversation_id: str) -> FoldOutcome:
        """Fold the oldest 4 turns if the window is full; idempotent, and race-safe: the
        write applies only if no other fold moved the summary since this one read it."""
        conversation = self._stores.conversations.get_conversation(user_id, conversation_id)
        if conversation is None:
            return FoldOutcome(folded=False)
        window = self._stores.conversations.list_messages(
            user_id, conversation_id, after_seq=conversation.summary_upto_seq
        )
        turns = turns_of(window)
        if not fold_due(sum(1 for turn in turns if turn[0].role is Role.USER)):
            return FoldOutcome(folded=False)
        folding = [message for turn in turns[:FOLD_TURNS] for message in turn]
        upto_seq = folding[-1].seq
        rebuild = (conversation.fold_count + 1) % REBUILD_EVERY == 0
        deleted = self._deleted_sources(conversation)
        try:
            if rebuild:
                everything = self._stores.conversations.list_messages(
                    user_id, conversation_id, upto_seq=upto_seq
                )
                kept, _ = _without(turns_of(everything), deleted)
                summary = self._model.summarize("", _turns(kept), max_tokens=SUMMARY_TOKENS)
            else:
                kept, _ = _without(turns[:FOLD_TURNS], deleted)
                summary = (
                    self._model.summarize(
                        conversation.summary, _turns(kept), max_tokens=SUMMARY_TOKENS
                    )
                    if kept
                    else conversation.summary
                )
        except ModelUnavailable:
            # Raised, not swallowed: the queue retries it (and the next turn asks again).
            log.warning("fold failed: the model is unavailable")
            raise
        summary = _stored(summary)
        applied = self._stores.conversations.update_summary(
            user_id,
            conversation_id,
            summary=summary,
            upto_seq=upto_seq,
            expected_upto_seq=conversation.summary_upto_seq,
            fold_count=conversation.fold_count + 1,
            expected_fold_count=conversation.fold_count,
            at=self._clock.now(),
        )
        return FoldOutcome(folded=applied, rebuilt=rebuild and applied, upto_seq=upto_seq)

    def rewrite_without_deleted(self, user_id: str, conversation_id: str) -> Rewrite:
        """Rebuild the summary from the raw messages it covers, leaving out every turn that
        stated a deleted memory or whose reply used one — the purge's step for summaries.

        Idempotent: rewriting a clean summary gives the same summary. The write applies only
        if no fold moved the summary meanwhile (ConcurrentChange: the step is retried), and
        it moves `fold_count`, so a fold that read the old summary cannot put it back.
        """
        conversation = self._stores.conversations.get_conversation(user_id, conversation_id)
        if conversation is None or conversation.summary_upto_seq == 0:
            return Rewrite(rewritten=False)
        deleted = self._deleted_sources(conversation)
        covered = self._stores.conversations.list_messages(
            user_id, conversation_id, upto_seq=conversation.summary_upto_seq
        )
        kept, left_out = _without(turns_of(covered), deleted)
        try:
            summary = (
                self._model.summarize("", _turns(kept), max_tokens=SUMMARY_TOKENS) if kept else ""
            )
        except ModelUnavailable:
            log.warning("summary rewrite failed: the model is unavailable")
            raise
        applied = self._stores.conversations.update_summary(
            user_id,
            conversation_id,
            summary=_stored(summary),
            upto_seq=conversation.summary_upto_seq,
            expected_upto_seq=conversation.summary_upto_seq,
            fold_count=conversation.fold_count + 1,
            expected_fold_count=conversation.fold_count,
            at=self._clock.now(),
        )
        if not applied:
            raise ConcurrentChange("the summary moved while it was being rewritten")
        return Rewrite(rewritten=True, turns_left_out=left_out)

    def _deleted_sources(self, conversation: Conversation) -> Deleted:
        """What deleted memories left in this conversation: the messages they came from,
        and their ids (a reply that used one quotes it)."""
        tombstones = self._stores.tombstones.list_tombstones(conversation.user_id)
        return Deleted(
            sources=frozenset(
                message_id
                for tombstone in tombstones
                if conversation.conversation_id in tombstone.conversation_ids
                for message_id in tombstone.source_message_ids
            ),
            memories=frozenset(v for tombstone in tombstones for v in tombstone.versions),
        )


@dataclass(frozen=True, slots=True)
class Deleted:
    sources: frozenset[str] = frozenset()
    memories: frozenset[str] = frozenset()

    def touches(self, message: Message) -> bool:
        return message.message_id in self.sources or not self.memories.isdisjoint(
            message.memories_used
        )


def _without(turns: list[list[Message]], deleted: Deleted) -> tuple[list[Message], int]:
    """The turns' messages minus every turn that stated a deleted memory or whose reply used
    one; how many turns went."""
    kept: list[Message] = []
    left_out = 0
    for turn in turns:
        if any(deleted.touches(message) for message in turn):
            left_out += 1
            continue
        kept.extend(turn)
    return kept, left_out


def _turns(messages: list[Message]) -> list[Turn]:
    return [Turn(message.role.value, message.content) for message in messages]


def _within_budget(summary: str) -> str:
    """A model that overshoots the budget is cut at a sentence, never mid-word."""
    if estimate_tokens(summary) <= SUMMARY_TOKENS:
        return summary.strip()
    kept: list[str] = []
    for line in summary.splitlines():
        if estimate_tokens("\n".join([*kept, line])) > SUMMARY_TOKENS:
            break
        kept.append(line)
    return "\n".join(kept).strip()
