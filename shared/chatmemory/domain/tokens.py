"""A token estimate that needs no tokenizer: the budgets are about Claude's tokens.

Claude's tokenizer is not public, so prompt sizes are estimated: about 4 characters per
token for Latin-script prose (Anthropic's rule of thumb), one token per CJK character,
and about 2.5 bytes of UTF-8 per token for other scripts. Punctuation and digits count
as their own pieces. The estimate errs slightly high, which is the safe side for a budget.
"""

from __future__ import annotations

import math
import re

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f']+")
_DIGITS = re.compile(r"\d+")
_SYMBOL = re.compile(r"[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Approximate Claude tokens in `text` (0 for empty text)."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = _CJK.sub(" ", text)
    latin_chars = sum(len(word) for word in _LATIN_WORD.findall(rest))
    latin_words = len(_LATIN_WORD.findall(rest))
    digits = sum(math.ceil(len(run) / 3) for run in _DIGITS.findall(rest))
    symbols = len(_SYMBOL.findall(rest))
    other = _LATIN_WORD.sub("", _DIGITS.sub("", _SYMBOL.sub("", rest)))
    other_bytes = len(other.replace(" ", "").replace("\n", "").encode("utf-8"))
    latin = max(latin_words, math.ceil(latin_chars / 4))
    return cjk + latin + digits + symbols + math.ceil(other_bytes / 2.5)
