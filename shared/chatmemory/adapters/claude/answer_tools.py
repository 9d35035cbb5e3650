"""The tools the write path's structured answers come back through: `record_memories`
(extract), `record_room_memories` (extract from a persona's seat in a room),
`route_memories` (route) and `record_uses` (the uses of memories written without them),
with the values they offer and their budgets.

The model is made to call one of them and its answer is that call's input; the schemas
offer only what the parser accepts (parsing.py), so anything else is dropped there. Both
extraction answers also carry `threads_raised`: the known threads (by the number the
request offered them under, never an id) the persona raised in the stretch, each with the
line it raised it on and how the person met it (seed 004).
"""

from __future__ import annotations

from typing import Any

from anthropic.types import ToolParam

from chatmemory.domain import rules
from chatmemory.domain.extraction import (
    DEEP_MAX_CANDIDATES,
    MAX_CANDIDATES,
)
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.room_extraction import ROOM_MAX_CANDIDATES
from chatmemory.domain.routing import Action
from chatmemory.domain.sensitive import SENSITIVE_CATEGORIES
from chatmemory.domain.threads import THREAD_TEXT_MAX, Cadence, Response
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS, MAX_USES, MIN_USES, USE_CHARS

RECORD_MEMORIES = "record_memories"
RECORD_ROOM_MEMORIES = "record_room_memories"
ROUTE_MEMORIES = "route_memories"
RECORD_USES = "record_uses"
#: room for up to 12 memories with their uses (and for thinking, where it cannot be off)
EXTRACT_MAX_TOKENS = 8192
#: a deep read: twice the memories, on a model that thinks before it answers
DEEP_EXTRACT_MAX_TOKENS = 2 * EXTRACT_MAX_TOKENS
#: a room's spell holds several people's worth (the room filter reads as many)
ROUTE_MAX_TOKENS = 4096
#: seven short phrases a memory, for the most memories one uses call is asked about
#: (services/uses.py: USES_PER_CALL)
USES_MAX_TOKENS = 4096
#: what the extractor may propose: every kind a person's words can make, a `thread` (an
#: ongoing concern the persona follows, seed 004) among them
EXTRACTED_KINDS: tuple[str, ...] = tuple(
    kind.value
    for kind in (
        Kind.FACT,
        Kind.PREFERENCE,
        Kind.EVENT,
        Kind.PROMISE,
        Kind.OPEN_LOOP,
        Kind.RELATIONSHIP,
        Kind.THREAD,
    )
)
#: how a known thread is named in a request and an answer: its number, never its id
THREAD_NUMBER_PATTERN = "^T[0-9]+$"
#: how the person met a thread the persona raised
RESPONSES: tuple[str, ...] = tuple(response.value for response in Response)
#: the recommended categories: the described ones, every sensitive one (so the write
#: filter's sensitive gate sees them by name), and the default
EXTRACTED_CATEGORIES: tuple[str, ...] = (
    *CATEGORY_DESCRIPTIONS,
    *sorted(SENSITIVE_CATEGORIES - set(CATEGORY_DESCRIPTIONS)),
    rules.DEFAULT_CATEGORY,
)

# The fields both extraction answers share, each offered the same way.
_TEXT: dict[str, Any] = {
    "type": "string",
    "maxLength": rules.EXTRACTED_TEXT_MAX,
    "description": (
        "one standalone sentence, third person, no name; a thread's current state at most "
        f"{THREAD_TEXT_MAX} characters"
    ),
}
_CATEGORY: dict[str, Any] = {"type": "string", "enum": list(EXTRACTED_CATEGORIES)}
_KEY: dict[str, Any] = {
    "type": "string",
    "description": (
        "snake_case conflict key of a standing fact a newer statement replaces "
        "(home_city, diet, job …); on a thread, the concern it follows (job_hunt, "
        "house_hunt …), the same every time"
    ),
}
_KIND: dict[str, Any] = {"type": "string", "enum": list(EXTRACTED_KINDS)}
_IMPORTANCE: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 10}
_STATED_BY: dict[str, Any] = {"type": "string", "enum": [s.value for s in StatedBy]}
_EVIDENCE: dict[str, Any] = {
    "type": "array",
    "items": {"type": "integer", "minimum": 1},
    "minItems": 1,
    "description": "the numbers of the transcript lines it came from",
}
# A thread's own fields, and the one a concluding fact carries (seed 004).
_CADENCE: dict[str, Any] = {
    "type": "string",
    "enum": [cadence.value for cadence in Cadence],
    "description": (
        "only on a thread: fast (moves in days), slow (moves in weeks), event (waits on a "
        "dated event)"
    ),
}
_EVENT_ON: dict[str, Any] = {
    "type": "string",
    "format": "date",
    "description": "only on a thread of cadence event: YYYY-MM-DD of the event it waits on",
}
_THREAD: dict[str, Any] = {
    "type": "string",
    "pattern": THREAD_NUMBER_PATTERN,
    "description": (
        "only on a thread: the number of the known thread this beat continues (T1 …); "
        "left out for a new concern"
    ),
}
_CONCLUDES: dict[str, Any] = {
    "type": "string",
    "pattern": THREAD_NUMBER_PATTERN,
    "description": "only on a memory that is not a thread: the number of the thread it concludes",
}
_THREAD_FIELDS: dict[str, dict[str, Any]] = {
    "cadence": _CADENCE,
    "event_on": _EVENT_ON,
    "thread": _THREAD,
    "concludes": _CONCLUDES,
}
_THREADS_RAISED: dict[str, Any] = {
    "type": "array",
    "description": (
        "each known thread the persona raised in its own line in this stretch, once; an "
        "empty list when it raised none"
    ),
    "items": {
        "type": "object",
        "properties": {
            "thread": {"type": "string", "pattern": THREAD_NUMBER_PATTERN},
            "line": {
                "type": "integer",
                "minimum": 1,
                "description": "the number of the persona's own line that raised it",
            },
            "response": {
                "type": "string",
                "enum": list(RESPONSES),
                "description": (
                    "answered: took it up; deflected: a short or sideways reply, a change of "
                    "subject; unanswered: the stretch ended before they replied"
                ),
            },
        },
        "required": ["thread", "line", "response"],
    },
}


