"""Normalise stored chat messages (Anthropic, OpenAI, tau2-bench) into neutral turns.

A conversation log is a list of provider-shaped message objects. This module
turns each one into zero or more of three neutral events, so the derivation of
records (``message_records``) never looks at provider shapes:

- ``UserText``: a user message that carries content for the agent (text, an
  image, a document): it starts a prompt.
- ``AssistantTurn``: one model response, with the tool calls it asked for
  (several = parallel tool use), whether it carried text, and the stop reason
  when the log stored one.
- ``ToolResult``: the result of one tool call handed back to the model, with
  its text and the error flag when the log stored one.

Shapes understood:

- Anthropic Messages: ``tool_use`` blocks in assistant ``content``;
  ``tool_result`` blocks (``tool_use_id``, ``content``, ``is_error``) in the
  next user message; ``stop_reason`` on the message when stored.
- OpenAI Chat Completions: assistant ``tool_calls`` with
  ``function.name`` / ``function.arguments`` (a JSON string); ``role: "tool"``
  results with ``tool_call_id``; ``finish_reason`` when stored.
- OpenAI Responses API item lists (what the OpenAI Agents SDK keeps as a
  session): consecutive ``reasoning`` / assistant ``message`` /
  ``function_call`` items are one model response (``as_chat_messages`` folds
  them), ``function_call_output`` items are results, matched by ``call_id``.
- legacy OpenAI: an assistant ``function_call`` answered by the next
  ``role: "function"`` message; no ids (``as_chat_messages`` gives the call
  the id ``m<index>`` and folds the pair into the Chat shape).
- SWE-agent ``.traj`` ``history`` (function calling): OpenAI ``tool_calls``;
  ``role: "tool"`` observations name their calls in ``tool_call_ids`` (a list).
- AutoGen / AG2 chat histories: a ``role: "tool"`` message carrying
  ``tool_responses: [{tool_call_id, content}]``, one entry per call; roles are
  re-read from the senders' ``name`` (``ag2_roles``: a history is stored from one
  agent's side, so the task can be ``assistant`` and the model's answer ``user``).
- LangChain serialized messages (``model_dump()``: ``type`` ``human`` / ``ai`` /
  ``tool`` / ``system`` instead of ``role``; ``messages_to_dict``: ``{type, data}``):
  AI ``tool_calls`` ``{name, args, id}``, ``ToolMessage`` ``status: "error"`` is the flag.
- Inspect AI eval logs (``samples[].messages``): assistant ``tool_calls`` as
  ``{id, function: "name", arguments: {...}}``; ``role: "tool"`` results with
  ``tool_call_id`` and ``error``: ``{type, message}`` or null.
- Gemini API ``contents`` (``{role: "user" | "model", parts}``; ``functionCall`` /
  ``functionResponse`` parts, camelCase or snake_case): ``gemini.convert`` turns them into
  Anthropic blocks first (its docstring has the rules: pairing without ids, the ``error`` key).
- Vercel AI SDK messages (``ModelMessage``, ``CoreMessage`` before v5): assistant
  ``content`` parts ``{type: "tool-call", toolCallId, toolName, input}`` (``args``
  before v5); ``role: "tool"`` messages whose ``content`` holds
  ``{type: "tool-result", toolCallId, output: {type, value}}`` parts (``result`` and
  ``isError`` before v5): an output of type ``error-text``, ``error-json`` or
  ``execution-denied`` is the error flag (any other type a stored no). Parts with
  ``providerExecuted: true`` ran on the provider's side: not agent tool calls.
- Vercel AI SDK UI messages (``UIMessage``, what ``useChat`` keeps): ``{id, role, parts}``, one
  assistant message per loop, its steps split at ``step-start`` parts, each ``tool-<name>`` /
  ``dynamic-tool`` part a call and, by its ``state``, its result (``ai_sdk_ui_turns``).
- Vercel AI SDK 4 UI messages (``Message``, what ``useChat`` kept before v5): ``{id, role,
  content, createdAt, toolInvocations, parts}``; each tool invocation a call and, in state
  ``result``, its result; steps split by ``step`` / ``step-start`` (``ai_sdk4_turns``).
- pydantic-ai message histories (``all_messages_json()``): ``{kind: "request" | "response",
  parts}``; ``pydantic_ai_turns`` and ``pydantic_ai_history`` say what counts (docs/inputs.md).
- tau2-bench: assistant ``tool_calls`` as ``{id, name, arguments: {...}}``;
  results ``{role: "tool", id, content, error: bool, requestor}``. A user
  message carrying ``tool_calls`` is the simulated user running its own tools:
  neither it nor its results (``requestor: "user"``) are agent tool calls.

Everything else (system / developer messages, unknown roles, server-side tool
blocks) is skipped: it is not an agent tool call and does not start a prompt. Anthropic's
provider-run tools (``server_tool_use`` / ``<tool>_tool_result``, the MCP connector's
``mcp_tool_use`` / ``mcp_tool_result``) are only counted on their turn (``provider_calls``,
``provider_errors``), for the reader's note on a file that holds no other tool call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional, Union

from loopscope.analyses.ingest import jsontext
from loopscope.analyses.ingest.calls import parse_iso_ts
from loopscope.analyses.ingest.messages import gemini
from loopscope.analyses.ingest.messages.responses_items import fold, is_client_call, is_client_output

# Keys under which logs store a message's time, tried in order.
TIMESTAMP_KEYS = ("timestamp", "ts", "created_at", "time", "created")


@dataclass
class ToolCallRequest:
    """One tool call the model asked for."""

    id: Optional[str]
    name: str
    arguments: Any  # the decoded arguments, or the raw string when it was not JSON
    arguments_valid: bool = True


@dataclass
class UserText:
    """A user message carrying content for the agent: the start of a prompt."""

    index: int
    ts: Optional[datetime]


@dataclass
class AssistantTurn:
    """One model response."""

    index: int
    ts: Optional[datetime]
    calls: list[ToolCallRequest] = field(default_factory=list)
    has_text: bool = False
    stop_reason: Optional[str] = None
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    # Calls of tools the provider ran inside this response (Anthropic server tools, MCP connector),
    # and how many of their results were errors: never agent tool calls, only counted for a notice.
    provider_calls: int = 0
    provider_errors: int = 0


@dataclass
class ToolResult:
    """One tool result handed back to the model."""

    index: int
    ts: Optional[datetime]
    call_id: Optional[str]
    text: str
    flag: Optional[bool]  # the stored error flag; None when the log has none
    error_type: Optional[str] = None  # the stored error's type (Inspect AI ``error.type``)


@dataclass
class UnreadPart:
    """A part of a message this reader does not know: reported, never silently dropped."""

    index: int
    ts: Optional[datetime]
    what: str


Turn = Union[UserText, AssistantTurn, ToolResult, UnreadPart]


def parse_timestamp(value: Any) -> Optional[datetime]:
    """Read a stored message time: ISO 8601 text (naive = UTC) or epoch seconds / milliseconds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000.0 if value > 1e11 else float(value)
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        return parse_iso_ts(value)
    return None


