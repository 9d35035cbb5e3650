"""Field rules shared by the entities: one place that words the errors callers see."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from chatmemory.domain.errors import InvalidField

USER_ID_MAX = 128
PERSONA_MAX = 64
CATEGORY_MAX = 40
KEY_MAX = 80
MEMORY_TEXT_MAX = 500  # what a user may write; extraction keeps to 200 (seed 000)
EXTRACTED_TEXT_MAX = 200
NOTE_MAX = 400
MESSAGE_MAX = 8000
ASSISTANT_MESSAGE_MAX = 32000
SUMMARY_MAX_CHARS = 4000  # ~400 tokens of summary, with room for wide scripts
PROFILE_MAX_CHARS = 3000  # ~300 tokens
NOTICE_TEXT_MAX = 600
META_MAX_BYTES = 2048
EMBEDDING_MAX_BYTES = 4100  # a 1024-d int8 vector plus its scale fits; float32 does not

DEFAULT_PERSONA = "assistant"
DEFAULT_CATEGORY = "general"

_PERSONA = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_KEY = re.compile(r"^[a-z0-9][a-z0-9_.:-]*$")
_OPAQUE_ID = re.compile(r"^[A-Za-z0-9_.:-]+$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def user_id(value: str, field: str = "user_id") -> str:
    if not isinstance(value, str) or not value or len(value) > USER_ID_MAX:
        raise InvalidField(field, f"must be 1..{USER_ID_MAX} characters")
    if _ANY_CONTROL.search(value) or value != value.strip():
        raise InvalidField(field, "must not contain control characters or surrounding spaces")
    return value


def opaque_id(field: str, value: str, max_len: int = 128) -> str:
    if not isinstance(value, str) or not value or len(value) > max_len:
        raise InvalidField(field, f"must be 1..{max_len} characters")
    if not _OPAQUE_ID.match(value):
        raise InvalidField(field, "must use only letters, digits and _ . : -")
    return value


def persona(value: str, field: str = "persona") -> str:
    if not isinstance(value, str) or not value or len(value) > PERSONA_MAX:
        raise InvalidField(field, f"must be 1..{PERSONA_MAX} characters")
    if not _PERSONA.match(value):
        raise InvalidField(field, "must be lowercase letters, digits, '-' or '_'")
    return value


def category(value: str, field: str = "category") -> str:
    if not isinstance(value, str) or not value or len(value) > CATEGORY_MAX:
        raise InvalidField(field, f"must be 1..{CATEGORY_MAX} characters")
    if not _SNAKE.match(value):
        raise InvalidField(field, "must be snake_case (e.g. diet, home_city)")
    return value


def key(value: str, field: str = "key") -> str:
    if not isinstance(value, str) or not value or len(value) > KEY_MAX:
        raise InvalidField(field, f"must be 1..{KEY_MAX} characters")
    if not _KEY.match(value):
        raise InvalidField(field, "must be lowercase letters, digits and _ . : -")
    return value


def text(field: str, value: str, max_len: int, *, allow_empty: bool = False) -> str:
    """Human text: bounded, no control characters; blank only where allowed."""
    if not isinstance(value, str):
        raise InvalidField(field, "must be a string")
    if not allow_empty and not _visible(value):
        raise InvalidField(field, f"must be 1..{max_len} characters and not blank")
    if len(value) > max_len:
        raise InvalidField(field, f"must be at most {max_len} characters")
    if _CONTROL.search(value):
        raise InvalidField(field, "must not contain control characters")
    return value


# Characters that take up no space on a page: format characters (zero-width spaces and
# joiners, bidi marks, the BOM, the soft hyphen) and the Hangul and Mongolian fillers.
_BLANK_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u180e\u2800")


def _visible(value: str) -> bool:
    """Whether a reader would see anything: text made only of spaces and invisible
    characters is blank."""
    return any(
        not char.isspace() and unicodedata.category(char) != "Cf" and char not in _BLANK_EXTRA
        for char in value
    )


#: the most any stored count may be (a use count, times seen): far past any real one, and
#: well inside every store's integers
MAX_COUNT = 1_000_000_000


def int_range(field: str, value: int, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidField(field, "must be an integer")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise InvalidField(field, f"must be {bound}")
    return value


def id_tuple(field: str, values: Iterable[str], max_items: int = 200) -> tuple[str, ...]:
    items = tuple(values)
    if len(items) > max_items:
        raise InvalidField(field, f"must hold at most {max_items} ids")
    for item in items:
        opaque_id(field, item, max_len=160)
    return items


def json_mapping(field: str, value: Mapping[str, Any], max_bytes: int) -> dict[str, Any]:
    """A JSON-serialisable mapping of bounded size (what both stores can hold verbatim)."""
    if not isinstance(value, Mapping):
        raise InvalidField(field, "must be an object")
    try:
        encoded = json.dumps(dict(value), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidField(field, "must be JSON-serialisable") from exc
    if len(encoded.encode()) > max_bytes:
        raise InvalidField(field, f"must be at most {max_bytes} bytes as JSON")
    loaded: dict[str, Any] = json.loads(encoded)
    return loaded
