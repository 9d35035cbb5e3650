"""Release gate: a deleted conversation never comes back (issue 45, defect 11).

"Forget everything" forgets memories; what was said stays in its conversations until the
person deletes them. So words are planted where only a conversation holds them — said
with memory switched off, then folded out of the verbatim window into the summary — beside
a fact learned from the same conversation. Then:

1. one conversation is deleted: from the very next request no probe finds its words in
   any answer (every context block — recent turns and the summary included —, chat
   replies, recall and its evidence, the export, the notices), and naming it is `404`;
   the fact learned from it stays (it is the person's to delete), and recall's evidence
   for it quotes none of its messages; the other conversation still holds its own words;
2. everything is forgotten: the other conversation still holds its words (what "forget
   everything" does not cover, docs/api.md); then every conversation is deleted, and no
   probe finds any planted word anywhere.

After each delete the owner can still list, export and forget everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.gates import tally
from tests.gates.corpus import PROBES, Fact, Route
from tests.gates.probing import ProbeRun, find_markers, replay_probes
from tests.gates.seeding import StoredCorpus, fold_facts_into_summaries
from tests.gates.service import Account, GateWorld

ERIN = "gate-conv-erin"
#: said with memory switched off: nothing but the conversation ever holds these words
SAID_IN_A = (
    ("Wibbleforth", "My neighbour's boat is called Wibbleforth."),
    ("Snargleby", "I keep my bike at Snargleby Yard."),
    ("Plomquist", "My grandfather's nickname was Plomquist."),
    ("Trevellion", "Our street party is on Trevellion Row."),
)
SAID_IN_B = (
    ("Druvelka", "My aunt's cat is called Druvelka."),
    ("Hobbleswick", "I swim at the Hobbleswick baths."),
)
#: said in A with memory on: learned, so it outlives the conversation as a memory
LEARNED_IN_A = ("Krindlewop", "My dog is called Krindlewop.")
#: every third probe, to every endpoint, in new conversations and in the kept one
SAMPLE = PROBES[::3]


def _tokens(said: Iterable[tuple[str, str]]) -> set[str]:
    return {token for token, _ in said}


def _say(account: Account, lines: Iterable[tuple[str, str]], conversation_id: str | None) -> str:
    for _, line in lines:
        conversation_id = str(account.chat(line, conversation_id)["conversation_id"])
    assert conversation_id is not None
    return conversation_id


def _planted(account: Account) -> tuple[str, str]:
    """Conversations A and B: their words folded into their summaries, and one fact of A's
    learned as a memory."""
    account.set_memory(enabled=False)
    a = _say(account, SAID_IN_A, None)
    b = _say(account, SAID_IN_B, None)
    account.set_memory(enabled=True)
    _say(account, [LEARNED_IN_A], a)
    account.world.run_background()
    facts = [Fact(token, Route.LEARNED, line) for token, line in (*SAID_IN_A, *SAID_IN_B)]
    fold_facts_into_summaries(StoredCorpus(account, tuple(facts), conversation_ids=[a, b]))
    return a, b


def _recall(account: Account, probes: Iterable[str]) -> list[dict[str, Any]]:
    """Recall for each probe, every item expanded with its evidence."""
    return [
        account.ok("POST", "/v1/recall", {"query": probe, "k": 15, "expand": 15})
        for probe in probes
    ]


def _evidence_ids(answers: list[dict[str, Any]]) -> set[str]:
    return {
        quote["message_id"]
        for answer in answers
        for item in answer["items"]
        for quote in item["evidence"] or []
    }


def _messages_of(conversation_id: str) -> str:
    """What every message id of this conversation starts with (`msg_<its hex>_<seq>`)."""
    return "msg_" + conversation_id.removeprefix("conv_") + "_"


def _refused(account: Account, conversation_id: str) -> int:
    """Context and chat naming a deleted conversation: each must be 404; how many asked."""
    for endpoint in ("/v1/context", "/v1/chat"):
        answer = account.call(
            "POST", endpoint, {"message": "Hi", "conversation_id": conversation_id}
        )
        assert (answer.status, answer.error_code) == (404, "not_found"), (endpoint, answer)
    return 2


def _kept_copies(account: Account) -> dict[str, Any]:
    """What the person can take away or read of their own: the export and the notices."""
    return {
        "export": account.ok("GET", "/v1/memories/export?limit=500"),
        "notices": account.notices(),
    }


def _still_in_control(account: Account) -> None:
    assert account.call("GET", "/v1/memories?status=all").status == 200
    assert account.call("GET", "/v1/memories/export").status == 200
    assert account.call("DELETE", "/v1/memories").status == 204


def test_a_deleted_conversation_never_comes_back(world: GateWorld) -> None:
    erin = world.account(ERIN)
    a, b = _planted(erin)
    words_a, words_b = _tokens(SAID_IN_A), _tokens(SAID_IN_B)
    learned_token = LEARNED_IN_A[0]

    # Given A's words in its summary, and recall quoting A for the fact learned there
    before = replay_probes(
        erin, SAMPLE[:5], words_a, conversations=(a,), endpoints=("/v1/context",)
    )
    assert "blocks.summary" in before.by_place(), before.describe()
    asked = _recall(erin, ["What is my dog called?"])
    assert any(i.startswith(_messages_of(a)) for i in _evidence_ids(asked)), asked

    # When Erin deletes conversation A
    assert erin.call("DELETE", f"/v1/conversations/{a}").status == 204

    # Then from the very next request no probe finds A's words anywhere: new conversations
    # (context and chat), the kept conversation B, recall with its evidence, the export
    gone = replay_probes(erin, SAMPLE, words_a | words_b)
    gone = gone.add(replay_probes(erin, SAMPLE, words_a | words_b, conversations=(b,)))
    requests = gone.requests + _refused(erin, a)
    recalled = _recall(erin, [*SAMPLE, "What is my dog called?"])
    requests += len(recalled)
    hits_a = len(gone.of(words_a)) + len(find_markers(recalled, [*words_a, _messages_of(a)]))
    copies = _kept_copies(erin)
    hits_a += len(find_markers(copies, words_a))
    assert gone.of(words_a) == [], ProbeRun(hits=gone.of(words_a)).describe()
    assert find_markers(recalled, [*words_a, _messages_of(a)]) == []
    assert find_markers(copies, words_a) == []
    # and B still holds its own words (only A was deleted), and the learned fact stays
    assert gone.of(words_b), "conversation B should still hold its words"
    assert [m for m in erin.memories() if learned_token in m["text"]]

    # When everything is forgotten, B still holds what was said in it
    assert erin.call("DELETE", "/v1/memories").status == 204
    assert world.container.purge_sweep.sweep(now_or_never=True) == 1
    world.run_background()
    forgotten = replay_probes(
        erin, SAMPLE[:5], words_b, conversations=(b,), endpoints=("/v1/context",)
    )
    assert forgotten.hits, "forget everything does not cover conversations"

    # And once every conversation is deleted, no probe finds any planted word anywhere
    assert erin.call("DELETE", "/v1/conversations").status == 204
    everything = words_a | words_b | {learned_token}
    after_all = replay_probes(erin, SAMPLE, everything)
    requests += after_all.requests + _refused(erin, b)
    recalled_all = _recall(erin, SAMPLE)
    requests += len(recalled_all)
    copies_all = _kept_copies(erin)
    hits_all = (
        len(after_all.hits)
        + len(find_markers(recalled_all, everything))
        + len(find_markers(copies_all, everything))
    )
    tally.record(
        tally.GateCount(
            gate="deletion: a conversation deleted, then every one after forgetting",
            facts=len(everything),
            probes=len(SAMPLE),
            requests=requests,
            hits=hits_a + hits_all,
            embedder=world.embedder,
        )
    )
    assert after_all.hits == [], after_all.describe()
    assert find_markers(recalled_all, everything) == []
    assert find_markers(copies_all, everything) == []
    _still_in_control(erin)
    assert world.problems.messages() == []