def message_timestamp(message: dict[str, Any]) -> Optional[datetime]:
    """The first parseable time stored on ``message``, if any.

    An AI SDK UI message keeps none of its own: the app may put one in its ``metadata`` (the
    SDK's message-metadata example stores ``createdAt``), which is read then.
    """
    for key in TIMESTAMP_KEYS:
        if key in message:
            parsed = parse_timestamp(message[key])
            if parsed is not None:
                return parsed
    if _ai_sdk4_shaped(message):  # AI SDK 4's Message: createdAt (a Date, JSON as ISO text)
        parsed = parse_timestamp(message.get("createdAt"))
        if parsed is not None:
            return parsed
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and is_ai_sdk_ui_message(message):
        for key in ("createdAt", *TIMESTAMP_KEYS):
            parsed = parse_timestamp(metadata.get(key))
            if parsed is not None:
                return parsed
    return None


def content_text(content: Any) -> str:
    """Flatten a message or tool-result ``content`` (string, blocks, parts) into text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif "content" in part:
                    parts.append(content_text(part["content"]))
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        return json.dumps(content, ensure_ascii=False, sort_keys=True)
    return json.dumps(content, ensure_ascii=False)


def _decode_arguments(raw: Any) -> tuple[Any, bool]:
    """OpenAI stores arguments as a JSON string ("" for none); others as an object."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}, True
        try:
            return jsontext.loads(raw), True
        except (json.JSONDecodeError, RecursionError):  # too deep to decode: as good as not JSON
            return raw, False
    return raw, True


def _stop_reason(message: dict[str, Any]) -> Optional[str]:
    """The stored stop / finish reason, also inside a kept raw provider response."""
    for key in ("stop_reason", "finish_reason"):
        if isinstance(message.get(key), str):
            return message[key]
    raw = message.get("raw_data") or message.get("raw_response") or message.get("response")
    if isinstance(raw, dict):
        for key in ("stop_reason", "finish_reason"):
            if isinstance(raw.get(key), str):
                return raw[key]
        choices = raw.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            reason = choices[0].get("finish_reason")
            if isinstance(reason, str):
                return reason
    return None


def _usage(message: dict[str, Any]) -> tuple[Optional[int], Optional[int]]:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None, None

    def pick(*keys: str) -> Optional[int]:
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    return pick("input_tokens", "prompt_tokens"), pick("output_tokens", "completion_tokens")


def _openai_or_tau2_call(call: Any) -> Optional[ToolCallRequest]:
    if not isinstance(call, dict):
        return None
    if call.get("requestor") == "user":  # tau2: a simulated user's own tool
        return None
    function = call.get("function")
    if isinstance(function, dict):  # OpenAI: {id, type, function: {name, arguments}}
        name, raw = function.get("name"), function.get("arguments")
    elif isinstance(function, str):  # Inspect AI: {id, function: "name", arguments: {...}}
        name, raw = function, call.get("arguments")
    else:  # tau2: {id, name, arguments: {...}}
        name, raw = call.get("name"), call.get("arguments", call.get("input"))
    arguments, valid = _decode_arguments(raw)
    call_id = call.get("id")
    return ToolCallRequest(
        id=str(call_id) if call_id is not None else None,
        name=str(name) if name is not None else "unknown",
        arguments=arguments,
        arguments_valid=valid,
    )


# Anthropic blocks of a tool the API itself runs, call and result in the same response:
# ``server_tool_use`` (web search / fetch, code execution, tool search) answered by a
# ``<tool>_tool_result`` block, and the MCP connector's ``mcp_tool_use`` answered by ``mcp_tool_result``.
PROVIDER_CALLS = ("server_tool_use", "mcp_tool_use")


