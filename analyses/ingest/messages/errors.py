"""When is a tool result in a conversation log an error? The ``--error-when`` conventions.

Logs mark failed tool calls in different ways. The stored flag always wins
when there is one (Anthropic ``is_error``, a boolean ``error`` / ``is_error``
field on the result, as tau2-bench writes). Logs without a flag mark errors
only in the text; the conventions say how to read that text:

- ``flag`` (default): only the stored flag; a result without one is a success.
- ``prefix``: the text starts with ``Error:`` or ``Error `` (after leading
  whitespace), the shape of most "return the exception to the model" loops.
- ``json-error-key``: the text is a JSON object with a non-empty ``"error"`` key.
- ``regex:PATTERN``: Python regular expression searched in the text.

Several conventions may be given; a result is an error when any one matches.

Whatever the convention, a result whose text *reads* like a failure (any of
the text conventions above, or the given regexes) keeps its text as
``error_message`` even when it is not counted as an error, with
``text_reports_error: true``: the record keeps the flag, and the lint's
silent-error check sees the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.ingest import jsontext

CONVENTIONS = ("flag", "prefix", "json-error-key", "regex:PATTERN")
ERROR_PREFIX_RE = re.compile(r"\s*Error[: ]")


@dataclass(frozen=True)
class ErrorRules:
    """The parsed ``--error-when`` conventions."""

    prefix: bool = False
    json_error_key: bool = False
    patterns: tuple[re.Pattern[str], ...] = ()


def parse_error_when(values: Union[str, Sequence[str], None]) -> ErrorRules:
    """Parse ``--error-when`` values (one string, several, or None for the default ``flag``).

    Raises:
        LoopscopeError: an unknown convention or an invalid regular expression.
    """
    if values is None:
        return ErrorRules()
    if isinstance(values, str):
        values = [values]
    prefix = json_key = False
    patterns: list[re.Pattern[str]] = []
    for value in values:
        if value == "flag":
            continue
        if value == "prefix":
            prefix = True
        elif value == "json-error-key":
            json_key = True
        elif value.startswith("regex:"):
            try:
                patterns.append(re.compile(value[len("regex:") :]))
            except re.error as exc:
                raise LoopscopeError(
                    f"--error-when {value!r}: invalid regular expression ({exc})",
                    "Write a Python regular expression after 'regex:', e.g. --error-when 'regex:^(ERROR|FAILED)'.",
                ) from None
        else:
            raise LoopscopeError(
                f"--error-when {value!r} is not a known convention",
                f"Use one of: {', '.join(CONVENTIONS)}.",
            )
    return ErrorRules(prefix=prefix, json_error_key=json_key, patterns=tuple(patterns))


def _json_error(text: str) -> Optional[Any]:
    """The value of a non-empty ``"error"`` key when ``text`` is a JSON object."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        body = jsontext.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        return None
    if isinstance(body, dict):
        value = body.get("error")
        if value not in (None, False, "", {}, []):
            return value
    return None


def error_type_from_text(text: str) -> Optional[str]:
    """A stable error code from a JSON ``{"error": {"type"|"code": ...}}`` body, if any."""
    value = _json_error(text)
    if isinstance(value, dict):
        for key in ("type", "code"):
            if isinstance(value.get(key), (str, int)) and not isinstance(value.get(key), bool):
                return str(value[key])
    return None


@dataclass(frozen=True)
class Verdict:
    """How one result was classified."""

    is_error: bool
    source: Optional[str]  # which convention made it an error ('flag', 'prefix', ...)
    text_reports_error: bool  # the text reads like a failure, whatever the verdict


def _text_match(text: str, rules: ErrorRules, *, all_text_rules: bool) -> Optional[str]:
    if (rules.prefix or all_text_rules) and ERROR_PREFIX_RE.match(text):
        return "prefix"
    if (rules.json_error_key or all_text_rules) and _json_error(text) is not None:
        return "json-error-key"
    for pattern in rules.patterns:
        if pattern.search(text):
            return f"regex:{pattern.pattern}"
    return None


def classify(text: str, flag: Optional[bool], rules: ErrorRules) -> Verdict:
    """Decide ``is_error`` for a result with ``text`` and the stored ``flag`` (None if absent)."""
    reads_like_error = _text_match(text, rules, all_text_rules=True) is not None
    if flag is not None:
        return Verdict(is_error=flag, source="flag" if flag else None, text_reports_error=reads_like_error)
    source = _text_match(text, rules, all_text_rules=False)
    return Verdict(is_error=source is not None, source=source, text_reports_error=reads_like_error)
