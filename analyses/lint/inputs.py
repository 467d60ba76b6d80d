"""Read the error texts ``loopscope lint --messages FILE`` checks.

Accepted shapes (UTF-8):

1. **A JSON list of strings**: ``["Dates must be YYYY-MM-DD", "Failed"]``. Items
   that are objects are structured error bodies and are linted as their JSON text.
2. **A tool catalog**: ``{"tools": [{"name": "check_availability", "errors":
   ["...", {"error": "...", "hint": "..."}]}]}``, or a plain mapping
   ``{"check_availability": ["...", ...]}``. Each error is reported with its tool.
3. **One JSON object that is not a catalog**: a single structured error body
   (pretty-printed or not), linted as one message.
4. **Anything else**: one message per line; blank lines are skipped. A line
   holding a JSON error body is linted as that body.

A file that starts with ``[`` or ``{`` but is not valid JSON as a whole is read
as lines, so a file of one JSON body per line works too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopscope.analyses.errors import InputNotFound, LoopscopeError

_SHAPES_HINT = (
    'give one message per line, a JSON list of strings, or a tool catalog {"tools": [{"name": "...", '
    '"errors": ["..."]}]} (see docs/lint.md)'
)


def _as_text(item: Any, where: str) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return json.dumps(item, ensure_ascii=False)
    raise LoopscopeError(f"{where}: expected a message (string or JSON object), got {type(item).__name__}", _SHAPES_HINT)


def _list_item_line(text: str, index: int) -> int | None:
    """The 1-based line on which item ``index`` of the top-level JSON list in ``text`` starts."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    for i in range(index + 1):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if i == index:
            return text.count("\n", 0, pos) + 1
        try:
            _, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
    return None


def _from_list(data: list[Any], text: str, path: Path) -> list[tuple[str | None, str]]:
    out: list[tuple[str | None, str]] = []
    for i, item in enumerate(data):
        if not isinstance(item, (str, dict)):
            line = _list_item_line(text, i)
            where = f"{path}, line {line}: item {i}" if line else f"{path}: item {i}"
            _as_text(item, where)
        out.append((None, _as_text(item, f"{path}: item {i}")))
    return out


def _from_catalog(data: dict[str, Any], path: Path) -> list[tuple[str | None, str]]:
    out: list[tuple[str | None, str]] = []
    if "tools" in data:
        tools = data["tools"]
        if not isinstance(tools, list):
            raise LoopscopeError(f"{path}: 'tools' must be a list", _SHAPES_HINT)
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("errors", []), list):
                raise LoopscopeError(f"{path}: tools[{i}] must be an object with a list 'errors'", _SHAPES_HINT)
            name = str(tool.get("name", f"tools[{i}]"))
            out += [(name, _as_text(e, f"{path}: tools[{i}].errors[{j}]")) for j, e in enumerate(tool.get("errors", []))]
        return out
    for name, errors in data.items():
        if not isinstance(errors, list):
            raise LoopscopeError(f"{path}: the value of {name!r} must be a list of messages", _SHAPES_HINT)
        out += [(str(name), _as_text(e, f"{path}: {name}[{j}]")) for j, e in enumerate(errors)]
    return out


def read_messages_file(path: Path) -> list[tuple[str | None, str]]:
    """``(tool name or None, message)`` pairs from ``path``.

    Raises:
        InputNotFound: the file does not exist.
        LoopscopeError: it is not UTF-8, holds no message, or a JSON shape is wrong.
    """
    if not path.is_file():
        raise InputNotFound(f"--messages {path}: no such file", "give the path of a text or JSON file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes().count(b"\n", 0, exc.start) + 1
        raise LoopscopeError(f"{path}, line {line}: not UTF-8 text (byte {exc.start})", _SHAPES_HINT) from None
    stripped = text.strip()
    data: Any = None
    if stripped[:1] in ("[", "{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
    if isinstance(data, list):
        items = _from_list(data, text, path)
    elif isinstance(data, dict) and ("tools" in data or (data and all(isinstance(v, list) for v in data.values()))):
        items = _from_catalog(data, path)
    elif isinstance(data, dict):
        # One structured error body (perhaps pretty-printed over many lines):
        # linting it line by line would judge "{" and '"error": ...' separately.
        items = [(None, json.dumps(data, ensure_ascii=False))]
    else:
        items = [(None, line) for line in text.splitlines() if line.strip()]
    if not items:
        raise LoopscopeError(f"{path}: no messages in the file", _SHAPES_HINT)
    return items
