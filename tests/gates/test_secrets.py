"""Release gate: a secret is never stored, on any path (ARCHITECTURE.md: "Secrets (card
numbers, passwords, keys, government ids) are never stored, on any path").

Every secret shape (`secret_shapes.py`: cards of four networks, passwords, a PIN and a
door code said in words, keys and tokens of five providers, a private key block, a
connection string, four government ids, an IBAN, account and routing numbers) is said
beside an ordinary fact through every door a user's words come in by: a chat turn (JSON,
streamed, temporary, and beside a concern the persona will follow as a thread), the
chat's save_memory tool, an observed turn (the user's message, and the assistant's that
repeats the secret in words, or bare), a private chat and a group room (lines the app
posts for a user, lines the user posts herself, a persona's line repeating it in words or
bare, a persona's turn), an import (a row's text, a row's uses, the note), and the forms
that must refuse it (`POST /v1/memories`, `PATCH /v1/memories/{id}`, the settings note).
Then the background work runs as `chatmemory flush` runs it (the write pipeline, room
writes, folds, the change relay), the planting conversations are chatted on until their
planted turns are folded into their summaries, and every read path a user has — and every
file in the state folder, as raw bytes, and every log record — is searched for every
form of every secret (as written, and compact). Zero hits.

The one place a secret may appear is the reply of the very turn that said it (the turn in
flight answers from the words as said): those replies are not searched. The facts said
beside the secrets must be kept — learned, saved, and in the transcripts with
"[secret withheld]" where the secret was — or the gate would prove nothing.
"""

# What this gate found when it was written (2026-12-07), each fixed at its root since:
# a credential said "for his/her/your/their …" was not seen as one (`secrets._OWNER`), and
# a reply repeating a value alone in the same turn or post was kept (each message was
# masked by itself; a batch is masked as one now, `secrets.secret_values`).
#
# Its one known limit: a value repeated alone in a LATER request ("Okay, 730519 it is."
# posted by the app as a persona's line after the user's masked one) has no shape and no
# word that marks it, and recognising it would take keeping the secret (or a keyed digest
# of it) — not planted here; docs/api.md says so.

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from chatmemory.services.context import chat_system_prompt
from tests.gates import tally
from tests.gates.corpus import FILLER
from tests.gates.probing import find_markers
from tests.gates.secret_shapes import (
    BANK,
    CARD,
    CREDENTIAL,
    GOVERNMENT_ID,
    KEY,
    MARKERS,
    SHAPES,
    SHORT,
    SecretShape,
    compact,
)
from tests.gates.service import APP, Account, Answer, GateWorld

WITHHELD = "[secret withheld]"
WARREN, NOLAN = "warren", "nolan"
GATE = "secrets: planted through every door, searched on every path and on disk"

CHAT, SAVE, OBSERVE = "gate-sec-chat", "gate-sec-save", "gate-sec-observe"
ANA, BEN, FORMS = "gate-sec-room-ana", "gate-sec-room-ben", "gate-sec-forms"
THREADS = "gate-sec-threads"
ACCOUNTS = (CHAT, SAVE, OBSERVE, ANA, BEN, FORMS, THREADS)
#: the pause between two posts in a room
BETWEEN_LINES = timedelta(seconds=5)
PRIVATE_ROOM, GROUP_ROOM = "gate-sec-ana-private", "gate-sec-group"

#: a use is at most 80 characters: the uses door plants the shapes whose clause fits
USE_CHARS = 80
#: filler turns at most, to fold a planting conversation's turns into its summary
MAX_FILLER = 40
#: what the loggers of the product are called (the package's, the local server's)
PRODUCT_LOGGERS = ("chatmemory", "local-server", "local-changes")
#: the assistant's reply in an observed turn that repeats the secret bare, for the shapes
#: whose value is a secret only because of the words around it
BARE = tuple(shape for shape in SHAPES if shape.kind == CREDENTIAL)

_MARKER_SHAPE = {marker: shape.name for shape in SHAPES for marker in shape.markers}


# ---- what was searched and what was found ------------------------------------------------


@dataclass(frozen=True, slots=True)
class SecretHit:
    """One form of one secret, found in one place."""

    path: str  # the read path, the file, or "log"
    shape: str
    marker: str
    where: str

    def __str__(self) -> str:
        return f"{self.shape} ({self.marker!r}) at {self.where} of {self.path}"


def _bounded(marker: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![0-9A-Za-z]){re.escape(marker)}(?![0-9A-Za-z])", re.IGNORECASE)


