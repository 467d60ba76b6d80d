"""OpenAI Responses API items as chat messages: the one folding both readers use, and the tools the client runs.

``fold`` turns a list of items into chat messages, as the messages reader (``turns``) and the
model-call log reader (``calllog``) both read them: a run of model items (``reasoning``,
``function_call``, an assistant ``message``, a client-run tool call) is one assistant message
with ``tool_calls``; a ``function_call_output`` (or a client-run tool's output) a ``role:
"tool"`` message; a user / system / developer message itself; the text parts of a message
(``input_text``, ``output_text``, ``text``) joined into one string, so that a reply re-sent in
the next request compares equal to the reply as received.


Besides function tools, the Responses API has tools whose calls the model makes and the
*client* runs and answers: ``custom_tool_call`` (free-form input) / ``custom_tool_call_output``,
``local_shell_call`` / ``local_shell_call_output``, ``shell_call`` / ``shell_call_output``,
``apply_patch_call`` / ``apply_patch_call_output``, ``computer_call`` /
``computer_call_output``. They are agent tool calls as much as a ``function_call`` is, and
were left out without a word before this module. Each carries a ``call_id`` its output
names; the tools the provider runs (``web_search_call``, ``file_search_call``,
``code_interpreter_call``, ``image_generation_call``, ``mcp_call``) carry none and stay out,
as Anthropic's server tools do.

A call becomes an OpenAI chat tool call: its name is ``name`` (custom tools) or the item's
type without ``_call`` (``local_shell``, ``shell``, ``apply_patch``, ``computer``); its
arguments are ``input`` (custom tools, as ``{"input": ...}``), ``action`` or ``operation``.
An output becomes a ``role: "tool"`` message. The error flag is set only where the item
states one: an ``apply_patch_call_output`` with ``status: "failed"``, a shell output whose
``outcome`` is a non-zero ``exit_code`` or a ``timeout`` (as a Codex command's exit code is
read); else no flag (``--error-when`` applies).
"""

from __future__ import annotations

import json
from typing import Any, Optional

_CALL, _OUTPUT = "_call", "_call_output"
# Text parts of a Responses message: joined into one string, so that re-sent output compares equal.
TEXT_PARTS = ("input_text", "output_text", "text")
# Items a model response is made of, besides an assistant message and client-run tool calls.
MODEL_ITEMS = ("reasoning", "function_call")


def _kind(item: Any) -> Optional[str]:
    kind = item.get("type") if isinstance(item, dict) else None
    return kind if isinstance(kind, str) else None


# Responses API items that are neither calls nor outputs, beside the message, reasoning and function items.
_OTHER_ITEMS = ("item_reference", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "compaction")


def is_item(item: Any) -> bool:
    """Any Responses API tool item (a call or output of a tool the client or the provider runs) or other
    non-message item: part of a Responses item list, so a list holding one is still a conversation
    (the provider-run ones are then left out, as they were when no such item was in the list)."""
    kind = _kind(item)
    return bool(kind) and (kind.endswith((_CALL, _OUTPUT)) or kind in _OTHER_ITEMS)


def is_client_call(item: Any) -> bool:
    """A call of a client-run tool other than a function (see the module docstring)."""
    kind = _kind(item)
    return bool(kind) and kind != "function_call" and kind.endswith(_CALL) and item.get("call_id") is not None


def is_client_output(item: Any) -> bool:
    """The output of a client-run tool other than a function."""
    kind = _kind(item)
    return bool(kind) and kind != "function_call_output" and kind.endswith(_OUTPUT) and (
        item.get("call_id") is not None or item.get("id") is not None)


