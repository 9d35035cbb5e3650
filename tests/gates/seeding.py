"""Planting a corpus of facts in an account, through the API, the three ways users do.

`store_corpus` returns only once every fact is an active memory holding its token: a
gate that found nothing because nothing was stored would prove nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.gates.corpus import FILLER, NOTE, NOTE_TOKEN, Fact, Route
from tests.gates.service import Account

#: facts said per conversation (one per turn); more than 4 turns, so once a conversation
#: grows past the 12-turn window its first facts fold into its summary
FACTS_PER_CONVERSATION = 7
#: learned facts per day: the write pipeline keeps at most 12 new memories a day
LEARNED_PER_DAY = 10
#: the most turns `fold_facts_into_summaries` adds to one conversation
MAX_FILLER_TURNS = 30


@dataclass
class StoredCorpus:
    """An account holding a corpus, and the ids the service gave it."""

    account: Account
    facts: tuple[Fact, ...]
    memory_ids: dict[str, str] = field(default_factory=dict)  # token → memory id
    conversation_ids: list[str] = field(default_factory=list)  # where facts were said
    notice_ids: list[str] = field(default_factory=list)
    note_token: str | None = None

    @property
    def tokens(self) -> set[str]:
        tokens = {fact.token for fact in self.facts}
        return tokens | ({self.note_token} if self.note_token else set())

    @property
    def markers(self) -> set[str]:
        """Everything of this account another caller must never see: every token, and
        the ids of its memories, conversations and notices."""
        return (
            self.tokens
            | set(self.memory_ids.values())
            | set(self.conversation_ids)
            | set(self.notice_ids)
        )


def _batches(facts: Sequence[Fact], size: int) -> list[list[Fact]]:
    return [list(facts[start : start + size]) for start in range(0, len(facts), size)]


def store_corpus(account: Account, facts: Sequence[Fact], *, note: bool = True) -> StoredCorpus:
    """Plant `facts` in `account`: learned ones said in chats and learned by the write
    pipeline, saved ones said as "remember that …", the rest added through the API;
    with `note`, the settings note too. Background work is finished on return."""
    world = account.world
    stored = StoredCorpus(account, tuple(facts), note_token=NOTE_TOKEN if note else None)
    learned = [fact for fact in facts if fact.route is Route.LEARNED]
    for day in _batches(learned, LEARNED_PER_DAY):
        for conversation in _batches(day, FACTS_PER_CONVERSATION):
            stored.conversation_ids.append(_say(account, [fact.said for fact in conversation]))
        world.run_background()  # the write pipeline reads each quiet conversation
        world.next_day()

    saved = [fact for fact in facts if fact.route is Route.SAVED_IN_CHAT]
    for conversation in _batches(saved, FACTS_PER_CONVERSATION):
        conversation_id = None
        for fact in conversation:
            turn = account.chat(fact.said, conversation_id)
            assert len(turn["saved"]) == 1, (fact, turn)
            conversation_id = str(turn["conversation_id"])
        assert conversation_id is not None
        stored.conversation_ids.append(conversation_id)

    for fact in facts:
        if fact.route is Route.API:
            account.ok("POST", "/v1/memories", {"text": fact.said, "category": fact.category})
    if note:
        account.set_memory(note=NOTE)
    world.run_background()

    _collect_ids(stored)
    return stored


def _say(account: Account, messages: Sequence[str]) -> str:
    conversation_id = None
    for message in messages:
        conversation_id = str(account.chat(message, conversation_id)["conversation_id"])
    assert conversation_id is not None
    return conversation_id


def _collect_ids(stored: StoredCorpus) -> None:
    """Find each fact's memory (exactly one active memory holds its token) and the
    notices that announced the learned ones."""
    active = stored.account.memories()
    missing = []
    for fact in stored.facts:
        holding = [m for m in active if fact.token.casefold() in m["text"].casefold()]
        if len(holding) != 1:
            missing.append((fact.token, [m["text"] for m in holding]))
            continue
        stored.memory_ids[fact.token] = holding[0]["memory_id"]
    assert not missing, f"facts not stored as exactly one active memory: {missing}"
    stored.notice_ids = [notice["notice_id"] for notice in stored.account.notices()]
    if any(fact.route is Route.LEARNED for fact in stored.facts):
        assert stored.notice_ids, "learned facts are announced by notices"


def fold_facts_into_summaries(stored: StoredCorpus) -> None:
    """Keep chatting in each conversation that holds facts, with nothing new to say,
    until none of the turns that said them is left in the verbatim window: the facts
    are in its summary (and its raw messages) only. For the deletion gate: a deleted
    fact must not come back through a summary. (The assistant's replies in the window
    may still quote recalled memories; the deletion gate finds those too.)"""
    account = stored.account
    for conversation_id in stored.conversation_ids:
        filler = iter(FILLER * 2)
        for _ in range(MAX_FILLER_TURNS):
            blocks = account.context("And one more thing.", conversation_id)["blocks"]
            said = [turn["content"] for turn in blocks["recent"] if turn["role"] == "user"]
            recent = " ".join(said).casefold()
            if not any(token.casefold() in recent for token in stored.tokens):
                assert any(t.casefold() in blocks["summary"].casefold() for t in stored.tokens)
                break
            account.chat(next(filler), conversation_id)
        else:
            raise AssertionError(f"facts never left the window of {conversation_id}")
    account.world.run_background()
