"""The tools the write path's structured answers come back through: `record_memories`
(extract), `record_room_memories` (extract from a persona's seat in a room) and
`route_memories` (route), with the values they offer and their budgets.

The model is made to call one of them and its answer is that call's input; the schemas
offer only what the parser accepts (parsing.py), so anything else is dropped there.
"""

from __future__ import annotations

from typing import Any

from anthropic.types import ToolParam

from chatmemory.domain import rules
from chatmemory.domain.extraction import MAX_CANDIDATES, SENSITIVE_CATEGORIES
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.room_extraction import ROOM_MAX_CANDIDATES
from chatmemory.domain.routing import Action
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS

RECORD_MEMORIES = "record_memories"
RECORD_ROOM_MEMORIES = "record_room_memories"
ROUTE_MEMORIES = "route_memories"
#: room for up to 12 memories with their uses (and for thinking, where it cannot be off)
EXTRACT_MAX_TOKENS = 8192
#: a room's spell holds several people's worth (the room filter reads as many)
ROUTE_MAX_TOKENS = 4096
#: what the extractor may propose (a `thread` is not the extractor's to make)
EXTRACTED_KINDS: tuple[str, ...] = tuple(
    kind.value
    for kind in (
        Kind.FACT,
        Kind.PREFERENCE,
        Kind.EVENT,
        Kind.PROMISE,
        Kind.OPEN_LOOP,
        Kind.RELATIONSHIP,
    )
)
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
    "description": "one standalone sentence, third person, no name",
}
_CATEGORY: dict[str, Any] = {"type": "string", "enum": list(EXTRACTED_CATEGORIES)}
_KEY: dict[str, Any] = {
    "type": "string",
    "description": (
        "snake_case conflict key of a standing fact a newer statement replaces "
        "(home_city, diet, job …)"
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

RECORD_MEMORIES_TOOL: ToolParam = {
    "name": RECORD_MEMORIES,
    "description": (
        "Record what this stretch of conversation taught you about the user: only new, "
        "durable memories, from the user's own lines. An empty list when there is nothing."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "maxItems": MAX_CANDIDATES,
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
                            "description": "YYYY-MM-DD it became true; only when a time is stated",
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
                            "minItems": 3,
                            "maxItems": 6,
                        },
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
            }
        },
        "required": ["memories"],
    },
}

#: a room's answer: each memory says whom it is about (seed 000 §2.1). The same for every
#: room and persona (the tools open the cached prefix): the request says who is present.
RECORD_ROOM_MEMORIES_TOOL: ToolParam = {
    "name": RECORD_ROOM_MEMORIES,
    "description": (
        "Record what the persona carries away from this stretch of the room: only new, "
        "durable memories, each with whom it is about. An empty list when there is nothing."
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
            }
        },
        "required": ["memories"],
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
