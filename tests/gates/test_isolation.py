"""Release gate: one user's memory never reaches another (seed 002, "Deletion and isolation").

Account A holds the whole corpus. Account B, who has memories of his own on the same
topics, and a fresh account C replay every probe through /v1/context and /v1/chat, in new
conversations and in a conversation of their own: none of A's tokens or ids may appear
anywhere in any answer. Every call B makes on one of A's ids is a 404, and A's data is
the same afterwards. The probes are shown to work first: replayed by A, they find A's
facts.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.gates import tally
from tests.gates.corpus import FACTS, FILLER, NEIGHBOUR_FACTS, PROBES
from tests.gates.probing import NEW, ProbeRun, find_markers, replay_probes
from tests.gates.recording import Access
from tests.gates.seeding import StoredCorpus, store_corpus
from tests.gates.service import Account, GateWorld, timeless

#: share of A's facts her own replay must surface in `blocks.memories` (a probe set that
#: finds nothing cannot show a leak). Measured: MiniLM 56/56, hashing 36/56 — hashing
#: vectors know spelling, not meaning, so indirect probes rarely reach them.
OWN_FACTS_FOUND = {"minilm": 0.9, "hashing": 0.55}


@pytest.fixture(scope="module")
def alice(world: GateWorld) -> StoredCorpus:
    return store_corpus(world.account("gate-iso-alice"), FACTS)


@pytest.fixture(scope="module")
def bob(world: GateWorld, alice: StoredCorpus) -> StoredCorpus:
    """B: memories of his own on A's topics, and a conversation of his own."""
    return store_corpus(world.account("gate-iso-bob"), NEIGHBOUR_FACTS, note=False)


def _own_conversation(account: Account) -> str:
    conversation_id = None
    for message in FILLER[:3]:
        conversation_id = str(account.chat(message, conversation_id)["conversation_id"])
    assert conversation_id is not None
    return conversation_id


def _replay_as_outsider(
    world: GateWorld, outsider: Account, own: str, alice: StoredCorpus, extra_markers: set[str]
) -> tuple[ProbeRun, list[Any]]:
    """Every probe as `outsider`, in new conversations and in `own`, a conversation of
    theirs; then the background work. Returns the run and every store/index call made
    meanwhile."""
    world.run_background()
    world.recorder.clear()
    run = replay_probes(outsider, PROBES, alice.markers | extra_markers, conversations=(NEW, own))
    world.run_background()
    return run, world.recorder.calls


def _everything_of(account: Account) -> dict[str, Any]:
    """All an account can list about itself."""
    return {
        "memories": account.memories("all"),
        "notices": account.notices(),
        "settings": account.ok("GET", "/v1/memory/settings"),
    }


def _tally(gate: str, world: GateWorld, run: ProbeRun, hits: int, detail: str = "") -> None:
    tally.record_replay(
        gate,
        facts=len(FACTS),
        probes=run.probes,
        requests=run.requests,
        hits=hits,
        embedder=world.embedder,
        detail=detail,
    )


def test_the_probes_find_the_owners_own_facts(world: GateWorld, alice: StoredCorpus) -> None:
    # Given A holding the corpus
    # When A replays every probe in new conversations
    run = replay_probes(alice.account, PROBES, alice.tokens)

    # Then most of her facts surface as recalled memories (so the probes can fish), and
    # every block that may carry them is seen to carry them
    in_memories = [hit for hit in run.hits if hit.where.startswith("blocks.memories")]
    recalled = {hit.marker for hit in in_memories}
    fishing = {hit.probe for hit in in_memories}
    family = next(name for name in OWN_FACTS_FOUND if world.embedder.startswith(name))
    _tally(
        "control: A replays her own probes",
        world,
        run,
        len(run.hits),
        f"her own facts, so hits are expected: {len(recalled)}/{len(FACTS)} facts recalled "
        f"by {len(fishing)}/{run.probes} probes; hits by place {dict(run.by_place())}",
    )
    assert len(recalled) >= OWN_FACTS_FOUND[family] * len(FACTS), sorted(alice.tokens - recalled)
    assert {"blocks.memories", "blocks.profile", "blocks.note", "reply"} <= set(run.by_place())
    assert world.problems.messages() == []


def test_a_second_account_never_sees_the_first_accounts_facts(
    world: GateWorld, alice: StoredCorpus, bob: StoredCorpus
) -> None:
    # Given A holding the corpus, and B holding facts of his own on the same topics
    # When B replays every probe, in new conversations and in the one where he told the
    # assistant about his parrot, choir and favourite novelist
    own = bob.conversation_ids[0]
    run, calls = _replay_as_outsider(world, bob.account, own, alice, bob.tokens)

    # Then nothing of A's appears in any answer, while B's own facts do
    leaks = run.of(alice.markers)
    _tally(
        "isolation: B (own memories) replays",
        world,
        run,
        len(leaks),
        f"B's own facts found: {len(run.markers_found(bob.tokens))}/{len(bob.facts)}",
    )
    assert leaks == [], run.describe(alice.markers)
    assert run.markers_found(bob.tokens), "B's own retrieval ran"
    # and the store and index were asked about B only, never about A
    assert {call.user_id for call in calls if call.access is not Access.SWEEP} == {
        bob.account.user_id
    }
    # and nothing of A's was learned into B's account by the background work
    assert find_markers(_everything_of(bob.account), alice.markers) == []
    assert world.problems.messages() == []


