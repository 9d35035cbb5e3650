"""How deeply a JSON body nests, found without parsing it, so a body nested thousands of
levels deep is refused before any parser recurses into it (Python's `json` raises
RecursionError on it; each parser has its own depth, or none)."""

from __future__ import annotations

import re

#: Levels of objects and arrays a request body may nest. The deepest body this API takes (an
#: export document: the document, its memories, one memory, its thread, a list) uses five.
MAX_JSON_DEPTH = 32
TOO_DEEP = f"the request body nests objects and arrays deeper than {MAX_JSON_DEPTH} levels"

# A whole string (its brackets are text, not nesting), or one bracket.
_TOKENS = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')
_OPENERS = frozenset(b"[{")


def nests_too_deep(body: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `body` opens more than `limit` objects and arrays inside one another.

    One pass, no recursion, over bodies the size limit keeps to 64 KiB. Brackets inside
    strings are not counted; a body that is not JSON at all is left to the parser."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if data.count(b"[") + data.count(b"{") <= limit:
        return False  # cannot nest deeper than it opens: the usual body stops here
    depth = 0
    for token in _TOKENS.finditer(data):
        first = token.group()[0]
        if first in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        elif first != ord('"'):
            depth = max(0, depth - 1)
    return False