def _record_memories_tool(max_items: int) -> ToolParam:
    """`record_memories`, offering at most `max_items` memories."""
    return {
        "name": RECORD_MEMORIES,
        "description": (
            "Record what this stretch of conversation taught you about the user: only new, "
            "durable memories, from the user's own lines, and the threads the assistant raised. "
            "Empty lists when there is nothing."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "memories": {
                    "type": "array",
                    "maxItems": max_items,
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": _TEXT,
                            "category": _CATEGORY,
                            "key": _KEY,
                            "kind": _KIND,
                            "importance": _IMPORTANCE,
                            "stated_by": _STATED_BY,
                            "valid_from": {
                                "type": "string",
                                "format": "date",
                                "description": (
                                    "YYYY-MM-DD it became true; only when a time is stated"
                                ),
                            },
                            "valid_until": {
                                "type": "string",
                                "format": "date",
                                "description": "YYYY-MM-DD it stops being true; only when stated",
                            },
                            "evidence": _EVIDENCE,
                            "uses": {
                                "type": "array",
                                "items": {"type": "string"},
                                "minItems": MIN_USES,
                                "maxItems": MAX_USES,
                            },
                            **_THREAD_FIELDS,
                        },
                        "required": [
                            "text",
                            "category",
                            "kind",
                            "importance",
                            "stated_by",
                            "evidence",
                            "uses",
                        ],
                    },
                },
                "threads_raised": _THREADS_RAISED,
            },
            "required": ["memories", "threads_raised"],
        },
    }


RECORD_MEMORIES_TOOL = _record_memories_tool(MAX_CANDIDATES)
#: a deep read's: the same tool, with room for DEEP_MAX_CANDIDATES
RECORD_MEMORIES_DEEP_TOOL = _record_memories_tool(DEEP_MAX_CANDIDATES)

#: a room's answer: each memory says whom it is about (seed 000 §2.1). The same for every
#: room and persona (the tools open the cached prefix): the request says who is present.
RECORD_ROOM_MEMORIES_TOOL: ToolParam = {
    "name": RECORD_ROOM_MEMORIES,
    "description": (
        "Record what the persona carries away from this stretch of the room: only new, "
        "durable memories, each with whom it is about, and the threads the persona raised. "
        "Empty lists when there is nothing."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "maxItems": ROOM_MAX_CANDIDATES,
                "items": {
                    "type": "object",
                    "properties": {
                        "subject": {
                            "type": "string",
                            "pattern": "^(?:self|world|u:.+)$",
                            "description": (
                                "whom it is about: 'u:<id>' of a person present, 'self' "
                                "(the persona's own promise or follow-up) or 'world'"
                            ),
                        },
                        "counterpart": {
                            "type": "string",
                            "pattern": "^u:.+$",
                            "description": "only on a 'self' memory: the 'u:<id>' it is owed to",
                        },
                        "text": _TEXT,
                        "category": _CATEGORY,
                        "key": _KEY,
                        "kind": _KIND,
                        "importance": _IMPORTANCE,
                        "stated_by": _STATED_BY,
                        "valid_from": {
                            "type": "string",
                            "format": "date",
                            "description": (
                                "YYYY-MM-DD it became true or takes place; only when a time "
                                "is stated"
                            ),
                        },
                        "evidence": _EVIDENCE,
                        **_THREAD_FIELDS,
                    },
                    "required": [
                        "subject",
                        "text",
                        "category",
                        "kind",
                        "importance",
                        "stated_by",
                        "evidence",
                    ],
                },
            },
            "threads_raised": _THREADS_RAISED,
        },
        "required": ["memories", "threads_raised"],
    },
}

ROUTE_MEMORIES_TOOL: ToolParam = {
    "name": ROUTE_MEMORIES,
    "description": "Record one decision for every candidate memory, in order.",
    "input_schema": {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "candidate": {"type": "integer", "minimum": 1},
                        "event": {"type": "string", "enum": [action.value for action in Action]},
                        "id": {
                            "type": "string",
                            "description": "the neighbour updated or closed (UPDATE, CLOSE)",
                        },
                    },
                    "required": ["candidate", "event"],
                },
            }
        },
        "required": ["decisions"],
    },
}

RECORD_USES_TOOL: ToolParam = {
    "name": RECORD_USES,
    "description": "Record the uses of every memory, by the number it was given, in order.",
    "input_schema": {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "memory": {"type": "integer", "minimum": 1},
                        "uses": {
                            "type": "array",
                            "items": {"type": "string", "maxLength": USE_CHARS},
                            "minItems": MIN_USES,
                            "maxItems": MAX_USES,
                        },
                    },
                    "required": ["memory", "uses"],
                },
            }
        },
        "required": ["memories"],
    },
}