def _provider_error(block: dict[str, Any]) -> bool:
    """An Anthropic provider-run tool's result that is an error: ``mcp_tool_result`` with ``is_error: true``,
    or a server tool result whose ``content`` is a ``<tool>_tool_result_error`` (``error_code``)."""
    kind = block.get("type")
    if not isinstance(kind, str) or not kind.endswith("_tool_result"):
        return False
    if kind == "mcp_tool_result":
        return block.get("is_error") is True
    content = block.get("content")
    return isinstance(content, dict) and str(content.get("type") or "").endswith("_tool_result_error")


def _assistant(message: dict[str, Any], index: int, ts: Optional[datetime]) -> AssistantTurn:
    turn = AssistantTurn(index=index, ts=ts, stop_reason=_stop_reason(message))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip() and turn.stop_reason in (None, "stop", "end_turn"):
        turn.stop_reason = "refusal"  # OpenAI reports a refusal in its own field, with finish_reason "stop"
    turn.input_tokens, turn.output_tokens = _usage(message)
    content = message.get("content")
    if isinstance(content, str):
        turn.has_text = bool(content.strip())
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                turn.has_text = turn.has_text or bool(block.strip())
            elif isinstance(block, dict):
                kind = block.get("type")
                if kind == "tool-call" and not block.get("providerExecuted"):  # Vercel AI SDK
                    turn.calls.append(_call_request(block.get("toolCallId"), block.get("toolName"),
                                                    block.get("input", block.get("args"))))
                elif kind == "tool_use":  # Anthropic client tool (server tools run on the provider's side)
                    turn.calls.append(_call_request(block.get("id"), block.get("name"), block.get("input")))
                elif kind in PROVIDER_CALLS:
                    turn.provider_calls += 1
                elif _provider_error(block):
                    turn.provider_errors += 1
                elif kind in ("text", "output_text") and str(block.get("text") or "").strip():
                    turn.has_text = True
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        request = _openai_or_tau2_call(call)
        if request is not None:
            turn.calls.append(request)
    return turn


def _error_flag(container: dict[str, Any]) -> Optional[bool]:
    for key in ("is_error", "error"):
        if isinstance(container.get(key), bool):
            return container[key]
    return None


def _result(container: dict[str, Any], call_id: Any, index: int, ts: Optional[datetime]) -> ToolResult:
    """A result from an Anthropic ``tool_result`` block or a ``role: "tool"`` message (ids may be ints)."""
    text, flag, error_type = content_text(container.get("content")), _error_flag(container), None
    error = container.get("error")
    if isinstance(error, dict) and ("type" in error or "message" in error):
        # Inspect AI: error {type, message} on a tool message, null when the call succeeded;
        # the model is handed the error's message, not the content.
        flag = True
        error_type = str(error["type"]) if error.get("type") is not None else None
        if isinstance(error.get("message"), str) and error["message"].strip():
            text = error["message"]
    return _tool_result(index, ts, call_id, text, flag, error_type)


def _call_request(call_id: Any, name: Any, raw_arguments: Any) -> ToolCallRequest:
    """A tool call asked for in a content block (Anthropic ``tool_use``, AI SDK ``tool-call``)."""
    arguments, valid = _decode_arguments(raw_arguments)
    return ToolCallRequest(id=str(call_id) if call_id is not None else None,
                           name=str(name if name is not None else "unknown"), arguments=arguments, arguments_valid=valid)


def _tool_result(index: int, ts: Optional[datetime], call_id: Any, text: str, flag: Optional[bool],
                 error_type: Optional[str]) -> ToolResult:
    return ToolResult(index=index, ts=ts, call_id=str(call_id) if call_id is not None else None, text=text,
                      flag=flag, error_type=error_type)


# Vercel AI SDK (v5+) tool-result output types that tell the model its call failed.
AISDK_ERROR_OUTPUTS = ("error-text", "error-json", "execution-denied")


def _aisdk_result(part: dict[str, Any], index: int, ts: Optional[datetime]) -> ToolResult:
    """A Vercel AI SDK ``tool-result`` part: ``output: {type, value}`` (v5+) or ``result`` / ``isError``."""
    call_id = part.get("toolCallId")
    output = part.get("output")
    flag: Optional[bool] = part.get("isError") if isinstance(part.get("isError"), bool) else None
    error_type = None
    if isinstance(output, dict) and isinstance(output.get("type"), str):
        kind = output["type"]
        flag = kind in AISDK_ERROR_OUTPUTS  # the SDK states every result's kind: a stored flag
        if kind == "execution-denied":
            error_type = "execution_denied"
            text = output.get("reason") if isinstance(output.get("reason"), str) else ""
        else:
            text = content_text(output.get("value"))
    else:
        text = content_text(part.get("result", output))
    return _tool_result(index, ts, call_id, text, flag, error_type)


