"""Memory ids under a deployment's own key (domain/ids.py IdentityKey): the same belief
always lands on the same id in one deployment, and no one without the key can compute the
id from a guess at the words.

Regression: an id was a uuid5 of user, persona, category and folded text under a namespace
in the public source; 234 dictionary guesses recovered all five memories of a user from
the ids in their change events."""

from __future__ import annotations

import uuid

import pytest

from chatmemory.domain.ids import CHATMEMORY_NAMESPACE, IdentityKey, belief_identity

KEY_A = IdentityKey(b"a" * 48)
KEY_B = IdentityKey(b"b" * 48)
BELIEF = belief_identity("pets", "Has a cat named Miso.")


def test_the_same_belief_lands_on_the_same_id_within_a_deployment() -> None:
    assert KEY_A.memory_id("alice", "assistant", BELIEF) == KEY_A.memory_id(
        "alice", "assistant", BELIEF
    )
    assert KEY_A.memory_id("alice", "assistant", BELIEF, 1) != KEY_A.memory_id(
        "alice", "assistant", BELIEF
    )


def test_an_id_cannot_be_recomputed_from_the_words_without_the_deployments_key() -> None:
    keyed = KEY_A.memory_id("alice", "assistant", BELIEF)
    # Not the public derivation of the source (the old uuid5), nor the public key's, nor
    # another deployment's
    public = "mem_" + uuid.uuid5(CHATMEMORY_NAMESPACE, f"alice\x1fassistant\x1f{BELIEF}").hex
    assert keyed not in {
        public,
        IdentityKey().memory_id("alice", "assistant", BELIEF),
        KEY_B.memory_id("alice", "assistant", BELIEF),
    }
    assert keyed.startswith("mem_") and len(keyed) == len(public)


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        IdentityKey(b"too short")
