"""The tools the write path's structured answers come back through: `record_memories`
(extract) and `route_memories` (route), with the values they offer and their budgets.

The model is made to call one of them and its answer is that call's input; the schemas
offer only what the parser accepts (parsing.py), so anything else is dropped there.
"""

from __future__ import annotations

from anthropic.types import ToolParam

from chatmemory.domain import rules
from chatmemory.domain.extraction import MAX_CANDIDATES, SENSITIVE_CATEGORIES
from chatmemory.domain.memory import Kind, StatedBy
from chatmemory.domain.routing import Action
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS

RECORD_MEMORIES = "record_memories"
ROUTE_MEMORIES = "route_memories"
#: room for up to 12 memories with their uses (and for thinking, where it cannot be off)
EXTRACT_MAX_TOKENS = 8192
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
                        "text": {
                            "type": "string",
                            "maxLength": rules.EXTRACTED_TEXT_MAX,
                            "description": "one standalone sentence, third person, no name",
                        },
                        "category": {"type": "string", "enum": list(EXTRACTED_CATEGORIES)},
                        "key": {
                            "type": "string",
                            "description": (
                                "snake_case conflict key of a standing fact a newer "
                                "statement replaces (home_city, diet, job …)"
                            ),
                        },
                        "kind": {"type": "string", "enum": list(EXTRACTED_KINDS)},
                        "importance": {"type": "integer", "minimum": 1, "maximum": 10},
                        "stated_by": {"type": "string", "enum": [s.value for s in StatedBy]},
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
                        "evidence": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 1},
                            "minItems": 1,
                            "description": "the numbers of the transcript lines it came from",
                        },
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
