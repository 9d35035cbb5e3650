"""Release gate: a temporary chat, and memory switched off, read and write no memory.

docs/api.md: "A `temporary: true` conversation reads no memory and writes none (no retrieval,
no profile, no extraction, no save_memory); its messages expire." and "`enabled: false`
stops reads and writes at once; stored memories stay until deleted."

Checked twice over: from outside (no fact, memory id, profile line or note in any answer;
nothing new remembered, even after the background work) and from inside (the store and
the index saw no read or write of that user's memory — see recording.py for what counts).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.gates import tally
from tests.gates.corpus import FACTS, FILLER, PROBES, UNKEPT_FACTS, Route, tokens_of
from tests.gates.probing import NEW, ProbeRun, find_markers, replay_probes
from tests.gates.recording import Access, Call
from tests.gates.seeding import StoredCorpus, store_corpus
from tests.gates.service import Account, GateWorld

UNKEPT = tokens_of(UNKEPT_FACTS)
#: the unkept facts a chat says in passing (the others are "remember that …")
STATEMENTS = tuple(fact for fact in UNKEPT_FACTS if fact.route is Route.LEARNED)


@pytest.fixture(scope="module")
def tess(world: GateWorld) -> StoredCorpus:
    """A user with the whole corpus: memories, a profile, notices and a note."""
    return store_corpus(world.account("gate-off-tess"), FACTS)


@pytest.fixture(scope="module")
def dora(world: GateWorld) -> StoredCorpus:
    return store_corpus(world.account("gate-off-dora"), FACTS)


@pytest.fixture
def dora_off(world: GateWorld, dora: StoredCorpus) -> Iterator[StoredCorpus]:
    """D with memory switched off for the test (and back on after it)."""
    dora.account.set_memory(enabled=False)
    world.run_background()
    world.problems.records.clear()
    yield dora
    dora.account.set_memory(enabled=True)


def _state(stored: StoredCorpus) -> dict[str, Any]:
    """What is remembered about the user: every memory, notice, profile and setting."""
    account, stores = stored.account, stored.account.world.stores
    profile = stores.user_state.get_profile(account.user_id)
    return {
        "memories": account.memories("all"),
        "notices": account.notices(),
        "settings": account.ok("GET", "/v1/memory/settings"),
        "profile": (profile.text, profile.built_from) if profile else None,
    }


def _kept(memories: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(m["memory_id"], m["text"], m["status"]) for m in memories]


def _memory_calls(world: GateWorld, account: Account) -> list[str]:
    return [str(call) for call in world.recorder.memory_calls(account.user_id)]


def _writes(calls: list[Call]) -> list[str]:
    return [str(call) for call in calls if call.access is Access.MEMORY_WRITE]


def _tally(gate: str, world: GateWorld, run: ProbeRun, detail: str) -> None:
    tally.record_replay(
        gate,
        facts=len(FACTS),
        probes=run.probes,
        requests=run.requests,
        hits=len(run.hits),
        embedder=world.embedder,
        detail=detail,
    )


def _say_unkept(account: Account, conversation_id: str | None, **request: Any) -> str | None:
    """With memory off: say each unkept fact ("remember that …" and plain statements);
    none may be saved, and nothing may be recalled."""
    for fact in UNKEPT_FACTS:
        turn = account.chat(fact.said, conversation_id, **request)
        assert turn["saved"] == [] and turn["memories_used"] == [], turn
        conversation_id = turn["conversation_id"]
    return conversation_id


def test_the_unkept_facts_are_learned_from_an_ordinary_chat(world: GateWorld) -> None:
    # Given a user with memory on (the control: these facts can be learned at all)
    olga = world.account("gate-off-olga")
    world.next_day()

    # When she says the facts in an ordinary chat and the background work runs
    for fact in UNKEPT_FACTS:
        olga.chat(fact.said)
    world.run_background()

    # Then every one of them is remembered
    assert {hit[0] for hit in find_markers(olga.memories(), UNKEPT)} == UNKEPT


# ---- temporary chats -------------------------------------------------------------------


def test_a_temporary_chat_reads_no_memory(world: GateWorld, tess: StoredCorpus) -> None:
    # Given T holding the corpus, and a temporary conversation of hers
    ongoing = tess.account.chat(FILLER[0], temporary=True)["conversation_id"]
    world.run_background()
    world.recorder.clear()

    # When T replays every probe in temporary chats: new ones, and that one
    run = replay_probes(
        tess.account, PROBES, tess.markers, conversations=(NEW, ongoing), temporary=True
    )

    # Then no answer carries any of her facts, memory ids, profile or note
    calls = _memory_calls(world, tess.account)
    _tally("temporary chat: T replays", world, run, f"memory reads/writes seen: {len(calls)}")
    assert run.hits == [], run.describe()
    blocks = tess.account.context(PROBES[0], ongoing, temporary=True)["blocks"]
    assert (blocks["memories"], blocks["profile"], blocks["note"]) == ([], "", "")
    # and the store and the index saw no read or write of her memory
    assert calls == []
    assert world.problems.messages() == []


def test_a_temporary_chat_learns_nothing_even_after_the_background_work(
    world: GateWorld, tess: StoredCorpus
) -> None:
    # Given T holding the corpus
    before = _state(tess)
    world.recorder.clear()

    # When she says new facts in a temporary chat, long enough to be folded, and every
    # background job runs
    world.next_day()  # the daily cap has room: anything learnable would be learned
    temporary = _say_unkept(tess.account, None, temporary=True)
    for message in FILLER[:12]:
        tess.account.chat(message, temporary, temporary=True)
    world.run_background()

    # Then nothing was read or written as memory, and nothing new is remembered
    assert _memory_calls(world, tess.account) == []
    after = _state(tess)
    assert after == before
    assert find_markers(after, UNKEPT) == []
    # and the background work did run: the chat was folded into its own summary
    blocks = tess.account.context("Thanks!", temporary, temporary=True)["blocks"]
    assert blocks["summary"]
    # and a day later the temporary chat itself is gone
    world.clock.advance(timedelta(hours=25))
    gone = tess.account.call("POST", "/v1/context", {"message": "hi", "conversation_id": temporary})
    assert (gone.status, gone.error_code) == (404, "not_found")
    assert world.problems.messages() == []


def test_a_temporary_turn_in_an_ordinary_conversation_is_never_learned(
    world: GateWorld,
) -> None:
    # Given an ordinary conversation, with nothing personal said in it yet
    tom = world.account("gate-off-tom")
    world.next_day()
    ordinary = tom.chat(FILLER[1])["conversation_id"]
    world.run_background()
    world.recorder.clear()

    # When one of its turns is sent as temporary and says new facts, and the background
    # work runs
    answers = [
        tom.call(
            "POST",
            "/v1/chat",
            {"message": fact.said, "conversation_id": ordinary, "temporary": True},
        )
        for fact in UNKEPT_FACTS
    ]
    world.run_background()

    # Then the flag is refused (temporary is chosen when a conversation starts), and
    # nothing is learned
    assert all(answer.status == 400 for answer in answers), answers
    assert {answer.error_code for answer in answers} == {"validation_error"}
    learned = find_markers(tom.memories("all"), UNKEPT)
    writes = _writes(world.recorder.memory_calls(tom.user_id))
    tally.record(
        tally.GateCount(
            gate="temporary turn in an ordinary conversation",
            facts=len(UNKEPT_FACTS),
            probes=0,
            requests=len(answers),
            hits=len(learned),
            embedder=world.embedder,
            detail=f"memory writes seen: {len(writes)}",
        )
    )
    assert learned == [], [m["text"] for m in tom.memories("all")]
    assert writes == []


# ---- memory switched off -------------------------------------------------------------


def test_memory_switched_off_reads_nothing(world: GateWorld, dora_off: StoredCorpus) -> None:
    # Given D holding the corpus, with memory switched off, and a conversation of hers
    ongoing = dora_off.account.chat(FILLER[2])["conversation_id"]
    world.run_background()
    world.recorder.clear()

    # When D replays every probe, in new conversations and in that one
    run = replay_probes(dora_off.account, PROBES, dora_off.markers, conversations=(NEW, ongoing))

    # Then no answer carries any of her facts, memory ids, profile or note
    calls = _memory_calls(world, dora_off.account)
    _tally("memory off: D replays", world, run, f"memory reads/writes seen: {len(calls)}")
    assert run.hits == [], run.describe()
    blocks = dora_off.account.context(PROBES[0], ongoing)["blocks"]
    assert (blocks["memories"], blocks["profile"], blocks["note"]) == ([], "", "")
    # and the store and the index saw no read or write of her memory
    assert calls == []
    assert world.problems.messages() == []


def test_memory_switched_off_learns_nothing_even_after_the_background_work(
    world: GateWorld, dora_off: StoredCorpus
) -> None:
    # Given D holding the corpus, with memory switched off
    world.next_day()
    before = _state(dora_off)
    world.recorder.clear()

    # When she says new facts, "remember that …" included, in a new conversation and in
    # an older one, and every background job runs
    _say_unkept(dora_off.account, None)
    _say_unkept(dora_off.account, dora_off.conversation_ids[0])
    world.run_background()

    # Then nothing was read or written as memory, and nothing new is remembered
    assert _memory_calls(world, dora_off.account) == []
    after = _state(dora_off)
    assert after == before
    assert find_markers(after, UNKEPT) == []
    assert world.problems.messages() == []


def test_facts_said_just_before_memory_is_switched_off_are_not_learned(
    world: GateWorld, dora: StoredCorpus
) -> None:
    # Given D says new facts, and switches memory off before her chat goes quiet
    world.next_day()
    conversation = None
    for fact in STATEMENTS:
        conversation = dora.account.chat(fact.said, conversation)["conversation_id"]
    dora.account.set_memory(enabled=False)
    before = _state(dora)
    world.recorder.clear()

    # When the chat's idle timer fires and the sweep runs
    world.run_background()

    # Then the write pipeline touched none of her memory and learned nothing
    assert _memory_calls(world, dora.account) == []
    assert _state(dora) == before
    # and switching memory back on does not bring those words back later
    dora.account.set_memory(enabled=True)
    dora.account.chat(FILLER[3], conversation)
    world.run_background()
    assert find_markers(_state(dora), UNKEPT) == []


def test_memory_switched_back_on_finds_what_was_kept_and_nothing_said_meanwhile(
    world: GateWorld, dora: StoredCorpus
) -> None:
    # Given D's memories, then memory switched off while she says new facts
    world.next_day()
    before = _state(dora)
    dora.account.set_memory(enabled=False)
    conversation = _say_unkept(dora.account, None)
    world.run_background()

    # When she switches memory back on, and goes on with that chat
    dora.account.set_memory(enabled=True)
    dora.account.chat(FILLER[4], conversation)
    world.run_background()

    # Then every memory she had is back, unchanged, and the probes find them again
    after = _state(dora)
    assert _kept(after["memories"]) == _kept(before["memories"])
    assert after["profile"] == before["profile"]
    found = replay_probes(dora.account, PROBES, dora.tokens, endpoints=("/v1/context",))
    assert len(found.markers_found()) >= len(FACTS) // 2
    # and nothing she said while it was off is remembered
    assert find_markers(after, UNKEPT) == []
    assert world.problems.messages() == []
