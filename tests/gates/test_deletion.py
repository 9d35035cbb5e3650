"""Release gate: a deleted fact never comes back (seed 002, "Deletion and isolation").

"After a delete, replay 100 probing prompts and require zero appearances, including
through the profile and summaries." The corpus is planted the three ways, in
conversations long enough that their facts are folded into the summaries (and out of
the verbatim window); each fact is then deleted and every probe replayed — right after
the deletes (the tombstones must already hide everything: memories, profile, summary,
and recent replies that quoted a memory) and again after the purge has removed or
rebuilt every copy.
"""

from __future__ import annotations

import pytest

from tests.gates import tally
from tests.gates.corpus import FACTS, PROBES
from tests.gates.probing import ENDPOINTS, ProbeRun, find_markers, replay_probes
from tests.gates.seeding import StoredCorpus, fold_facts_into_summaries, store_corpus
from tests.gates.service import GateWorld


@pytest.fixture(scope="module")
def dana(world: GateWorld) -> StoredCorpus:
    """The corpus, with every conversation that holds facts folded into its summary."""
    stored = store_corpus(world.account("gate-del-dana"), FACTS)
    fold_facts_into_summaries(stored)
    return stored


def _deleted_markers(stored: StoredCorpus) -> set[str]:
    """The facts' tokens and memory ids (the note is a setting, not a memory)."""
    return {fact.token for fact in stored.facts} | set(stored.memory_ids.values())


def _replay(stored: StoredCorpus, endpoints: tuple[str, ...] = ENDPOINTS) -> ProbeRun:
    """Every probe in a new conversation, and again in one of the conversations that
    held the facts (taking turns, so each of them hears its share of the probes)."""
    markers = _deleted_markers(stored)
    run = replay_probes(stored.account, PROBES, markers, endpoints=endpoints)
    held = stored.conversation_ids
    for number, conversation_id in enumerate(held):
        run = run.add(
            replay_probes(
                stored.account,
                PROBES[number :: len(held)],
                markers,
                conversations=(conversation_id,),
                endpoints=endpoints,
            )
        )
    run.probes = len(PROBES)
    return run


def test_a_deleted_fact_never_comes_back(
    world: GateWorld, dana: StoredCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the facts, found by the probes in memories, the profile and the summaries
    before = _replay(dana, endpoints=("/v1/context",))
    assert {"blocks.memories", "blocks.profile", "blocks.summary"} <= set(before.by_place())

    # When each fact is deleted, and the purges have not started yet (held back here, as
    # a busy workflow service would; the tombstones alone must hide everything)
    starter = world.container.purge_starter
    monkeypatch.setattr(starter, "start_purge", lambda *_, **__: True)
    for memory_id in dana.memory_ids.values():
        assert dana.account.call("DELETE", f"/v1/memories/{memory_id}").status == 204
    user_id = dana.account.user_id
    deleted = len(dana.memory_ids)
    assert len(world.stores.tombstones.list_tombstones(user_id, unpurged_only=True)) == deleted

    # Then from the very next request on, no probe finds any of them anywhere
    at_once = _replay(dana)
    assert at_once.hits == [], at_once.describe()
    assert len(world.stores.tombstones.list_tombstones(user_id, unpurged_only=True)) == deleted

    # And once the purge has run (what `chatmemory flush` does), still none — and nothing
    # she can list holds them
    monkeypatch.undo()
    assert world.container.purge_sweep.sweep(now_or_never=True) == 1
    world.run_background()
    assert world.stores.tombstones.list_tombstones(user_id, unpurged_only=True) == []
    after_purge = _replay(dana)
    everything = {
        "memories": dana.account.memories("all"),
        "notices": dana.account.notices(),
    }
    tally.record(
        tally.GateCount(
            gate="deletion: replay before and after the purge",
            facts=len(dana.facts),
            probes=at_once.probes,
            requests=at_once.requests + after_purge.requests,
            hits=len(at_once.hits) + len(after_purge.hits),
            embedder=world.embedder,
        )
    )
    assert after_purge.hits == [], after_purge.describe()
    assert find_markers(everything, _deleted_markers(dana)) == []
    assert world.problems.messages() == []
