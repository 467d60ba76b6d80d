"""Group error messages into templates: values become placeholders.

``Error: Patient PT-20451 not found`` and ``Error: Patient PS-84201 not found``
are one message a tool author fixes once, so the ranking counts them together
as ``Error: Patient <id> not found``.

Why hand-written masking rather than a log-template miner such as drain3:
drain3 learns templates online, so a message's template depends on what was
seen before it and on tuning (similarity threshold, tree depth); templates
would change between runs and between stores, and short messages of the same
length ("Flight X not found" / "Patient X not found") can merge. loopscope
needs a template key that is a pure function of the text, stable across
weeks so a fixed message can be compared before and after a deploy. drain3's
own documentation recommends exactly this masking (ids, numbers, IPs) as its
preprocessing step; for error messages, masking alone is enough.

Order matters: structured values (URLs, emails, UUIDs, dates, paths) are
masked before the generic id and number patterns would cut them apart.
"""

from __future__ import annotations

import json
import re
from typing import Any

from loopscope.analyses.lint.text import parse_json_object

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s'\"<>)\]]+", re.IGNORECASE), "<url>"),
    (re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b"), "<email>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE), "<uuid>"),
    (
        re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+\-]\d{2}:?\d{2})?)?\b"),
        "<date>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b"), "<time>"),
    # quoted values: keep the quotes so the shape of the message stays readable
    (re.compile(r"'[^'\n]{1,200}'"), "'<*>'"),
    (re.compile(r"\"[^\"\n]{1,200}\""), '"<*>"'),
    (re.compile(r"`[^`\n]{1,200}`"), "`<*>`"),
    (re.compile(r"«[^»\n]{1,200}»|»[^«\n]{1,200}«|“[^”\n]{1,200}”"), "«<*>»"),
    (re.compile(r"(?:(?<![\w.<])/[\w.\-]+(?:/[\w.\-]*)+|\b[A-Za-z]:\\[^\s'\"]+)"), "<path>"),
    (re.compile(r"\b(?:0x)?(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b", re.IGNORECASE), "<hex>"),
    # ids: letters and digits mixed (HAT268, PT-20451, certificate_3221322, cus_NffrFeUf)
    (re.compile(r"\b(?=[\w\-]*\d)[A-Za-z][\w\-]*[A-Za-z0-9]\b|\b\d+[A-Za-z][\w\-]*\b"), "<id>"),
    (re.compile(r"\b[a-z]+_(?=[A-Za-z0-9]*[0-9A-Z])[A-Za-z0-9]{8,}\b"), "<id>"),
    (re.compile(r"(?<![\w<])[+\-]?\$?\d+(?:[.,]\d+)*\b"), "<num>"),
)
_SPACE_RE = re.compile(r"[ \t]+")
MAX_TEMPLATE_CHARS = 300


def _mask(text: str) -> str:
    for regex, placeholder in _MASKS:
        text = regex.sub(placeholder, text)
    return text


def _mask_json(value: Any) -> Any:
    # A JSON body keeps its keys (they are the message's structure) and masks its values.
    if isinstance(value, dict):
        return {key: _mask_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask_json(item) for item in value]
    if isinstance(value, str):
        return _mask(value)
    if isinstance(value, bool) or value is None:
        return value
    return "<num>"


def template_of(text: str | None) -> str:
    """The message with its values replaced by placeholders (whitespace collapsed, capped)."""
    if not text:
        return ""
    obj = parse_json_object(text)
    out = json.dumps(_mask_json(obj), ensure_ascii=False) if obj is not None else _mask(text)
    out = _SPACE_RE.sub(" ", out).strip()
    return out[:MAX_TEMPLATE_CHARS]
