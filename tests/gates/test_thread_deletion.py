"""Release gate: a deleted thread never comes back (seed 004 law 7: threads are rows, so
Delete works) — not in the threads block, not in the return greeting's cue, not in a
reply, not in a recalled line, not in a listing, before the purge or after it.

Threads are learned the way a user's story is told: concerns said in passing, one of them
with a second beat, learned by the background write pipeline; eight days later each is
ripe, so every probe's context would carry its anchors in the threads block and the first
turn's cue. Every thread is then deleted through the API, and the probes replayed — with
the purge held back (the tombstones alone must hide every version of every thread), and
again after it ran.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.gates import tally
from tests.gates.probing import find_markers, replay_probes
from tests.gates.service import Account, GateWorld

# Each concern carries one invented word no service text, probe or filler contains.
STORY = (
    ("Quorbleton", "I have a job interview at Quorbleton Labs on Thursday."),
    ("Snazzlebury", "We're looking for a flat in Snazzlebury."),
    ("Zyxq", "I bought ZYXQ at $10 and won't sell till $100."),
)
BEAT = "The interview at Quorbleton Labs went well. I have a second round on Friday!"
PROBES = (
    "Hi! It's been a while.",
    "Anything you wanted to ask me about?",
    "How is my job search going, do you think?",
    "Any tips for my flat hunt?",
    "Should I sell my shares now?",
    "What am I waiting to hear about these days?",
    "Remind me what's going on in my life.",
    "Good morning!",
)


def _threads(account: Account, status: str = "active") -> list[dict[str, object]]:
    answer = account.call("GET", f"/v1/memories?kind=thread&status={status}&limit=100")
    assert answer.status == 200, answer
    return list(answer.body["memories"])


@pytest.fixture(scope="module")
def told(world: GateWorld) -> Account:
    """Dora's story, learned as threads, with a second beat, and left quiet for eight days."""
    dora = world.account("gate-del-threads-dora")
    for _, said in STORY:
        dora.chat(said)
    world.run_background()
    world.clock.advance(timedelta(days=3))
    dora.chat(BEAT)
    world.run_background()
    world.clock.advance(timedelta(days=8))
    return dora


def test_a_deleted_thread_never_comes_back(
    world: GateWorld, told: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = {token for token, _ in STORY}
    # Given every thread learned (the job hunt in two versions) and ripe
    active = _threads(told)
    assert {t for t in tokens if any(t.lower() in str(m["text"]).lower() for m in active)} == tokens
    assert len(_threads(told, "superseded")) == 1
    control = replay_probes(told, PROBES[:1], tokens, endpoints=("/v1/context",))
    assert {"blocks.threads", "blocks.kickoff"} <= set(control.by_place()), control.describe()

    # When each thread is deleted, with the purges held back
    starter = world.container.purge_starter
    monkeypatch.setattr(starter, "start_purge", lambda *_, **__: True)
    ids = {str(m["memory_id"]) for m in active}
    for memory_id in ids:
        assert told.call("DELETE", f"/v1/memories/{memory_id}").status == 204
    markers = tokens | ids

    # Then from the very next request on, no probe finds any of them anywhere
    at_once = replay_probes(told, PROBES, markers)
    assert at_once.hits == [], at_once.describe()

    # And once the purge has run, still none — and nothing she can list holds them
    monkeypatch.undo()
    assert world.container.purge_sweep.sweep(now_or_never=True) == 1
    world.run_background()
    after_purge = replay_probes(told, PROBES, markers)
    everything = {
        "memories": told.memories("all"),
        "threads": _threads(told, "all"),
        "notices": told.notices(),
    }
    tally.record_replay(
        "deletion: threads, before and after the purge",
        facts=len(STORY),
        probes=len(PROBES),
        requests=control.requests + at_once.requests + after_purge.requests,
        hits=len(at_once.hits) + len(after_purge.hits),
        embedder=world.embedder,
        detail="threads block, return cue, recall, replies, listings",
    )
    assert after_purge.hits == [], after_purge.describe()
    assert find_markers(everything, markers) == []
    assert world.problems.messages() == []