def _user(message: dict[str, Any], index: int, ts: Optional[datetime]) -> list[Turn]:
    if message.get("tool_calls"):  # tau2: the simulated user running its own tools
        return []
    content = message.get("content")
    turns: list[Turn] = []
    carries_content = False
    if isinstance(content, str):
        carries_content = bool(content.strip())
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                turns.append(_result(block, block.get("tool_use_id"), index, ts))
            elif isinstance(block, str):
                carries_content = carries_content or bool(block.strip())
            elif isinstance(block, dict):
                if block.get("type") in ("text", "input_text"):
                    carries_content = carries_content or bool(str(block.get("text") or "").strip())
                else:  # an image, a document, audio: still something the user asked
                    carries_content = True
    if carries_content:
        turns.append(UserText(index=index, ts=ts))
    return turns


def _tool(message: dict[str, Any], index: int, ts: Optional[datetime]) -> list[Turn]:
    if message.get("requestor") == "user":  # tau2: result of a simulated user's tool
        return []
    content = message.get("content")
    if "tool_call_id" not in message and isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool-result" for part in content
    ):
        # Vercel AI SDK: one tool message carries the results of a response's calls as parts
        # (approval responses and provider-executed results are not agent results)
        return [
            _aisdk_result(part, index, ts)
            for part in content
            if isinstance(part, dict) and part.get("type") == "tool-result" and not part.get("providerExecuted")
        ]
    ids = message.get("tool_call_ids")
    if "tool_call_id" not in message and isinstance(ids, list) and ids:
        # SWE-agent's history: one observation answers the call(s) of the action before it
        return [_result(message, call_id, index, ts) for call_id in ids]
    responses = message.get("tool_responses")
    if "tool_call_id" not in message and isinstance(responses, list) and responses:
        # AutoGen / AG2: one tool message carries the results of a response's calls, each
        # {tool_call_id, role: "tool", content}
        return [_result(r, r.get("tool_call_id"), index, ts) for r in responses if isinstance(r, dict)]
    return [_result(message, message.get("tool_call_id", message.get("id")), index, ts)]


def message_turns(message: Any, index: int) -> list[Turn]:
    """Neutral turns for the message at position ``index`` of a conversation.

    Args:
        message: one stored message object (anything else yields no turns).
        index: its 0-based position in the conversation's messages list.

    Returns:
        The turns it holds, in order (tool results before a user's text, as
        Anthropic requires them first in the content).
    """
    if not isinstance(message, dict):
        return []
    role = message.get("role")
    ts = message_timestamp(message)
    if is_pydantic_ai_message(message):
        return pydantic_ai_turns(message, index, ts)
    if is_ai_sdk_ui_message(message):
        return ai_sdk_ui_turns(message, index, ts)
    if is_ai_sdk4_message(message):
        return ai_sdk4_turns(message, index, ts)
    if role == "assistant":
        return [_assistant(message, index, ts)]
    if role == "user":
        return _user(message, index, ts)
    if role == "tool":
        return _tool(message, index, ts)
    return []  # system, developer and unknown roles


def _is_responses_tool_item(item: Any) -> bool:
    """A Responses API call or output of a tool the client runs (a function or another: responses_items)."""
    return isinstance(item, dict) and (
        item.get("type") in ("function_call", "function_call_output") or is_client_call(item) or is_client_output(item))


def as_chat_messages(messages: list[Any]) -> list[tuple[int, Any]]:
    """Pair each message with its index, folding OpenAI Responses API items into chat messages.

    Gemini contents become chat messages (``gemini.convert``). Other chat-shaped lists come
    back unchanged, except the legacy OpenAI pair (an
    assistant ``function_call``, answered by a ``role: "function"`` message),
    which has no ids: the call gets the id ``m<index>`` of its message and the
    next ``function`` message answers it. In a Responses item list, each run of
    consecutive model items becomes one assistant message (its calls in
    OpenAI Chat shape) at the index of the run's first item, and each
    ``function_call_output`` a ``role: "tool"`` message.
    """
    messages = pydantic_ai_history(ag2_roles([langchain_message(m) for m in messages]))
    messages = [m for _, m in gemini.convert(list(enumerate(messages)))]
    if not any(map(_is_responses_tool_item, messages)):
        return _legacy_functions(list(enumerate(messages)))
    return fold(messages, times=TIMESTAMP_KEYS, keep_others=True)


# LangChain message types (``message.model_dump()`` / ``messages_to_dict``) -> chat roles.
LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system", "AIMessageChunk": "assistant"}


def langchain_message(message: Any) -> Any:
    """A LangChain serialized message in chat shape; anything else unchanged.

    ``messages_to_dict`` writes ``{"type": "ai", "data": {...}}``; ``model_dump()`` the
    fields themselves with ``type`` instead of ``role``. An AI message's ``tool_calls`` are
    ``{name, args, id}``; a ``ToolMessage`` carries ``status``: ``"error"`` or ``"success"``.
    """
    if not isinstance(message, dict) or "role" in message:
        return message
    data = message.get("data") if isinstance(message.get("data"), dict) and set(message) <= {"type", "data"} else message
    role = LANGCHAIN_ROLES.get(str(data.get("type", message.get("type"))))
    if role is None:
        return message
    chat = {k: v for k, v in data.items() if k not in ("type", "tool_calls", "status")}
    chat["role"] = role
    calls = data.get("tool_calls")
    if role == "assistant" and isinstance(calls, list):
        chat["tool_calls"] = [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("args", {})} if isinstance(c, dict) else c
            for c in calls
        ]
    if role == "tool" and data.get("status") in ("error", "success"):
        chat["is_error"] = data["status"] == "error"
    return chat


