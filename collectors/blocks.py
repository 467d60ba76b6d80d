"""Provider tool-call objects as they come: the id, the tool name and the arguments of one call.

:func:`tool_call_parts` reads, as an object (SDK model) or as a dict (raw JSON):

- an Anthropic ``tool_use`` content block: ``id``, ``name``, ``input`` (already a JSON object);
- an OpenAI Chat Completions ``tool_calls`` entry: ``id``, ``function.name``,
  ``function.arguments`` (a JSON *string*, written by the model: it may be malformed);
- an OpenAI Responses ``function_call`` item: ``call_id``, ``name``, ``arguments`` (a JSON string).

JSON-string arguments are parsed here, on the host thread (the host needs them parsed to call the
tool anyway). A string that is not JSON never raises: the call keeps the raw string as its
arguments (recorded as an empty ``input_shape`` and a null ``args_fingerprint``, as
:mod:`~loopscope.collectors.shape` does for any non-JSON string) and the parse error is returned,
so the host can hand the model a useful error.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple


class BlockParts(NamedTuple):
    """What :func:`tool_call_parts` found in a provider's tool-call object."""

    tool_call_id: str
    tool_name: str
    arguments: Any
    #: Why the JSON-string arguments could not be parsed (None when they could, or were not a string).
    arguments_error: str | None


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """A JSON-string argument parsed: (value, None); unparsable: (the raw string, the reason)."""
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "replace")
    if not isinstance(raw, str):
        return raw, None
    if raw.strip() == "":
        return {}, None  # OpenAI sends "" for a call without arguments
    try:
        return json.loads(raw), None
    except ValueError as exc:
        return raw, f"arguments are not valid JSON ({exc})"


def tool_call_parts(block: Any) -> BlockParts:
    """Id, name and arguments of an Anthropic ``tool_use`` block or an OpenAI tool call.

    Raises:
        ValueError: The object is none of the three kinds (no id or no tool name found).
    """
    function = _get(block, "function")
    if function is not None:  # OpenAI Chat Completions tool_calls entry
        call_id, name, raw = _get(block, "id"), _get(function, "name"), _get(function, "arguments")
    elif _get(block, "call_id") is not None:  # OpenAI Responses function_call item
        call_id, name, raw = _get(block, "call_id"), _get(block, "name"), _get(block, "arguments")
    else:  # Anthropic tool_use block
        call_id, name, raw = _get(block, "id"), _get(block, "name"), _get(block, "input")
    if call_id is None or name is None:
        raise ValueError(
            f"not a tool call: expected an Anthropic tool_use block or an OpenAI tool call, got {type(block).__name__}"
        )
    arguments, error = parse_arguments(raw)
    return BlockParts(str(call_id), str(name), arguments, error)
