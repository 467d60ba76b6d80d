"""OpenAI Responses API items of tools the client runs, other than ``function_call``.

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
