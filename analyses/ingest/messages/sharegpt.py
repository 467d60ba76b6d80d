"""ShareGPT conversations with function calls (LLaMA-Factory's layout; Salesforce APIGen-MT, xLAM 2.0).

Agent trajectories published for training and evaluation are often kept as
``{"conversations": [{"from": ..., "value": ...}, ...], "system": ..., "tools": ...}``:

- ``human`` / ``user``: the user; ``gpt`` / ``assistant``: the model's text; ``system``: skipped;
- ``function_call`` (``function-call``, ``tool_call``): the model asks for tools; its value is
  JSON text, ``{"name", "arguments"}`` or a list of them (parallel calls); ``arguments`` an
  object, or JSON text of one;
- ``observation`` (``function-response``, ``function_response``, ``tool``, ``tool_response``):
  a tool's result, answering the calls in the order they were asked for. One observation that
  answers several calls at once holds a JSON list with one result per call.

The calls carry no id: each gets ``sg<turn>-<n>`` (its turn's index and its place in the turn),
so ids never collide and a repeated call is a replay only by its name and arguments, as the
spec counts replays. There is no error flag: a result that reads like an error counts as a
success and the reader's ``unflagged_error_text`` notice says so (``--error-when prefix``).

``to_messages`` turns the turns into OpenAI chat messages, which the reader then derives as it
derives any other (``records``). A ``function_call`` whose value is not JSON (glaive's
single-quoted arguments) keeps its text as the arguments (not valid JSON: no fingerprint).
"""

from __future__ import annotations

import json
from typing import Any

USER = ("human", "user")
MODEL = ("gpt", "assistant")
CALL = ("function_call", "function-call", "tool_call")
RESULT = ("observation", "function-response", "function_response", "tool", "tool_response")
KNOWN = frozenset(USER + MODEL + CALL + RESULT + ("system",))


def is_turn(value: Any) -> bool:
    """A ShareGPT turn: ``{from, value}`` and no chat ``role``."""
    return isinstance(value, dict) and "from" in value and "value" in value and "role" not in value


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


def _calls(value: Any, turn: int) -> list[dict[str, Any]]:
    parsed = _loads(value)
    items = parsed if isinstance(parsed, list) else [parsed]
    calls = []
    for n, item in enumerate(items):
        if isinstance(item, dict):
            name = item.get("name") if isinstance(item.get("name"), str) else None
            arguments = item.get("arguments", item.get("parameters", {}))
        else:  # not JSON: the text is all there is
            name, arguments = None, value
        calls.append({
            "id": f"sg{turn}-{n}", "type": "function",
            "function": {"name": name or "unknown",
                         "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        })
    return calls


def to_messages(turns: list[Any]) -> list[Any]:
    """OpenAI chat messages for ShareGPT ``turns`` (see the module docstring); unknown ``from`` values are kept
    as messages of that role (the reader skips unknown roles, as it does in any log)."""
    messages: list[Any] = []
    pending: list[str] = []  # ids of calls not answered yet, in the order asked
    for turn, item in enumerate(turns):
        if not is_turn(item):
            messages.append(item)
            continue
        who, value = str(item["from"]).lower(), item["value"]
        if who in USER:
            messages.append({"role": "user", "content": value})
            pending = []
        elif who in MODEL:
            messages.append({"role": "assistant", "content": value})
            pending = []
        elif who in CALL:
            calls = _calls(value, turn)
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            pending = [c["id"] for c in calls]  # a call left unanswered before this one stays so
        elif who in RESULT:
            parsed = _loads(value)
            if len(pending) > 1 and isinstance(parsed, list) and len(parsed) == len(pending):
                results = [r if isinstance(r, str) else json.dumps(r) for r in parsed]
            else:
                results = [value if isinstance(value, str) else json.dumps(value)]
            for text in results:
                # a result with no call left to answer keeps an id no call has: an unknown result id
                messages.append({"role": "tool", "tool_call_id": pending.pop(0) if pending else f"sg{turn}-result",
                                 "content": text})
        elif who == "system":
            messages.append({"role": "system", "content": value})
        else:
            messages.append({"role": who, "content": value})
    return messages