def test_a_fresh_account_never_sees_the_first_accounts_facts(
    world: GateWorld, alice: StoredCorpus
) -> None:
    # Given A holding the corpus, and C who has never said anything
    carol = world.account("gate-iso-carol")

    # When C replays every probe, in new conversations and in her own conversation
    run, calls = _replay_as_outsider(world, carol, _own_conversation(carol), alice, set())

    # Then nothing of A's appears in any answer, nor in anything C can list
    leaks = run.of(alice.markers)
    _tally("isolation: fresh C replays", world, run, len(leaks))
    assert leaks == [], run.describe(alice.markers)
    assert {call.user_id for call in calls if call.access is not Access.SWEEP} == {carol.user_id}
    assert find_markers(_everything_of(carol), alice.markers) == []
    assert world.problems.messages() == []


def _snapshot(owner: StoredCorpus) -> dict[str, Any]:
    """Everything the owner can see about her memories, notices, settings and chats."""
    account = owner.account
    return {
        **_everything_of(account),
        "each": {
            m: timeless(account.ok("GET", f"/v1/memories/{m}")) for m in owner.memory_ids.values()
        },
        "history": {
            m: account.ok("GET", f"/v1/memories/{m}/history") for m in owner.memory_ids.values()
        },
        "chats": {
            c: account.context("Where do I live?", c)["blocks"] for c in owner.conversation_ids
        },
    }


def _calls_on(alice: StoredCorpus) -> list[tuple[str, str, Any, bool]]:
    """(method, path, body, streamed) of every call that names one of A's ids."""
    calls: list[tuple[str, str, Any, bool]] = []
    for memory_id in alice.memory_ids.values():
        calls += [
            ("GET", f"/v1/memories/{memory_id}", None, False),
            ("PATCH", f"/v1/memories/{memory_id}", {"text": "Has no tortoise at all."}, False),
            ("DELETE", f"/v1/memories/{memory_id}", None, False),
            ("GET", f"/v1/memories/{memory_id}/history", None, False),
        ]
    for notice_id in alice.notice_ids:
        calls.append(("POST", f"/v1/notices/{notice_id}/undo", None, False))
    for conversation_id in alice.conversation_ids:
        for temporary in (False, True):
            body: dict[str, Any] = {
                "message": "What's my pet's name?",
                "conversation_id": conversation_id,
            }
            body |= {"temporary": True} if temporary else {}
            calls += [
                ("POST", "/v1/context", body, False),
                ("POST", "/v1/chat", body, False),
                ("POST", "/v1/chat", body, True),
            ]
    return calls


def test_every_call_on_another_accounts_ids_is_not_found_and_changes_nothing(
    world: GateWorld, alice: StoredCorpus, bob: StoredCorpus
) -> None:
    # Given A's memories, notices and conversations, and what A and B can see now
    alice_before, bob_before = _snapshot(alice), _everything_of(bob.account)
    calls = _calls_on(alice)

    # When B names each of A's ids in every call that takes one
    answers = [
        (method, path, bob.account.call(method, path, body, stream=streamed))
        for method, path, body, streamed in calls
    ]
    world.run_background()

    # Then every one is a plain 404, as for an id that does not exist
    refused = [(m, p, a.status, a.error_code) for m, p, a in answers]
    assert all(status == 404 and code == "not_found" for *_, status, code in refused), [
        r for r in refused if r[2:] != (404, "not_found")
    ]
    # and the answers carry nothing of A's
    assert find_markers([a.body for *_, a in answers], alice.markers) == []
    # and neither A's data nor B's changed
    assert _snapshot(alice) == alice_before
    assert _everything_of(bob.account) == bob_before
    tally.record(
        tally.GateCount(
            gate="isolation: B calls A's ids",
            facts=len(FACTS),
            probes=0,
            requests=len(calls),
            hits=sum(1 for *_, status, code in refused if status != 404),
            embedder=world.embedder,
            detail=(
                f"{len(alice.memory_ids)} memory ids x4 routes, {len(alice.notice_ids)} notices, "
                f"{len(alice.conversation_ids)} conversations x6 calls; all 404"
            ),
        )
    )


def test_another_accounts_page_cursor_is_refused(world: GateWorld, alice: StoredCorpus) -> None:
    # Given a page cursor issued to A
    cursor = alice.account.ok("GET", "/v1/memories?limit=5")["next"]
    assert cursor

    # When B replays it
    answer = world.account("gate-iso-bob").call("GET", f"/v1/memories?limit=5&next={cursor}")

    # Then it is refused, and nothing of A's comes back
    assert (answer.status, answer.error_code) == (400, "validation_error")
    assert find_markers(answer.body, alice.markers) == []
