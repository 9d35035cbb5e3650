"""The write filter for a room (seed 000 §2, §7): what a persona may carry away from a
quiet spell, decided in code whatever the extractor proposed. Pure.

A room is several people at once, so on top of the one-to-one rules (the person's own
words, no secrets, nothing pasted or shaped like an instruction, the importance floor)
every candidate must be about someone who was there and lets this persona remember
them, rest on that person's own lines, and fit that person's daily cap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from chatmemory.domain.extraction import (
    DAILY_CAP,
    MAX_CANDIDATES,
    Candidate,
    Dropped,
    Filtered,
    RoomSeat,
    TranscriptLine,
    code_rule,
    rides_any_importance,
)
from chatmemory.domain.memory import Kind

#: the cap's key for world facts (no person's partition)
WORLD_CAP: Final = "world"
#: promises and open loops always ride, whatever their importance (seed 000 §2.1)
FLOOR_EXEMPT: Final = frozenset({Kind.PROMISE, Kind.OPEN_LOOP})
#: candidates read from one spell (several people's worth); the rest are not looked at
ROOM_MAX_CANDIDATES: Final = MAX_CANDIDATES * 2


def whom_about(candidate: Candidate) -> str | None:
    """The user a candidate concerns: its subject's, or a self item's counterpart's."""
    scope = candidate.counterpart if candidate.subject == "self" else candidate.subject
    if scope and scope.startswith("u:"):
        return scope.removeprefix("u:")
    return None


def cap_key(candidate: Candidate) -> str:
    """Whose daily cap a candidate counts against: the person it concerns, else the world."""
    return whom_about(candidate) or WORLD_CAP


def filter_room_candidates(
    candidates: Sequence[Candidate],
    transcript: Sequence[TranscriptLine],
    seat: RoomSeat,
    *,
    allowed: frozenset[str],
    created_today: Mapping[str, int],
    daily_cap: int = DAILY_CAP,
) -> Filtered:
    """Keep what this persona may write from the spell; what survives may still be routed
    to NONE.

    `allowed` are the present users who let this persona remember them (memory on, the
    persona not muted); `created_today[key]` counts the rows this persona already wrote
    today about each user (key: user id) and about the world (`WORLD_CAP`).
    """
    lines = {line.message_id: line for line in transcript}
    persona_speaker = f"p:{seat.persona}"
    present = frozenset(seat.present) & allowed
    kept: list[Candidate] = []
    dropped: list[tuple[Candidate, Dropped]] = []
    seen: set[tuple[str, str]] = set()
    used: dict[str, int] = {}
    for candidate in candidates[:ROOM_MAX_CANDIDATES]:
        evidence = [lines[m] for m in candidate.evidence if m in lines]
        reason = _scope_rule(candidate, present)
        if reason is None:
            sources = _sources(candidate, evidence, persona_speaker, present)
            exempt = candidate.kind in FLOOR_EXEMPT or rides_any_importance(candidate)
            reason = code_rule(candidate, sources, importance_floor=not exempt)
        key = cap_key(candidate)
        identity = (key, candidate.text.casefold())
        if reason is None and identity in seen:
            reason = Dropped.DUPLICATE
        elif reason is None and created_today.get(key, 0) + used.get(key, 0) >= daily_cap:
            reason = Dropped.DAILY_CAP
        if reason is None:
            seen.add(identity)
            used[key] = used.get(key, 0) + 1
            kept.append(candidate)
        else:
            dropped.append((candidate, reason))
    return Filtered(tuple(kept), tuple(dropped))


def _scope_rule(candidate: Candidate, present: frozenset[str]) -> Dropped | None:
    """Nothing about someone who was not there, or who does not let this persona remember
    them; a room candidate always says whom it is about."""
    if candidate.subject == "":
        return Dropped.NOT_PRESENT
    if candidate.subject == "world":
        return None
    if candidate.subject == "self" and candidate.counterpart is None:
        return None  # the persona's own note, with no one: its own partition
    user = whom_about(candidate)
    if user is None or user not in present:
        return Dropped.NOT_PRESENT
    return None


def _sources(
    candidate: Candidate,
    evidence: Sequence[TranscriptLine],
    persona_speaker: str,
    present: frozenset[str],
) -> list[TranscriptLine]:
    """The lines a candidate may rest on.

    About a person: only what that person said (seed 000: "only what a person said or
    showed about themselves"). The persona's own promise or open loop: its own words or
    its counterpart's. A world fact: anything said by someone who lets the persona
    remember them, or by the persona itself.
    """
    if candidate.subject.startswith("u:"):
        return [line for line in evidence if line.speaker == candidate.subject]
    if candidate.subject == "self":
        allowed_speakers = {persona_speaker}
        if candidate.counterpart:
            allowed_speakers.add(candidate.counterpart)
        return [line for line in evidence if line.speaker in allowed_speakers]
    return [
        line
        for line in evidence
        if line.speaker == persona_speaker
        or (line.speaker.startswith("u:") and line.speaker.removeprefix("u:") in present)
    ]