def call_as_chat(item: dict[str, Any]) -> dict[str, Any]:
    """The item as an OpenAI chat ``tool_calls`` entry."""
    kind = str(item["type"])
    name = item.get("name") if isinstance(item.get("name"), str) and item.get("name") else kind[: -len(_CALL)]
    if "input" in item:
        arguments: Any = {"input": item["input"]}
    else:
        arguments = next((item[k] for k in ("action", "operation", "arguments") if k in item), {})
    return {"id": item["call_id"], "type": "function",
            "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}


def _shell_text_and_error(output: list[Any]) -> tuple[str, Optional[bool]]:
    texts, failed = [], False
    for chunk in output:
        if not isinstance(chunk, dict):
            texts.append(str(chunk))
            continue
        texts += [chunk[k] for k in ("stdout", "stderr") if isinstance(chunk.get(k), str) and chunk[k]]
        outcome = chunk.get("outcome")
        if isinstance(outcome, dict):
            code = outcome.get("exit_code")
            if outcome.get("type") == "timeout" or (isinstance(code, int) and not isinstance(code, bool) and code != 0):
                failed = True
    return "\n".join(texts), (True if failed else None)


def output_as_chat(item: dict[str, Any]) -> dict[str, Any]:
    """The item as a ``role: "tool"`` message (``is_error`` only where the item states a failure)."""
    output = item.get("output")
    flag: Optional[bool] = None
    if isinstance(output, list):
        text, flag = _shell_text_and_error(output)
    elif isinstance(output, str):
        text = output
    else:
        text = "" if output is None else json.dumps(output)
    if str(item.get("status") or "").lower() == "failed":
        flag = True
    message: dict[str, Any] = {"role": "tool", "tool_call_id": item.get("call_id", item.get("id")), "content": text}
    if flag is not None:
        message["is_error"] = flag
    return message


def text(content: Any) -> Any:
    """A message's content: its text parts joined into one string; other content as it is."""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in TEXT_PARTS for p in content):
        return "\n".join(str(p.get("text") or "") for p in content)
    return content


def is_model_item(item: Any) -> bool:
    """An item of a model response: reasoning, a function or client-run tool call, an assistant message."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    return kind in MODEL_ITEMS or (item.get("role") == "assistant" and kind in (None, "message")) or is_client_call(item)


def _joined(content: Any, more: Any) -> Any:
    """An assistant group's content with one more message's content: text joined, blocks kept."""
    if isinstance(content, str) and isinstance(more, str):
        return "\n".join(t for t in (content, more) if t)
    blocks = [{"type": "text", "text": c} if isinstance(c, str) else c
              for c in (content if isinstance(content, list) else [content]) if c]
    return blocks + [{"type": "text", "text": m} if isinstance(m, str) else m
                     for m in (more if isinstance(more, list) else [more]) if m]


def fold(items: list[Any], times: tuple[str, ...] = (), keep_others: bool = False) -> list[tuple[int, Any]]:
    """``(index of its first item, chat message)`` for Responses API ``items`` (see the module docstring).

    ``times``: keys of a stored time an item may carry, copied onto its message (the first of a
    run's). ``keep_others``: items that are none of the above (a chat message among the items, a
    provider-run tool) are kept as they are; else left out (a call log compares the rest only).
    A string item is a user message.
    """
    out: list[tuple[int, Any]] = []
    group: Optional[dict[str, Any]] = None
    for index, item in enumerate(items):
        if isinstance(item, str):
            item = {"role": "user", "content": item}
        # keep_others (the messages reader): a chat-shaped assistant message (no type) among the items
        # is read as it is, with its own tool_calls; a call log folds the easy input message it re-sends
        if is_model_item(item) and not (keep_others and item.get("type") is None):
            if group is None:
                group = {"role": "assistant", "content": "", "tool_calls": []}
                out.append((index, group))
            for key in times:
                if key in item and key not in group:
                    group[key] = item[key]
            kind = item.get("type")
            if is_client_call(item):
                group["tool_calls"].append(call_as_chat(item))
            elif kind == "function_call":
                group["tool_calls"].append({"id": item.get("call_id", item.get("id")), "type": "function",
                                            "function": {"name": item.get("name"), "arguments": item.get("arguments")}})
            elif kind != "reasoning":
                group["content"] = _joined(group["content"], text(item.get("content")))
            continue
        group = None
        if not isinstance(item, dict):
            if keep_others:
                out.append((index, item))
            continue
        kind, role = item.get("type"), item.get("role")
        if kind == "function_call_output":
            message: Any = {"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}
        elif is_client_output(item):
            message = output_as_chat(item)
        elif role in ("user", "system", "developer") and kind in (None, "message"):
            message = {**item, "content": text(item.get("content"))} if keep_others else \
                {"role": role, "content": text(item.get("content"))}
        elif keep_others:
            out.append((index, item))
            continue
        else:
            continue
        for key in times:
            if key in item and key not in message:
                message[key] = item[key]
        out.append((index, message))
    for _, message in out:
        if isinstance(message, dict) and message.get("tool_calls") == []:
            del message["tool_calls"]
    return out
