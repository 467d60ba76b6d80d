"""JSON text to Python values for the readers, with lone surrogates made valid text.

JSON allows ``\\ud800`` escapes that name half of a UTF-16 pair with no other half (a "lone
surrogate"); Python's decoder returns such a string, which no UTF-8 encoder (DuckDB's, a
terminal's, a report's) accepts: one such escape in a span name stopped a whole load with an
internal error. The readers decode invalid UTF-8 bytes as U+FFFD; lone surrogates get the same
treatment here. Checking costs one regular-expression scan of the text; the walk that replaces
runs only when an escape of a surrogate is present (valid pairs, emoji written as
``\\ud83d\\ude00``, are decoded into one character by ``json`` and left alone).
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _fix(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE.sub(REPLACEMENT, value)
    if isinstance(value, list):
        return [_fix(v) for v in value]
    if isinstance(value, dict):
        return {_fix(k): _fix(v) for k, v in value.items()}
    return value


def loads(text: str | bytes) -> Any:
    """``json.loads``, with every lone surrogate in strings and keys replaced by U+FFFD.

    Raises:
        ValueError, RecursionError: as ``json.loads``.
    """
    value = json.loads(text)
    probe = text if isinstance(text, str) else text.decode("utf-8", "replace")
    if _SURROGATE_ESCAPE.search(probe):
        value = _fix(value)
    return value
