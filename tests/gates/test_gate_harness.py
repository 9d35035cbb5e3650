"""The gates' own instruments, shown able to fail: a gate that cannot see a leak proves
nothing by finding none."""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import cast

from chatmemory.ports.stores import Stores
from chatmemory.ports.vector_index import VectorIndex
from chatmemory.services.context import chat_system_prompt
from tests.gates.corpus import (
    DIRECT_PROBES,
    FACTS,
    FILLER,
    INDIRECT_PROBES,
    NEIGHBOUR_FACTS,
    NOTE,
    NOTE_TOKEN,
    PROBES,
    UNKEPT_FACTS,
)
from tests.gates.probing import find_markers, replay_probes
from tests.gates.recording import (
    INDEX_ACCESS,
    STORE_ACCESS,
    Access,
    Recorder,
    RecordingIndex,
    recording_stores,
    store_ports,
)
from tests.gates.service import GateWorld

ALL_FACTS = FACTS + NEIGHBOUR_FACTS + UNKEPT_FACTS
TOKENS = [fact.token for fact in ALL_FACTS] + [NOTE_TOKEN]


def test_the_corpus_is_big_enough_and_its_tokens_cannot_occur_by_chance() -> None:
    # Given the corpus, the probes and every fixed text the service or the gates send
    fixed_texts = [*PROBES, *FILLER, chat_system_prompt()]
    folded = [token.casefold() for token in TOKENS]

    # Then there are enough facts and probes, of both kinds
    assert len(FACTS) >= 50 and len(PROBES) >= 100
    assert DIRECT_PROBES and INDIRECT_PROBES
    # and each token is one invented word, in its own fact only, in no other token
    assert all(re.fullmatch(r"[A-Z][a-z]{5,}", token) for token in TOKENS), TOKENS
    assert len(set(folded)) == len(folded)
    assert [(a, b) for a in folded for b in folded if a != b and a in b] == []
    assert all(fact.token.casefold() in fact.said.casefold() for fact in ALL_FACTS)
    assert NOTE_TOKEN in NOTE
    # and no probe, filler turn or system prompt holds any of them
    assert find_markers(fixed_texts, TOKENS) == []


def test_find_markers_looks_everywhere_and_ignores_case() -> None:
    # Given an answer with markers in a nested string, a list, a key and a number
    answer = {
        "blocks": {"recent": [{"role": "user", "content": "my QUIZZLEBERRY"}], "profile": ""},
        "memories_used": ["mem_1", "mem_2"],
        "zelphwick": 7,
    }

    # When it is scanned
    found = find_markers(answer, ["Quizzleberry", "mem_2", "Zelphwick", "Vortanek"])

    # Then each occurrence is reported with where it was
    assert sorted(found) == [
        ("Quizzleberry", "blocks.recent[0].content"),
        ("Zelphwick", "zelphwick"),
        ("mem_2", "memories_used[1]"),
    ]


def test_a_replay_finds_a_planted_token_in_every_block(world: GateWorld) -> None:
    # Given an account whose own facts sit in every block: a learned fact (memory,
    # profile, summary once folded), the note, a memory added by hand, a recent turn
    pia = world.account("gate-harness-pia")
    world.next_day()
    chat = pia.chat("My sister is called Zelphwick.")["conversation_id"]
    for message in FILLER[:12]:
        pia.chat(message, chat)
    pia.chat("I have a rabbit named Fizzlewort.", chat)
    world.run_background()
    pia.set_memory(note=NOTE)
    tortoise = pia.ok("POST", "/v1/memories", {"text": "Has a tortoise named Quizzleberry."})
    markers = {"Zelphwick", "Fizzlewort", "Quizzleberry", NOTE_TOKEN, tortoise["memory_id"]}

    # When probes that fish for them are replayed in that conversation (worded so both
    # the local model and the hashing embedder recall them)
    run = replay_probes(
        pia,
        [
            "What is my sister called? Help me plan her birthday.",
            "What should I feed my tortoise named after a berry?",
        ],
        markers,
        conversations=(chat,),
    )

    # Then the replay reports them wherever they surfaced
    assert run.probes == 2 and run.requests == 4
    assert set(run.by_place()) >= {
        "blocks.memories",
        "blocks.profile",
        "blocks.note",
        "blocks.summary",
        "blocks.recent",
        "reply",
        "memories_used",
    }, run.by_place()
    assert run.markers_found() == markers


def test_the_recorder_sees_an_ordinary_turn_read_and_write_memory(world: GateWorld) -> None:
    # Given a user with a memory, and memory on
    quinn = world.account("gate-harness-quinn")
    quinn.ok("POST", "/v1/memories", {"text": "Has a tortoise named Quizzleberry."})
    world.recorder.clear()

    # When a chat turn recalls it
    turn = quinn.chat("What should I feed my tortoise named after a berry?")
    assert turn["memories_used"]

    # Then the recorder saw her memory read (the index searched) and written (its use)
    seen = {(call.method, call.access) for call in world.recorder.memory_calls(quinn.user_id)}
    assert ("search", Access.MEMORY_READ) in seen
    assert ("get_memories", Access.MEMORY_READ) in seen
    assert ("record_use", Access.MEMORY_WRITE) in seen


def test_every_store_and_index_method_is_classified() -> None:
    # Given the ports' methods as they are now (a new one must be placed in a kind)
    def methods(port: type) -> set[str]:
        return {
            name
            for name, member in inspect.getmembers(port)
            if callable(member) and not name.startswith("_")
        }

    # Then each has a kind, and the recording proxies are real stores and indexes
    for port in store_ports():
        assert methods(port) - set(STORE_ACCESS) == set(), port.__name__
    assert methods(VectorIndex) - set(INDEX_ACCESS) == set()
    # (the proxies only wrap what they are given; nothing here is called)
    placeholders = Stores(**{field.name: object() for field in dataclasses.fields(Stores)})
    stores = recording_stores(placeholders, Recorder())
    for field, port in zip(dataclasses.fields(Stores), store_ports(), strict=False):
        assert isinstance(getattr(stores, field.name), port)
    assert isinstance(RecordingIndex(cast(VectorIndex, object()), Recorder()), VectorIndex)
