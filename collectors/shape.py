"""Argument shape and fingerprint: what a tool was called with, without the values.

``input_shape`` maps each top-level argument name to its JSON type. ``args_fingerprint`` is the
SHA-256 hex digest of the arguments' canonical JSON::

    json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

so two calls with equal arguments (in any key order) get the same fingerprint, while the values
themselves are never written. Arguments given as a JSON string (OpenAI ``function.arguments``) are
parsed first; a string that is not JSON gets an empty shape and a null fingerprint, and so do
arguments that cannot be serialised. Non-JSON values (dates, decimals, objects) are serialised with
``str()`` for the fingerprint and typed by their nearest JSON type.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
_sha256 = hashlib.sha256

_TYPES: dict[type, str] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    list: "array",
    tuple: "array",
    dict: "object",
    type(None): "null",
}


def json_type(value: Any) -> str:
    """The JSON type name of a Python value (``string``, ``integer``, ``number``, ...)."""
    t = _TYPES.get(type(value))
    if t is not None:
        return t
    # Subclasses and non-JSON types: nearest JSON type. bool before int: bool is an int subclass.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "array"
    if type(value).__name__ == "Decimal":
        return "number"
    return "string"


def _parsed(arguments: Any) -> tuple[Any, bool]:
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            return json.loads(arguments), True
        except ValueError:
            return None, False
    return arguments, True


def input_shape(arguments: Any) -> dict[str, str]:
    """Top-level argument name -> JSON type; ``{}`` when the arguments are not an object."""
    args, ok = _parsed(arguments)
    if not ok or not isinstance(args, dict):
        return {}
    get = _TYPES.get
    return {k if type(k) is str else str(k): get(type(v)) or json_type(v) for k, v in args.items()}


def canonical_json(arguments: Any) -> str:
    """The canonical JSON text the fingerprint is computed over."""
    return _CANONICAL.encode(arguments)


def args_fingerprint(arguments: Any) -> str | None:
    """SHA-256 hex of the canonical JSON of the arguments, or None when there are none."""
    if arguments is None:
        return None
    args, ok = _parsed(arguments)
    if not ok:
        return None
    try:
        text = _CANONICAL.encode(args)
    except (TypeError, ValueError):
        return None
    return _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shape_and_fingerprint(arguments: Any) -> tuple[dict[str, str], str | None]:
    """Both at once, parsing a JSON-string argument only once."""
    if arguments is None:
        return {}, None
    args, ok = _parsed(arguments)
    if not ok:
        return {}, None
    shape = input_shape(args) if isinstance(args, dict) else {}
    try:
        text = _CANONICAL.encode(args)
    except (TypeError, ValueError):
        return shape, None
    return shape, _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class RawResult:
    """A tool result waiting for :func:`result_fingerprint` (computed by the sink, off the host thread)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<loopscope: a tool result waiting for its fingerprint>"


def parsed_arguments(arguments: Any) -> Any:
    """The arguments as a JSON value (a JSON string parsed); None when they are not JSON."""
    args, ok = _parsed(arguments)
    return args if ok else None


def result_fingerprint(result: Any) -> str | None:
    """SHA-256 hex of the tool result the model saw: a string's UTF-8 text, else its canonical JSON.

    None for None, and for a value that cannot be serialised. The readers of message arrays and
    OTLP apply the same function to the tool result content they find, so a record written by the
    collector and one read from the same conversation's messages get the same digest.
    """
    if result is None:
        return None
    if isinstance(result, str):
        data = result.encode("utf-8", "surrogatepass")
    elif isinstance(result, (bytes, bytearray)):
        data = bytes(result)
    else:
        try:
            data = _CANONICAL.encode(result).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError):
            return None
    return _sha256(data).hexdigest()