def ag2_roles(messages: list[Any]) -> list[Any]:
    """An AutoGen / AG2 chat history with each message's role as the model saw it.

    AG2 stores a chat from one agent's side: what that agent sent is ``assistant``, what it
    received ``user``. In ``chat_result.chat_history`` (the initiator's side: the user proxy)
    the task is therefore ``assistant`` and the model's answers ``user``. The history names
    every message's sender (``name``); the agents whose messages carry ``tool_calls`` are the
    model. So, when the history has AG2's ``tool_responses``, a message from such an agent is
    ``assistant`` and any other non-tool message ``user``. Without both marks nothing changes.
    """
    dicts = [m for m in messages if isinstance(m, dict)]
    if not any(isinstance(m.get("tool_responses"), list) for m in dicts):
        return messages
    models = {m.get("name") for m in dicts if m.get("tool_calls") and isinstance(m.get("name"), str)}
    if not models:
        return messages
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("name"), str):
            role = "assistant" if m["name"] in models else "user"
            if role != m["role"]:
                m = {**m, "role": role, "role_stored": m["role"]}
        out.append(m)
    return out


def _legacy_functions(pairs: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The pre-``tool_calls`` OpenAI pair as ``tool_calls`` / ``role: "tool"`` messages.

    That API had one call per response and no ids: a ``role: "function"``
    message answers the latest call. A second answer to the same call, or one
    with no call before it, keeps a null id (a protocol violation downstream).
    """
    if not any(isinstance(m, dict) and (m.get("role") == "function" or "function_call" in m) for _, m in pairs):
        return pairs
    out: list[tuple[int, Any]] = []
    waiting: Optional[str] = None
    for index, message in pairs:
        if not isinstance(message, dict):
            out.append((index, message))
            continue
        call = message.get("function_call")
        if message.get("role") == "assistant" and isinstance(call, dict) and not message.get("tool_calls"):
            waiting = f"m{index}"
            folded = {k: v for k, v in message.items() if k != "function_call"}
            folded["tool_calls"] = [{"id": waiting, "type": "function", "function": call}]
            out.append((index, folded))
        elif message.get("role") == "function":
            result = {k: v for k, v in message.items() if k != "role"}
            out.append((index, {**result, "role": "tool", "tool_call_id": waiting}))
            waiting = None
        else:
            out.append((index, message))
    return out


# -- pydantic-ai message histories (``ModelMessagesTypeAdapter`` / ``all_messages_json()``) -----------

# What pydantic-ai writes as the return of an output tool (the model handing over its structured
# answer), and of a function tool it did not run because an output tool had already given the answer.
PYDANTIC_AI_OUTPUT_RETURNS = frozenset({
    "Final result processed.",
    "Output tool not used - a final result was already processed.",
    "Output tool not used - output function execution failed.",
    "Output tool not used - output failed validation.",
})
PYDANTIC_AI_NOT_RUN = "Tool not executed - a final result was already processed."
PYDANTIC_AI_OUTPUT_TOOL = "final_result"  # its default output tool name (final_result_<Type> for several)
# finish_reason (OpenTelemetry values) -> the stop reasons the deriver knows; stop, length and
# content_filter are read as OpenAI's (STOP_REASON_MAP), error is kept as it is.
PYDANTIC_AI_FINISH = {"tool_call": "tool_calls"}
# Parts that carry no tool call, result or user content: skipped without a notice.
PYDANTIC_AI_QUIET_PARTS = frozenset({
    "system-prompt", "instruction", "instruction-delta", "instruction-baseline", "instruction-digest",
    "tool-availability-delta", "capability-load-delta", "model-settings-delta", "compaction",
    "retry-feedback",  # output validation feedback: answers no tool call
    "thinking", "file", "speech",
    "builtin-tool-call", "builtin-tool-return",  # provider-side (native) tools: not run by the agent
})


def is_pydantic_ai_message(value: Any) -> bool:
    """A pydantic-ai ``ModelMessage`` dump: ``{kind: "request" | "response", parts: [...]}``."""
    return isinstance(value, dict) and value.get("kind") in ("request", "response") \
        and isinstance(value.get("parts"), list) and "role" not in value


def _part_kind(part: Any, key: str) -> Optional[str]:
    """A part's kind (``part_kind`` / ``type``) when it is text, else None."""
    kind = part.get(key) if isinstance(part, dict) else None
    return kind if isinstance(kind, str) else None


def _unread(index: int, ts: Optional[datetime], where: str, kind: Optional[str]) -> UnreadPart:
    """An unknown part, named (capped: the name comes from the file)."""
    return UnreadPart(index, ts, f"{where} part {kind[:60]!r}" if kind else f"a {where} part with no kind")


def _call_key(part: dict[str, Any]) -> tuple[str, str]:
    return str(part.get("tool_call_id")), str(part.get("tool_name"))


def _is_output_tool(name: Any) -> bool:
    return isinstance(name, str) and (name == PYDANTIC_AI_OUTPUT_TOOL or name.startswith(PYDANTIC_AI_OUTPUT_TOOL + "_"))


def pydantic_ai_history(messages: list[Any]) -> list[Any]:
    """A pydantic-ai history without its output-tool calls and the calls pydantic-ai did not run.

    An output tool (``final_result``, or any tool whose return is pydantic-ai's "Final result
    processed." / "Output tool not used - ...") is how the model hands over a structured answer:
    the harness runs nothing the model asked for, so it is not a tool call; its validation
    retries are output feedback, not tool errors. A function tool answered "Tool not executed - a
    final result was already processed." never ran: not a call either. Both the call part and its
    return are dropped. A request with no ``timestamp`` (histories written before pydantic-ai set
    one) takes its latest part's.
    """
    if not any(is_pydantic_ai_message(m) for m in messages):
        return messages
    dropped: set[tuple[str, str]] = set()
    for m in messages:
        if not is_pydantic_ai_message(m):
            continue
        for p in m["parts"]:
            if not isinstance(p, dict):
                continue
            content = p.get("content")
            if _is_output_tool(p.get("tool_name")) or (
                p.get("part_kind") == "tool-return" and isinstance(content, str)
                and (content in PYDANTIC_AI_OUTPUT_RETURNS or content == PYDANTIC_AI_NOT_RUN)
            ):
                dropped.add(_call_key(p))
    out = []
    for m in messages:
        if not is_pydantic_ai_message(m):
            out.append(m)
            continue
        parts = [
            p for p in m["parts"]
            if not (isinstance(p, dict) and p.get("part_kind") in ("tool-call", "tool-return", "retry-prompt")
                    and _call_key(p) in dropped)
        ]
        m = {**m, "parts": parts}
        if m["kind"] == "request" and parse_timestamp(m.get("timestamp")) is None:
            times = [t for t in (parse_timestamp(p.get("timestamp")) for p in parts if isinstance(p, dict)) if t]
            if times:
                m["timestamp"] = max(times).isoformat()
        out.append(m)
    return out


def _pydantic_ai_text(value: Any) -> str:
    """A tool return's content as pydantic-ai hands it to the model: text as is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _retry_prompt_text(content: Any) -> str:
    """What the model saw for a (legacy) ``retry-prompt`` answering a tool call: ``RetryPromptPart.model_response()``."""
    if isinstance(content, list):
        errors = [{k: v for k, v in e.items() if k != "ctx"} if isinstance(e, dict) else e for e in content]
        rendered = json.dumps(errors, ensure_ascii=False, indent=2)
        description = f"{len(content)} validation error{'s' if len(content) != 1 else ''}:\n```json\n{rendered}\n```"
    else:
        description = content_text(content)
    return f"{description}\n\nFix the errors and try again."


def _pydantic_ai_request(message: dict[str, Any], index: int, ts: Optional[datetime]) -> list[Turn]:
    results: list[Turn] = []
    carries_content = False
    for part in message["parts"]:
        kind = _part_kind(part, "part_kind")
        part_ts = parse_timestamp(part.get("timestamp")) if isinstance(part, dict) else None
        if kind == "user-prompt":
            content = part.get("content")
            carries_content = carries_content or (bool(content.strip()) if isinstance(content, str) else bool(content))
        elif kind == "tool-return":
            outcome = part.get("outcome", "success")
            if outcome == "interrupted":
                continue  # synthesized when a run was cut off: the call produced no result
            retry = part.get("retry") if isinstance(part.get("retry"), dict) else {}
            error_type = retry.get("cause") if isinstance(retry.get("cause"), str) else None
            if outcome == "denied":
                error_type = "execution_denied"
            results.append(_tool_result(index, part_ts or ts, part.get("tool_call_id"), _pydantic_ai_text(part.get("content")),
                                        outcome in ("failed", "retried", "denied"), error_type))
        elif kind == "retry-prompt" and part.get("tool_name") is not None:
            # before pydantic-ai split it: a retry answering a tool call (ModelRetry raised by the
            # tool, or arguments that failed validation); the model saw model_response()'s text
            content = part.get("content")
            results.append(_tool_result(index, part_ts or ts, part.get("tool_call_id"), _retry_prompt_text(content), True,
                                        "validation_error" if isinstance(content, list) else None))
        elif kind == "retry-prompt" or kind in PYDANTIC_AI_QUIET_PARTS:
            continue  # a retry-prompt with no tool: output validation feedback, not a tool result
        else:
            results.append(_unread(index, ts, "request", kind))
    if carries_content:
        results.append(UserText(index=index, ts=ts))
    return results


def _pydantic_ai_response(message: dict[str, Any], index: int, ts: Optional[datetime]) -> list[Turn]:
    finish = message.get("finish_reason")
    turn = AssistantTurn(index=index, ts=ts, stop_reason=PYDANTIC_AI_FINISH.get(finish, finish) if isinstance(finish, str) else None)
    turn.input_tokens, turn.output_tokens = _usage(message)
    unread: list[Turn] = []
    for part in message["parts"]:
        kind = _part_kind(part, "part_kind")
        if kind == "text":
            turn.has_text = turn.has_text or bool(str(part.get("content") or "").strip())
        elif kind == "tool-call":
            args = part.get("args")
            turn.calls.append(_call_request(part.get("tool_call_id"), part.get("tool_name"), {} if args is None else args))
        elif kind not in PYDANTIC_AI_QUIET_PARTS:
            unread.append(_unread(index, ts, "response", kind))
    return [turn, *unread]


def pydantic_ai_turns(message: dict[str, Any], index: int, ts: Optional[datetime]) -> list[Turn]:
    """The turns of one pydantic-ai ``ModelRequest`` / ``ModelResponse``.

    A request's ``user-prompt`` parts start a prompt; its ``tool-return`` parts are results
    (``outcome`` ``failed`` / ``retried`` / ``denied`` is the error flag, ``retry.cause`` the
    error type, ``interrupted`` no result at all), as are legacy ``retry-prompt`` parts that name
    a tool. A response is one model response: its ``tool-call`` parts are the calls,
    ``finish_reason`` the stop reason, ``usage`` the tokens.
    """
    if message["kind"] == "response":
        return _pydantic_ai_response(message, index, ts)
    return _pydantic_ai_request(message, index, ts)


# -- Vercel AI SDK UI messages (``UIMessage``: what ``useChat`` keeps, v5+) ---------------------------

# UI parts that carry no tool call and no text the loop acts on: skipped without a notice.
AISDK_UI_QUIET_PARTS = frozenset({"reasoning", "reasoning-file", "file", "source-url", "source-document", "custom"})
# Tool part states with a result the model was handed (the others never got one).
AISDK_UI_RESULT_STATES = ("output-available", "output-error", "output-denied")


def is_ai_sdk_ui_message(value: Any) -> bool:
    """A Vercel AI SDK ``UIMessage``: ``{id, role, parts: [{type, ...}]}`` and no ``content``.

    Every part must name its ``type``: Gemini's ``{role, parts: [{text}]}`` is not one.
    """
    if not isinstance(value, dict) or value.get("role") not in ("user", "assistant", "system") or "content" in value:
        return False
    parts = value.get("parts")
    return isinstance(parts, list) and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in parts)


def _is_ui_tool_part(part: dict[str, Any]) -> bool:
    return part["type"] == "dynamic-tool" or part["type"].startswith("tool-")


def _ui_tool_result(part: dict[str, Any], index: int, ts: Optional[datetime]) -> Optional[ToolResult]:
    """The result in a UI tool part, as ``convertToModelMessages`` would hand it to the model; None without one."""
    state = part.get("state")
    if state == "output-available" and not part.get("preliminary"):
        return _tool_result(index, ts, part.get("toolCallId"), content_text(part.get("output")), False, None)
    if state == "output-error":
        return _tool_result(index, ts, part.get("toolCallId"), str(part.get("errorText") or ""), True, None)
    if state == "output-denied":
        approval = part.get("approval") if isinstance(part.get("approval"), dict) else {}
        reason = approval.get("reason") if isinstance(approval.get("reason"), str) else "Tool execution denied."
        return _tool_result(index, ts, part.get("toolCallId"), reason, True, "execution_denied")
    return None  # input-streaming, input-available, approval-*: asked for, never answered (or a preliminary output)


def ai_sdk_ui_turns(message: dict[str, Any], index: int, ts: Optional[datetime]) -> list[Turn]:
    """The turns of one AI SDK ``UIMessage``, split as the SDK's ``convertToModelMessages`` splits it.

    A user message with any part starts a prompt. An assistant message holds every step of a
    loop: ``step-start`` parts separate its model responses; in each, ``tool-<name>`` and
    ``dynamic-tool`` parts are the calls (``toolCallId``, ``input``) and, by their ``state``, the
    results handed back after it: ``output-available`` (``output``), ``output-error``
    (``errorText``, an error), ``output-denied`` (an error, ``execution_denied``, the approval's
    reason). A part that never reached an output state is a call with no result. Provider-executed
    parts are not agent calls.
    """
    parts = message["parts"]
    role = message["role"]
    if role == "system":
        return []
    if role == "user":
        unread_user: list[Turn] = [
            _unread(index, ts, "UI", p["type"]) for p in parts
            if p["type"] not in ("text", "file") and not p["type"].startswith("data-")
        ]
        has_content = any(p["type"] != "text" or str(p.get("text") or "").strip() for p in parts if p["type"] in ("text", "file"))
        return [*unread_user, UserText(index=index, ts=ts)] if has_content else unread_user
    turns: list[Turn] = []
    step: Optional[AssistantTurn] = None
    results: list[Turn] = []

    def close() -> None:
        nonlocal step, results
        if step is not None:
            turns.append(step)
            turns.extend(results)
        step, results = None, []

    for part in parts:
        kind = part["type"]
        if kind == "step-start":
            close()
            continue
        if step is None:
            step = AssistantTurn(index=index, ts=ts)
        if kind == "text":
            step.has_text = step.has_text or bool(str(part.get("text") or "").strip())
        elif _is_ui_tool_part(part):
            if part.get("providerExecuted"):
                continue  # ran on the provider's side
            name = part.get("toolName") if kind == "dynamic-tool" else kind[len("tool-"):]
            step.calls.append(_call_request(part.get("toolCallId"), name, part.get("input", part.get("rawInput"))))
            result = _ui_tool_result(part, index, ts)
            if result is not None:
                results.append(result)
        elif kind not in AISDK_UI_QUIET_PARTS and not kind.startswith("data-"):
            results.append(_unread(index, ts, "UI", kind))
    close()
    return turns


# -- Vercel AI SDK 4 UI messages (``Message``: what ``useChat`` kept before v5) ----------------------

# AI SDK 4 ``Message.parts`` with no tool call and nothing the loop acts on: skipped without a notice.
AISDK4_QUIET_PARTS = frozenset({"reasoning", "source", "file"})


def _ai_sdk4_shaped(value: Any) -> bool:
    """``{id, role, content: str}`` with a role an AI SDK 4 ``Message`` has."""
    return (isinstance(value, dict) and value.get("role") in ("user", "assistant", "system", "data")
            and isinstance(value.get("content"), str) and "id" in value)


def is_ai_sdk4_message(value: Any) -> bool:
    """A Vercel AI SDK 4 ``Message``: ``{id, role, content: str}`` with ``toolInvocations`` or typed
    ``parts`` (v5's ``UIMessage`` has no ``content``). One with neither (before 4.2) is a plain chat
    message, read as one; only its ``createdAt`` is read as its time (``message_timestamp``)."""
    if not _ai_sdk4_shaped(value):
        return False
    parts = value.get("parts")
    typed_parts = isinstance(parts, list) and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in parts)
    return isinstance(value.get("toolInvocations"), list) or typed_parts


def _v4_invocation(invocation: Any) -> Optional[dict[str, Any]]:
    return invocation if isinstance(invocation, dict) else None


def _v4_step(invocation: dict[str, Any]) -> int:
    step = invocation.get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) else 0


def _v4_call(turn: AssistantTurn, results: list[Turn], invocation: dict[str, Any], index: int,
             ts: Optional[datetime]) -> None:
    """One AI SDK 4 ``ToolInvocation``: a call; in state ``result`` also its result.

    AI SDK 4 has no error channel on a tool result (a tool that throws ends the run with a
    ``ToolExecutionError`` and no result is stored): the flag is none, as for OpenAI (see
    ``--error-when``). ``partial-call`` / ``call``: asked for, never answered.
    """
    turn.calls.append(_call_request(invocation.get("toolCallId"), invocation.get("toolName"), invocation.get("args")))
    if invocation.get("state") == "result" and "result" in invocation:
        results.append(_tool_result(index, ts, invocation.get("toolCallId"), content_text(invocation.get("result")), None, None))


def ai_sdk4_turns(message: dict[str, Any], index: int, ts: Optional[datetime]) -> list[Turn]:
    """The turns of one AI SDK 4 ``Message``, split into steps as the SDK's ``convertToCoreMessages``.

    A user message starts a prompt when its ``content`` or ``experimental_attachments`` hold
    something. An assistant message holds every step of a loop. With ``parts`` (AI SDK 4.2+, which
    also keeps the deprecated ``toolInvocations`` as a copy, not read then), a new step starts at a
    ``step-start`` part, at a ``tool-invocation`` whose ``step`` differs from the step before, and at
    text after a tool invocation; ``text`` parts are the text. Without ``parts``, the invocations are
    grouped by ``step`` (absent: 0) and ``content`` is the text: of the last step, unless a call of
    it is unanswered (the run stopped for it), then of the first. ``role: "data"`` is skipped.
    """
    role = message["role"]
    if role == "user":
        attachments = message.get("experimental_attachments")
        if message["content"].strip() or (isinstance(attachments, list) and attachments):
            return [UserText(index=index, ts=ts)]
        return []
    if role != "assistant":
        return []
    parts = message.get("parts")
    if isinstance(parts, list) and parts and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in parts):
        return _ai_sdk4_parts(parts, index, ts)
    invocations = [i for i in map(_v4_invocation, message.get("toolInvocations") or []) if i is not None]
    if not invocations:
        return [_assistant(message, index, ts)]
    turns: list[Turn] = []
    steps: list[AssistantTurn] = []
    for step_no in sorted({_v4_step(i) for i in invocations}):
        turn = AssistantTurn(index=index, ts=ts)
        results: list[Turn] = []
        for invocation in invocations:
            if _v4_step(invocation) == step_no:
                _v4_call(turn, results, invocation, index, ts)
        steps.append(turn)
        turns.append(turn)
        turns.extend(results)
    if message["content"].strip():
        last = [i for i in invocations if _v4_step(i) == _v4_step(invocations[-1])]
        if all(i.get("state") == "result" for i in last):
            turns.append(AssistantTurn(index=index, ts=ts, has_text=True))
        else:
            steps[0].has_text = True
    return turns


def _ai_sdk4_parts(parts: list[dict[str, Any]], index: int, ts: Optional[datetime]) -> list[Turn]:
    turns: list[Turn] = []
    step: Optional[AssistantTurn] = None
    step_no: Optional[int] = None  # the ``step`` of the current step's invocations
    results: list[Turn] = []

    def close() -> None:
        nonlocal step, step_no, results
        if step is not None:
            turns.append(step)
            turns.extend(results)
        step, step_no, results = None, None, []

    for part in parts:
        kind = part["type"]
        invocation = _v4_invocation(part.get("toolInvocation")) if kind == "tool-invocation" else None
        if kind == "step-start":
            close()
            continue
        if kind == "text" and step is not None and step.calls:
            close()  # text after a tool invocation: the next model response
        if invocation is not None and step_no is not None and _v4_step(invocation) != step_no:
            close()
        if step is None:
            step = AssistantTurn(index=index, ts=ts)
        if kind == "text":
            step.has_text = step.has_text or bool(str(part.get("text") or "").strip())
        elif invocation is not None:
            step_no = _v4_step(invocation)
            _v4_call(step, results, invocation, index, ts)
        elif kind not in AISDK4_QUIET_PARTS:
            results.append(_unread(index, ts, "UI", kind))
    close()
    return turns