def _places(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(place, text) of every key and every string or number in an answer, the places
    named as `find_markers` names them."""
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            yield inner, str(key)
            yield from _places(item, inner)
    elif isinstance(value, list):
        for number, item in enumerate(value):
            yield from _places(item, f"{where}[{number}]")
    elif value is not None:
        yield where or "(answer)", str(value)


def secret_hits(path: str, answer: Any) -> list[SecretHit]:
    """Every form of every secret in any key or string of `answer` (`find_markers`, one
    place at a time); a short form (a PIN) only where no letter or digit touches it, so
    a random hex id that holds its digits is not a hit."""
    whole = json.dumps(answer, ensure_ascii=False).casefold()
    if not any(marker.casefold() in whole for marker in MARKERS):
        return []  # no marker has a quote, a backslash or a control character to escape
    hits = []
    for where, text in _places(answer):
        for marker, _ in find_markers(text, MARKERS):
            if len(marker) >= SHORT or _bounded(marker).search(text):
                hits.append(SecretHit(path, _MARKER_SHAPE[marker], marker, where))
    return hits


def _describe(hits: list[SecretHit], limit: int = 40) -> str:
    """The hits, one line per secret and place (numbered places counted together)."""
    places = Counter(
        dataclasses.replace(hit, where=re.sub(r"\[\d+\]", "[]", hit.where)) for hit in hits
    )
    shown = "\n  ".join(f"{count}x {hit}" for hit, count in list(places.items())[:limit])
    more = f"\n  … and {len(places) - limit} more places" if len(places) > limit else ""
    return f"{len(hits)} hit(s) in {len(places)} place(s):\n  {shown}{more}"


@dataclass
class Searched:
    """Answers searched per read path, and what they held."""

    answers: Counter[str] = field(default_factory=Counter)
    hits: list[SecretHit] = field(default_factory=list)

    def look(self, path: str, answer: Any, about: str = "") -> Any:
        """Search one answer of `path` (`about`: which of its kind, for the report)."""
        self.answers[path] += 1
        found = secret_hits(path, answer)
        if about:
            found = [dataclasses.replace(hit, where=f"{hit.where} [{about}]") for hit in found]
        self.hits += found
        return answer


# ---- the product's log, every level -------------------------------------------------------


class Captured(logging.Handler):
    """Every record the product logs while the gate runs, at every level."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def texts(self) -> Iterator[tuple[logging.LogRecord, str]]:
        """Each record as everything it would print: its message, its arguments, its
        extra fields and any exception with its traceback."""
        formatter = logging.Formatter()
        for record in self.records:
            parts = [record.getMessage(), repr(record.args)]
            parts += [f"{key}={value!r}" for key, value in vars(record).items()]
            if record.exc_info:
                parts.append(formatter.formatException(record.exc_info))
            yield record, "\n".join(parts)


@pytest.fixture(scope="module")
def product_log() -> Iterator[Captured]:
    """Every record of the product's loggers, at every level, from before the first
    secret is planted until the gate is done."""
    captured = Captured()
    loggers = [logging.getLogger(name) for name in PRODUCT_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.addHandler(captured)
    try:
        yield captured
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(captured)
            logger.setLevel(level)


# ---- planting: every door ----------------------------------------------------------------


@dataclass
class Planted:
    """Where the secrets went in, and what the doors answered."""

    conversations: dict[str, list[str]] = field(default_factory=dict)  # user → planting ones
    doors: dict[str, str] = field(default_factory=dict)  # conversation → the door it was
    #: (door, answer) of every write door whose answer must hold nothing (all but the
    #: replies of the turns that said a secret)
    answers: list[tuple[str, Any]] = field(default_factory=list)
    #: (door, shape, status, error code) of every write that must be refused
    refused: list[tuple[str, str, int, str | None]] = field(default_factory=list)
    saved: dict[str, list[str]] = field(default_factory=dict)  # shape → ids saved on its turn
    #: (shape, speaker, text) of every room line that said a secret, as the room stored it
    stored_lines: list[tuple[SecretShape, str, str]] = field(default_factory=list)
    imported: dict[str, Any] = field(default_factory=dict)
    plantings: Counter[str] = field(default_factory=Counter)  # door → secrets said through it

    def conversation(self, user_id: str, conversation_id: str, door: str) -> None:
        self.conversations.setdefault(user_id, []).append(conversation_id)
        self.doors[conversation_id] = f"{door} conversation {conversation_id}"


def _chat_turn(
    account: Account, message: str, conversation_id: str | None, **extra: Any
) -> dict[str, Any]:
    body = {"message": message, **extra}
    if conversation_id is not None:
        body["conversation_id"] = conversation_id
    answer = account.call("POST", "/v1/chat", body)
    assert answer.status == 200, (message[:60], answer)
    account.world.between_turns()
    return dict(answer.body)


def _plant_in_chat(world: GateWorld, planted: Planted) -> None:
    """Each shape in one chat, JSON; a few streamed; a few in a temporary chat."""
    account = world.account(CHAT)
    conversation_id = None
    for shape in SHAPES:
        conversation_id = _chat_turn(account, shape.sentence, conversation_id)["conversation_id"]
    assert conversation_id is not None
    planted.conversation(CHAT, conversation_id, "chat")
    planted.plantings["chat"] += len(SHAPES)

    streamed = None
    for shape in SHAPES[::4]:
        body = {"message": shape.sentence}
        if streamed is not None:
            body["conversation_id"] = streamed
        answer = account.call("POST", "/v1/chat", body, stream=True)
        assert answer.status == 200 and answer.body[-1]["event"] == "done", answer
        streamed = answer.body[-1]["data"]["conversation_id"]
        world.between_turns()
        planted.plantings["chat, streamed"] += 1
    assert streamed is not None
    planted.conversation(CHAT, streamed, "streamed chat")

    temporary = None
    for shape in SHAPES[2::5]:
        turn = _chat_turn(account, shape.sentence, temporary, temporary=True)
        temporary = turn["conversation_id"]
        planted.plantings["chat, temporary"] += 1
    assert temporary is not None
    planted.conversation(CHAT, temporary, "temporary chat")


#: ongoing concerns a persona follows (a thread keeps its details verbatim), each said
#: beside a secret: (the concern, the word of its details that must be kept)
CONCERNS = (
    ("I have a job interview at Brightwave on Thursday", "Brightwave"),
    ("I'm house hunting in Leith", "Leith"),
)


def _plant_beside_concerns(world: GateWorld, planted: Planted) -> None:
    """Concerns the persona will follow as threads, each said beside every third shape."""
    account = world.account(THREADS)
    for concern, _ in CONCERNS:
        conversation_id = None
        for shape in SHAPES[::3]:
            said = f"{concern}, and {shape.clause}."
            conversation_id = _chat_turn(account, said, conversation_id)["conversation_id"]
            planted.plantings["chat: beside a concern (a thread)"] += 1
        assert conversation_id is not None
        planted.conversation(THREADS, conversation_id, "concern")


def _remember_that(sentence: str) -> str:
    """The sentence asked to be remembered, its first word as it reads mid-sentence."""
    first = sentence.split(" ", 1)[0]
    said = sentence if first in ("I", "I'm") else sentence[:1].lower() + sentence[1:]
    return f"please remember that {said}"


def _plant_through_the_save_tool(world: GateWorld, planted: Planted) -> None:
    account = world.account(SAVE)
    conversation_id = None
    for shape in SHAPES:
        turn = _chat_turn(account, _remember_that(shape.sentence), conversation_id)
        conversation_id = turn["conversation_id"]
        planted.saved[shape.name] = list(turn["saved"])
    assert conversation_id is not None
    planted.conversation(SAVE, conversation_id, "save tool")
    planted.plantings["save_memory"] += len(SHAPES)


def _observe(
    account: Account, planted: Planted, turn_id: str, turn: tuple[str, str], conversation: Any
) -> str:
    """Report one turn (the user's words, the assistant's) as `account`."""
    user, assistant = turn
    body = {"turn_id": turn_id, "user": user, "assistant": assistant}
    if conversation is not None:
        body["conversation_id"] = conversation
    answer = account.call("POST", "/v1/observe", body)
    assert answer.status == 201, (turn_id, answer)
    planted.answers.append(("POST /v1/observe", answer.body))
    account.world.between_turns()
    return str(answer.body["conversation_id"])


def _plant_by_observing(world: GateWorld, planted: Planted) -> None:
    """Each shape said by the user, and repeated by the assistant in words; the shapes
    that are secrets by their words alone repeated bare too, as a reply would."""
    account = world.account(OBSERVE)
    conversation_id = None
    for number, shape in enumerate(SHAPES):
        reply = f"Noted. Just so you know, {shape.said_back} — keep that somewhere safer."
        conversation_id = _observe(
            account, planted, f"sec-{number}", (shape.sentence, reply), conversation_id
        )
    planted.plantings["observe"] += len(SHAPES)
    planted.conversation(OBSERVE, conversation_id, "observed")
    # A reply that repeats the value alone, in the same turn (see the top).
    bare = None
    for number, shape in enumerate(BARE):
        reply = f"Okay, {shape.values[0]} it is. I've got it."
        bare = _observe(account, planted, f"sec-bare-{number}", (shape.sentence, reply), bare)
    planted.plantings["observe, the reply repeats it bare"] += len(BARE)
    planted.conversation(OBSERVE, bare, "observed, the reply repeating it bare,")


def _app(world: GateWorld, method: str, path: str, body: Any = None) -> Any:
    answer = world.api.call(APP, method, path, body)
    assert answer.status in (200, 201), (method, path, answer)
    return answer.body


def _post(world: GateWorld, caller: str, room_id: str, lines: list[tuple[str, str]]) -> Any:
    body = {"messages": [{"speaker": speaker, "text": text} for speaker, text in lines]}
    answer = world.api.call(caller, "POST", f"/v1/rooms/{room_id}/messages", body)
    assert answer.status == 201, (room_id, answer)
    world.clock.advance(BETWEEN_LINES)
    return answer.body


def _say_in_room(
    world: GateWorld,
    planted: Planted,
    caller: str,
    room_id: str,
    said: tuple[SecretShape, str, str],
    *,
    reply: str = "in words",
) -> None:
    """As `caller` (APP or the user herself), post the user's line saying the shape beside
    its fact, then the persona's line repeating the secret: `in words`, in a post of its
    own (as an app posts its own model's reply); `bare`, the value alone, in the same post.
    Keep every line as stored."""
    shape, user_id, persona = said
    said_back = (
        f"Thanks, I'll keep in mind that {shape.said_back}."
        if reply == "in words"
        else f"Okay, {shape.values[0]} it is. I've got it."
    )
    lines = [(f"u:{user_id}", shape.sentence), (f"p:{persona}", said_back)]
    posts = [lines] if reply == "bare" else [lines[:1], lines[1:]]
    stored = []
    for post in posts:
        answer = _post(world, caller, room_id, post)
        planted.answers.append(("POST /v1/rooms/{id}/messages (the lines as stored)", answer))
        stored += answer["messages"]
    for (speaker, _), line in zip(lines, stored, strict=True):
        planted.stored_lines.append((shape, speaker, line["text"]))


def _plant_in_rooms(world: GateWorld, planted: Planted) -> None:
    """Ana's private chat with Warren (lines the app posts for her, lines she posts
    herself, Warren's lines repeating them in words or bare, and his turns), and a group
    room of Ana and Ben with Warren and Nolan."""
    body = {"room_id": PRIVATE_ROOM, "kind": "private", "personas": [WARREN], "members": [ANA]}
    _app(world, "POST", "/v1/rooms", body)
    for number, shape in enumerate(SHAPES):
        caller = APP if number % 2 == 0 else ANA
        _say_in_room(world, planted, caller, PRIVATE_ROOM, (shape, ANA, WARREN))
        door = "the app" if caller == APP else "the user herself"
        planted.plantings[f"private room: a line {door} posted"] += 1
        if number % 5 == 4:
            turn = world.api.call(caller, "POST", f"/v1/rooms/{PRIVATE_ROOM}/turn", {})
            assert turn.status == 200, turn
            planted.answers.append(("POST /v1/rooms/{id}/turn", turn.body))
    for reply in ("bare",):  # a later post's bare value is the known limit (see the top)
        for shape in BARE:
            _say_in_room(world, planted, APP, PRIVATE_ROOM, (shape, ANA, WARREN), reply=reply)
        planted.plantings[f"private room: a persona's line repeating it {reply}"] += len(BARE)

    body = {
        "room_id": GROUP_ROOM,
        "kind": "group",
        "personas": [WARREN, NOLAN],
        "members": [ANA, BEN],
    }
    _app(world, "POST", "/v1/rooms", body)
    for number, shape in enumerate(SHAPES):
        speaker = ANA if number % 2 == 0 else BEN
        persona = WARREN if number % 2 == 0 else NOLAN
        _say_in_room(world, planted, APP, GROUP_ROOM, (shape, speaker, persona))
        planted.plantings["group room: a line the app posted"] += 1
        if number % 5 == 4:
            turn = _app(world, "POST", f"/v1/rooms/{GROUP_ROOM}/turn", {"persona": persona})
            planted.answers.append(("POST /v1/rooms/{id}/turn", turn))
    planted.plantings["rooms: a persona's line repeating it in words"] += 2 * len(SHAPES)


def _refused(planted: Planted, door: str, shape: SecretShape, answer: Answer) -> None:
    planted.refused.append((door, shape.name, answer.status, answer.error_code))
    planted.answers.append((f"{door} (refused)", answer.body))


def _row(number: int, text: str, **extra: Any) -> dict[str, Any]:
    at = "2026-11-20T09:00:00.000000Z"
    return {
        "memory_id": f"mem_gate_secrets_{number:03d}",
        "text": text,
        "category": "general",
        "kind": "fact",
        "persona": "assistant",
        "stated_by": "user",
        "status": "active",
        "created_at": at,
        "updated_at": at,
        **extra,
    }


#: the one row of the import that holds no secret: it must be imported
CLEAN_ROW = "Grows tomatoes on the balcony."
#: the memory each refused correction was asked of: it must stay as it was
KEPT_ROW = "Keeps a reading list, shelf {number}."
#: the text of every row whose uses hold a secret (nothing of such a row may be stored)
USES_ROW = "Keeps a garden journal, volume {number}."


def _plant_through_the_forms(world: GateWorld, planted: Planted) -> None:
    """The writes that must refuse a secret outright, and the import, which must skip
    each row that holds one (in its text or its uses) and the note."""
    account = world.account(FORMS)
    for number, shape in enumerate(SHAPES):
        said = {"text": shape.sentence}
        _refused(planted, "POST /v1/memories", shape, account.call("POST", "/v1/memories", said))
        kept = account.ok("POST", "/v1/memories", {"text": KEPT_ROW.format(number=number)})
        corrected = account.call("PATCH", f"/v1/memories/{kept['memory_id']}", said)
        _refused(planted, "PATCH /v1/memories/{id}", shape, corrected)
        noted = account.call("PUT", "/v1/memory/settings", {"note": shape.sentence})
        _refused(planted, "PUT /v1/memory/settings (note)", shape, noted)
    for door in ("POST /v1/memories", "PATCH /v1/memories/{id}", "PUT /v1/memory/settings"):
        planted.plantings[door] += len(SHAPES)

    rows = [_row(0, CLEAN_ROW)]
    rows += [_row(1 + number, shape.sentence) for number, shape in enumerate(SHAPES)]
    in_uses = [shape for shape in SHAPES if len(shape.clause) <= USE_CHARS]
    rows += [
        _row(100 + number, USES_ROW.format(number=number), uses=["plan a budget", shape.clause])
        for number, shape in enumerate(in_uses)
    ]
    document = {
        "schema": "chatmemory.export/1",
        "user": {
            "settings": {
                "enabled": True,
                "note": SHAPES[0].sentence,
                "muted_personas": [],
                "timezone": "UTC",
            }
        },
        "memories": rows,
    }
    report = account.ok("POST", "/v1/memories/import", document)
    held = [None, *(s.name for s in SHAPES), *(f"{s.name} (in its uses)" for s in in_uses)]
    planted.imported = {"report": report, "rows": held}
    planted.answers.append(("POST /v1/memories/import", report))
    planted.plantings["import: a row's text"] += len(SHAPES)
    planted.plantings["import: a row's uses"] += len(in_uses)
    planted.plantings["import: the note"] += 1


def flush(world: GateWorld) -> None:
    """What `chatmemory flush` does (local/cli.py `flush`), on the gate's own clock:
    every pending background write, room write and purge, the queued jobs, the uses
    catch-up, the nightly thread review, then the change relay into `changes.jsonl`."""
    world.run_background()
    container = world.container
    container.purge_sweep.sweep(now_or_never=True)
    world.jobs.run_pending()
    container.uses.catch_up()
    container.threads.review()
    relay = container.change_relay
    assert relay is not None, "the local store relays its changes"
    relay.relay()


def _fold_into_the_summary(account: Account, conversation_id: str) -> dict[str, Any]:
    """Chat on until no planted turn is left in the conversation's window (each was
    masked when stored, so a planted turn reads "[secret withheld]"): every one of them
    is in the summary only. Returns the blocks then."""
    filler = iter(FILLER * 3)
    for _ in range(MAX_FILLER):
        blocks = account.context("And one more thing.", conversation_id)["blocks"]
        if not any(WITHHELD in turn["content"] for turn in blocks["recent"]):
            return dict(blocks)
        _chat_turn(account, next(filler), conversation_id)
    raise AssertionError(f"the planted turns never left the window of {conversation_id}")


@dataclass
class Gate:
    """The whole gate's run: what was planted, and what each search found."""

    world: GateWorld
    planted: Planted
    windows: dict[str, dict[str, Any]]  # conversation → its blocks right after planting
    summaries: dict[str, dict[str, Any]]  # conversation → its blocks once folded
    memories: dict[str, list[dict[str, Any]]]  # user → every memory, any status
    searched: Searched
    disk: list[SecretHit]
    files: list[Path]
    changes: list[dict[str, Any]]
    log: list[SecretHit]
    log_records: int
    warnings: list[str]


# ---- reading: every path a user has ------------------------------------------------------


def _recall(account: Account, query: str, persona: str | None = None) -> Any:
    body: dict[str, Any] = {"query": query, "k": 15, "expand": 15}
    if persona is not None:
        body["persona"] = persona
    return account.ok("POST", "/v1/recall", body)


def _export(account: Account, searched: Searched) -> None:
    cursor: str | None = None
    while True:
        query = "/v1/memories/export?limit=20" + (f"&next={quote(cursor)}" if cursor else "")
        page = searched.look("GET /v1/memories/export (every page)", account.ok("GET", query))
        cursor = page["next"]
        if not cursor:
            return


def _read_as(world: GateWorld, user_id: str, planted: Planted, searched: Searched) -> list[Any]:
    """Every read path of one account; returns every memory it holds, any status."""
    account = world.account(user_id)
    for shape in SHAPES:
        searched.look("POST /v1/context (new conversation)", account.context(shape.question))
        searched.look("POST /v1/recall (expand)", _recall(account, shape.question))
    for shape in SHAPES[::3]:
        searched.look("POST /v1/chat (new conversation)", _chat_turn(account, shape.question, None))
    for shape in SHAPES[1::7]:
        answer = account.call("POST", "/v1/chat", {"message": shape.question}, stream=True)
        assert answer.status == 200, answer
        searched.look("POST /v1/chat, streamed (new conversation)", answer.body)
        world.between_turns()
    for conversation_id in planted.conversations.get(user_id, []):
        door = planted.doors[conversation_id]
        for shape in SHAPES[::2]:
            searched.look(
                "POST /v1/context (planting conversation)",
                account.context(shape.question, conversation_id),
                door,
            )
        for shape in SHAPES[::7]:
            searched.look(
                "POST /v1/chat (planting conversation, a later turn)",
                _chat_turn(account, shape.question, conversation_id),
                door,
            )
    everything = account.memories("all")
    searched.look("GET /v1/memories?status=all", everything)
    searched.look("GET /v1/memories?status=archived", account.memories("archived"))
    searched.look(
        "GET /v1/memories?group=persona", account.ok("GET", "/v1/memories?group=persona&status=all")
    )
    now = world.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    searched.look("GET /v1/memories?as_of", account.ok("GET", f"/v1/memories?as_of={now}"))
    for memory in everything:
        memory_id = memory["memory_id"]
        searched.look("GET /v1/memories/{id}", account.ok("GET", f"/v1/memories/{memory_id}"))
        searched.look(
            "GET /v1/memories/{id}/history", account.ok("GET", f"/v1/memories/{memory_id}/history")
        )
    _export(account, searched)
    searched.look("GET /v1/notices", account.ok("GET", "/v1/notices"))
    searched.look("GET /v1/memory/settings", account.ok("GET", "/v1/memory/settings"))
    return everything


def _read_the_rooms(world: GateWorld, searched: Searched) -> None:
    """Both rooms as the app and as Ana in her private chat, and new rooms opened after
    the rooms' writes (their blocks are built from what the personas learned)."""
    ana = world.account(ANA)
    fresh_private = ana.ok(
        "POST", "/v1/rooms", {"kind": "private", "personas": [WARREN, NOLAN], "members": [ANA]}
    )["room_id"]
    fresh_group = _app(
        world,
        "POST",
        "/v1/rooms",
        {"kind": "group", "personas": [WARREN, NOLAN], "members": [ANA, BEN]},
    )["room_id"]
    rooms = {
        PRIVATE_ROOM: (WARREN,),
        GROUP_ROOM: (WARREN, NOLAN),
        fresh_private: (WARREN, NOLAN),
        fresh_group: (WARREN, NOLAN),
    }
    for room_id, personas in rooms.items():
        callers = (APP, ANA) if room_id in (PRIVATE_ROOM, fresh_private) else (APP,)
        for caller in callers:
            for shape in SHAPES[::5]:
                speaker = f"u:{ANA}"
                body = {"messages": [{"speaker": speaker, "text": shape.question}]}
                posted = world.api.call(caller, "POST", f"/v1/rooms/{room_id}/messages", body)
                assert posted.status == 201, posted
                searched.look("POST /v1/rooms/{id}/messages (a question)", posted.body)
                for persona in personas:
                    context = world.api.call(
                        caller, "GET", f"/v1/rooms/{room_id}/context?persona={persona}"
                    )
                    turn = world.api.call(
                        caller, "POST", f"/v1/rooms/{room_id}/turn", {"persona": persona}
                    )
                    assert context.status == 200 and turn.status == 200, (context, turn)
                    searched.look("GET /v1/rooms/{id}/context", context.body)
                    searched.look("POST /v1/rooms/{id}/turn", turn.body)
                world.between_turns()
            room = world.api.call(caller, "GET", f"/v1/rooms/{room_id}")
            assert room.status == 200, room
            searched.look("GET /v1/rooms/{id}", room.body)
    for persona in (WARREN, NOLAN):
        for user_id in (ANA, BEN):
            for shape in SHAPES:
                searched.look(
                    "POST /v1/recall (expand, a persona)",
                    _recall(world.account(user_id), shape.question, persona),
                )


def _read_everything(
    world: GateWorld, planted: Planted
) -> tuple[Searched, dict[str, list[dict[str, Any]]]]:
    searched = Searched()
    for door, answer in planted.answers:
        searched.look(f"the answer of {door}", answer)
    memories = {user_id: _read_as(world, user_id, planted, searched) for user_id in ACCOUNTS}
    _read_the_rooms(world, searched)
    return searched, memories


# ---- on disk and in the log --------------------------------------------------------------


def _offsets(data: bytes, marker: str) -> list[int]:
    """Where `marker` is in raw bytes, in any case (a short one only where no letter or
    digit touches it)."""
    needle = re.escape(marker.encode())
    if len(marker) < SHORT:
        needle = rb"(?<![0-9A-Za-z])" + needle + rb"(?![0-9A-Za-z])"
    return [found.start() for found in re.finditer(needle, data, re.IGNORECASE)]


def _in_the_database(database: Path, marker: str) -> list[str]:
    """table.column of every live row of the SQLite file holding `marker`, to say where
    a hit on disk comes from (none: it is in a page SQLite freed but did not wipe)."""
    places = []
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        for (table,) in tables.fetchall():
            columns = connection.execute(f"PRAGMA table_info('{table}')").fetchall()
            for column in (row[1] for row in columns):
                cell = f'CAST("{column}" AS TEXT)'
                sql = f'SELECT {cell} FROM "{table}" WHERE {cell} LIKE ?'  # noqa: S608 - its own names
                values = connection.execute(sql, (f"%{marker}%",)).fetchall()
                if any(_offsets(str(value).encode(), marker) for (value,) in values):
                    places.append(f"{table}.{column}")
    return places


def _scan_disk(world: GateWorld) -> tuple[list[Path], list[SecretHit]]:
    """Every file under the state folder, and every form of every secret in its bytes."""
    state_dir = world.container.settings.state_dir
    database = world.container.settings.sqlite_path
    files = sorted(path for path in state_dir.rglob("*") if path.is_file())
    hits = []
    for path in files:
        data = path.read_bytes()
        for marker in MARKERS:
            offsets = _offsets(data, marker)
            if not offsets:
                continue
            first = offsets[0]
            around = data[max(0, first - 60) : first + len(marker) + 60]
            where = f"byte {first} (1st of {len(offsets)}): {around.decode(errors='replace')!r}"
            if path.name.startswith(database.name):
                where += f"; live rows: {_in_the_database(database, marker) or 'none'}"
            file = str(path.relative_to(state_dir))
            hits.append(SecretHit(file, _MARKER_SHAPE[marker], marker, where))
    return files, hits


def _scan_log(captured: Captured) -> tuple[list[SecretHit], list[str]]:
    """Every form of every secret in any record (and the records at WARNING or above)."""
    records = list(captured.texts())
    everything = "\n".join(text for _, text in records).encode()
    present = [marker for marker in MARKERS if _offsets(everything, marker)]
    hits = [
        SecretHit(
            "log",
            _MARKER_SHAPE[marker],
            marker,
            f"{record.name} {record.levelname} {record.getMessage()[:120]!r}",
        )
        for record, text in records
        for marker in present
        if _offsets(text.encode(), marker)
    ]
    warnings = [
        f"{record.name}: {record.getMessage()}"
        for record, _ in records
        if record.levelno >= logging.WARNING
    ]
    return hits, warnings


def _changes_of_the_gate(world: GateWorld) -> list[dict[str, Any]]:
    path = world.container.settings.state_dir / "changes.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [line for line in lines if line.get("user_id") in ACCOUNTS]


# ---- the gate ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gate(world: GateWorld, product_log: Captured) -> Gate:
    """Plant every shape through every door, let the background work run, fold the
    planting conversations, read every path, then search the disk and the log."""
    requests_before = world.api.requests
    planted = Planted()
    _plant_in_chat(world, planted)
    _plant_beside_concerns(world, planted)
    _plant_through_the_save_tool(world, planted)
    _plant_by_observing(world, planted)
    _plant_in_rooms(world, planted)
    _plant_through_the_forms(world, planted)
    windows = {
        conversation_id: world.account(user_id).context("And one more thing.", conversation_id)[
            "blocks"
        ]
        for user_id, conversations in planted.conversations.items()
        for conversation_id in conversations
    }
    flush(world)
    summaries = {
        conversations[0]: _fold_into_the_summary(world.account(user_id), conversations[0])
        for user_id, conversations in planted.conversations.items()
    }
    flush(world)
    searched, memories = _read_everything(world, planted)
    for blocks_of in (windows, summaries):
        for conversation_id, blocks in blocks_of.items():
            door = planted.doors[conversation_id]
            searched.look("POST /v1/context (planting conversation)", blocks, door)
    flush(world)  # what the reads said is learned, folded and relayed too
    files, disk = _scan_disk(world)
    log, warnings = _scan_log(product_log)
    ran = Gate(
        world=world,
        planted=planted,
        windows=windows,
        summaries=summaries,
        memories=memories,
        searched=searched,
        disk=disk,
        files=files,
        changes=_changes_of_the_gate(world),
        log=log,
        log_records=len(product_log.records),
        warnings=warnings,
    )
    plantings = sum(planted.plantings.values())
    tally.record_replay(
        GATE,
        facts=len(SHAPES),
        probes=len(searched.answers),
        requests=world.api.requests - requests_before,
        hits=len(searched.hits) + len(disk) + len(log),
        embedder=world.embedder,
        detail=(
            f"{len(SHAPES)} shapes x {len(planted.plantings)} doors ({plantings} plantings); "
            f"{len(searched.answers)} read paths ({searched.answers.total()} answers) "
            f"+ {len(files)} files on disk + {len(product_log.records)} log records; "
            f"hits: {len(searched.hits)} read, {len(disk)} disk, {len(log)} log"
        ),
    )
    return ran


def test_every_write_that_must_refuse_a_secret_refuses_it(gate: Gate) -> None:
    # Given every shape sent as a memory, a correction and a note, and imported as a row's
    # text, in a row's uses and as the note
    planted = gate.planted
    report = planted.imported["report"]
    skipped = {row["index"]: row["reason"] for row in report["skipped"]}
    stored = [memory["text"] for memory in gate.memories[FORMS]]
    kept = [KEPT_ROW.format(number=number) for number in range(len(SHAPES))]

    # Then each write was a 400 secret_refused, the import skipped every row holding one
    # and the note (and imported the one row that holds none), and nothing of a refused
    # write or row was stored
    assert len(planted.refused) == 3 * len(SHAPES)
    taken = [
        f"{door} took {shape}: {status} {code or ''}"
        for door, shape, status, code in planted.refused
        if (status, code) != (400, "secret_refused")
    ]
    taken += [
        f"the import took the row holding {held}: {skipped.get(index, 'imported')}"
        for index, held in enumerate(planted.imported["rows"])
        if held and not skipped.get(index, "").startswith("secret_refused: ")
    ]
    if report["settings"] != "skipped" or not skipped.get(None, "").startswith("secret_"):
        taken.append(f"the import took the note: {report['settings']}")
    taken += [f"stored: {text!r}" for text in stored if text not in [*kept, CLEAN_ROW]]
    assert taken == [], "\n".join(taken)
    assert sorted(stored) == sorted([*kept, CLEAN_ROW]), stored


def test_the_save_tool_keeps_each_fact_and_leaves_its_secret_out(gate: Gate) -> None:
    # Given "please remember that <fact>, and <secret>" for every shape
    # Then each turn saved one memory, and each fact is among the memories
    unsaved = {name: ids for name, ids in gate.planted.saved.items() if len(ids) != 1}
    assert unsaved == {}, unsaved
    texts = [memory["text"] for memory in gate.memories[SAVE]]
    missing = [shape.name for shape in SHAPES if not any(shape.fact_word in t for t in texts)]
    assert missing == [], (missing, texts)


def test_every_stored_message_keeps_its_words_with_the_secret_withheld(gate: Gate) -> None:
    # Given every shape said in rooms and conversations
    planted = gate.planted

    # Then every line a user said in a room was stored with its fact, and the secret
    # withheld in its place (a persona's line keeps its words too; whether its secret was
    # withheld is for the read paths' search, the answer of the post being one of them)
    assert len(planted.stored_lines) == 4 * len(SHAPES) + 2 * len(BARE)
    said = [(shape, text) for shape, speaker, text in planted.stored_lines if speaker[0] == "u"]
    replies = [text for _, speaker, text in planted.stored_lines if speaker[0] == "p"]
    assert [text for shape, text in said if shape.fact_word not in text] == []
    assert [r for r in replies if not r.startswith(("Thanks, I'll keep in mind", "Okay, "))] == []
    assert [(shape.name, text) for shape, text in said if WITHHELD not in text] == []
    # and each planting conversation's window held its planted turns, masked
    for conversation_id, blocks in gate.windows.items():
        said = [turn["content"] for turn in blocks["recent"]]
        assert any(WITHHELD in content for content in said), (conversation_id, said)


def test_the_planted_turns_are_folded_into_the_summaries_with_the_secret_withheld(
    gate: Gate,
) -> None:
    # Given the planting conversations chatted on until no planted turn was in the window
    # Then each summary holds what the planted turns said, their secrets withheld
    for conversation_id, blocks in gate.summaries.items():
        summary = blocks["summary"]
        assert WITHHELD in summary, (conversation_id, summary)
        kept = [shape.fact_word for shape in SHAPES] + [detail for _, detail in CONCERNS]
        assert any(word in summary for word in kept), (conversation_id, summary)


def test_the_concerns_beside_the_secrets_are_followed_as_threads(gate: Gate) -> None:
    # Given concerns said beside secrets
    # Then each is a thread, its details kept
    threads = [m["text"] for m in gate.memories[THREADS] if m["kind"] == "thread"]
    for _, detail in CONCERNS:
        assert any(detail in text for text in threads), (detail, threads)


def test_the_facts_beside_the_secrets_are_learned_and_no_memory_keeps_a_mask(gate: Gate) -> None:
    # Given facts said beside secrets in a chat, an observed turn and a private room
    # Then the background write learned them (a day's cap of them at most)
    for user_id in (CHAT, OBSERVE, ANA):
        texts = " ".join(memory["text"] for memory in gate.memories[user_id])
        learned = [shape.fact_word for shape in SHAPES if shape.fact_word in texts]
        assert len(learned) >= 5, (user_id, learned, texts)
    # and no memory of anyone keeps the mark of a withheld secret
    marked = [
        memory["text"]
        for memories in gate.memories.values()
        for memory in memories
        if "withheld" in memory["text"]
    ]
    assert marked == [], marked


def test_no_read_path_returns_a_secret(gate: Gate) -> None:
    # Given every shape planted through every door, the background work done, and the
    # planting conversations folded into their summaries
    # When every read path a user has is asked (the answers of the writes among them)
    searched = gate.searched

    # Then no answer holds any form of any secret
    assert len(searched.answers) >= 15, searched.answers
    assert searched.hits == [], _describe(searched.hits)


def test_no_file_in_the_state_folder_holds_a_secret(gate: Gate) -> None:
    # Given the state folder after the gate: the SQLite file with its -wal and -shm, and
    # the change events the relay wrote
    names = {path.name for path in gate.files}
    database = gate.world.container.settings.sqlite_path.name
    assert {database, f"{database}-wal", "changes.jsonl"} <= names, names
    assert gate.changes, "the change relay published the gate's memory changes"

    # Then no file holds any form of any secret, as raw bytes
    assert gate.disk == [], _describe(gate.disk)


def test_no_log_record_holds_a_secret(gate: Gate) -> None:
    # Given every record the product logged while the gate ran, at every level
    assert gate.log_records > 0

    # Then none holds any form of any secret, and nothing went wrong on the way
    assert gate.log == [], _describe(gate.log)
    assert gate.warnings == []


def _luhn_valid(digits: str) -> bool:
    total = 0
    for place, digit in enumerate(int(char) for char in reversed(digits)):
        doubled = digit * 2 if place % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def _iban_valid(iban: str) -> bool:
    moved = compact(iban)[4:] + compact(iban)[:4]
    return int("".join(str(int(char, 36)) for char in moved)) % 97 == 1


def test_the_planted_secrets_are_real_shapes_and_the_search_sees_every_form_of_them() -> None:
    # Given the planted shapes
    kinds = Counter(shape.kind for shape in SHAPES)

    # Then there are enough of them, of every kind, each as valid as a real one
    assert len(SHAPES) >= 15 and set(kinds) == {CARD, CREDENTIAL, KEY, GOVERNMENT_ID, BANK}
    cards = [compact(value) for shape in SHAPES if shape.kind == CARD for value in shape.values]
    assert len(cards) >= 4 and all(_luhn_valid(card) for card in cards), cards
    assert _iban_valid(next(shape for shape in SHAPES if shape.name == "IBAN").values[0])
    # and no text the gate says beside them, nor the product's own prompt, holds any form
    # of any of them (a hit can only be a secret that was kept)
    fixed = [*(s.fact for s in SHAPES), *(s.question for s in SHAPES), *FILLER, WITHHELD]
    fixed += [CLEAN_ROW, USES_ROW, KEPT_ROW, chat_system_prompt()]
    assert find_markers(fixed, MARKERS) == []
    # and the search finds every form of every secret anywhere in an answer, a short one
    # only standing alone (never inside a random id)
    for marker in MARKERS:
        answer = {"items": [{"evidence": [{"text": f"so: {marker.upper()}."}]}]}
        assert marker in {hit.marker for hit in secret_hits("test", answer)}
        assert _offsets(f"x\x00{marker}\x01".encode(), marker) == [2]
    assert secret_hits("test", {"memory_id": "mem_8c730519fa"}) == []
    assert _offsets(b"evt_00730519", "730519") == []
