"""Gemini API ``contents`` as chat messages (Anthropic blocks), for ``message_turns``.

A Gemini history (REST ``generateContent`` ``contents``, the google-genai SDK's
``chat.get_history()`` dumped with ``model_dump(mode="json")``, snake_case or camelCase with
``by_alias``) is a list of ``{role: "user" | "model", parts: [...]}``. Each part holds one of:

- ``text`` (``thought: true`` marks a thought summary: not answer text);
- ``functionCall`` ``{name, args, id?}`` in a model turn: a tool call;
- ``functionResponse`` ``{name, response, id?}`` in a user turn (``role: "function"`` or
  ``"tool"`` in older logs): a tool result, not a prompt. Per the API reference ``response``
  holds ``output`` (the function's output) or ``error`` (error details); the SDK's automatic
  function calling writes ``result`` or ``error``. An ``error`` that is not null, ``""``,
  ``{}`` or ``[]`` is the error flag, and the text the model was handed is that error (a
  string as it is, anything else as JSON). Otherwise no flag is stored (``--error-when``
  applies) and the text is ``output``, else ``result``, else the whole ``response`` as JSON;
- ``inlineData`` / ``fileData`` in a user turn: content the user gave (it starts a prompt);
- ``executableCode`` / ``codeExecutionResult`` / ``toolCall`` / ``toolResponse``: tools the
  provider ran itself (code execution, built-in tools): not agent tool calls;
- metadata (``thoughtSignature``, ``videoMetadata``, ``mediaResolution``, ``partMetadata``,
  ...): nothing to read.

A part of any other kind is reported (``unread_part``), never silently dropped.

Calls with an ``id`` pair with the response of the same ``id``. A call without one gets the id
``m<index>.<position>`` (its content's index in the list, its position among that turn's
calls). A response without an ``id`` answers the first not-yet-answered call of the same
``name`` in the content just before it, with or without an id (the model may send ids and the
code that ran the tools answer by name only): the k-th response named ``X`` answers the k-th
call named ``X``, whatever the order of the names. A response that
pairs with no call of that turn is reported (``unknown_result_id``) and makes no record.

A candidate-like wrapper, ``{content: {role, parts}, finishReason | finish_reason, ...}``
(a ``Candidate``), or a ``GenerateContentResponse`` ``{candidates: [...], usageMetadata}``
(its first candidate), is read as its content; its ``finishReason`` is the stop reason
(``STOP`` reads as ``end_turn``, ``MAX_TOKENS`` as ``max_tokens``, the safety and blocking
reasons as ``refusal``, any other kept as it is), ``usageMetadata`` the token counts. A bare
content has no stop reason.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

# Where a converted message carries what the conversion found wrong: [(kind, detail), ...].
NOTES_KEY = "_loopscope_notes"
GEMINI_ROLES = ("user", "model", "function", "tool")
# Part kinds (snake_case) and what they are.
CONTENT_PARTS = frozenset({"text", "inline_data", "file_data"})
PROVIDER_TOOL_PARTS = frozenset({"executable_code", "code_execution_result", "tool_call", "tool_response"})
METADATA_PARTS = frozenset({
    "thought", "thought_signature", "video_metadata", "media_resolution", "part_metadata", "audio_transcription",
    "media_processing", "speech_metadata", "document_metadata", "spreadsheet_metadata", "audio_metadata",
})
KNOWN_PARTS = CONTENT_PARTS | PROVIDER_TOOL_PARTS | METADATA_PARTS | {"function_call", "function_response"}
# Gemini FinishReason -> the record format's exit_reason (records.STOP_REASON_MAP reads them).
FINISH_REASONS = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    **{reason: "refusal" for reason in (
        "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR",
    )},
}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


def _parts(part: Any) -> dict[str, Any]:
    """A part's fields with snake_case keys, leaving out the nulls (``model_dump()`` keeps them)."""
    return {_snake(str(k)): v for k, v in part.items() if v is not None} if isinstance(part, dict) else {}


def _is_parts(value: Any) -> bool:
    # Gemini parts carry no "type" (AI SDK UI message parts do)
    return isinstance(value, list) and not any(isinstance(p, dict) and "type" in p for p in value)


def _candidate(value: Any) -> Optional[dict[str, Any]]:
    """The candidate of a ``GenerateContentResponse`` / the ``Candidate`` itself, else None."""
    if not isinstance(value, dict) or "role" in value:
        return None
    candidates = value.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        usage = value.get("usageMetadata", value.get("usage_metadata"))
        return {**candidates[0], "_usage": usage} if isinstance(usage, dict) else candidates[0]
    content = value.get("content")
    if isinstance(content, dict) and content.get("role") in GEMINI_ROLES and _is_parts(content.get("parts")):
        return value
    return None


def is_gemini(value: Any) -> bool:
    """A Gemini ``Content`` (``{role, parts}``, no ``content``), or a candidate-like wrapper of one."""
    if _candidate(value) is not None:
        return True
    return (
        isinstance(value, dict)
        and value.get("role") in GEMINI_ROLES
        and "content" not in value
        and isinstance(value.get("parts"), list)
        and _is_parts(value["parts"])
        and (value["role"] != "tool" or any(isinstance(p, dict) and ("functionResponse" in p or "function_response" in p)
                                            for p in value["parts"]))
    )


def has_calls(value: Any) -> bool:
    """Whether a Gemini content holds a function call or response."""
    if not is_gemini(value):
        return False
    wrapped = _candidate(value)
    content = wrapped.get("content") if wrapped is not None else value
    parts = content.get("parts") if isinstance(content, dict) else None
    return any(
        key in _parts(p) for p in (parts if isinstance(parts, list) else []) for key in ("function_call", "function_response")
    )


def response_text(response: Any) -> tuple[str, Optional[bool]]:
    """(the text the model was handed, the error flag or None) of a ``functionResponse.response``."""
    if not isinstance(response, dict):
        return ("" if response is None else json.dumps(response, ensure_ascii=False, sort_keys=True)), None
    error = response.get("error")
    if error not in (None, "", {}, []):
        return (error if isinstance(error, str) else json.dumps(error, ensure_ascii=False, sort_keys=True)), True
    for key in ("output", "result"):
        if key in response:
            value = response[key]
            return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)), None
    return json.dumps(response, ensure_ascii=False, sort_keys=True), None


def _usage(metadata: Any) -> Optional[dict[str, int]]:
    if not isinstance(metadata, dict):
        return None
    pick = {_snake(k): v for k, v in metadata.items()}
    usage = {
        out: pick[key] for out, key in (("input_tokens", "prompt_token_count"), ("output_tokens", "candidates_token_count"))
        if isinstance(pick.get(key), int) and not isinstance(pick.get(key), bool)
    }
    return usage or None


class _Pairing:
    """The calls of the latest model turn waiting for a response, by name (answered by a response with no id)."""

    def __init__(self) -> None:
        self.turn_index: Optional[int] = None
        self.waiting: dict[str, list[str]] = {}

    def open(self, index: int) -> None:
        self.turn_index, self.waiting = index, {}

    def take(self, name: str) -> Optional[str]:
        queue = self.waiting.get(name)
        return queue.pop(0) if queue else None

    def answered(self, call_id: str) -> None:
        """A response named the call's id: no response without one answers it."""
        for queue in self.waiting.values():
            if call_id in queue:
                queue.remove(call_id)


def convert(messages: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The Gemini contents among ``messages`` as chat messages; other messages unchanged.

    A model turn becomes an assistant message with ``text`` and ``tool_use`` blocks; a user turn a
    user message with ``tool_result`` blocks (each response) and ``text`` / ``inline_data``
    blocks (what the user gave). What could not be read goes under ``NOTES_KEY``.
    """
    if not any(is_gemini(m) for _, m in messages):
        return messages
    out: list[tuple[int, Any]] = []
    pairing = _Pairing()
    previous: Optional[int] = None  # index of the content before this one
    for index, message in messages:
        if not is_gemini(message):
            out.append((index, message))
            previous = index
            continue
        wrapped = _candidate(message)
        extra: dict[str, Any] = {}
        if wrapped is not None:
            content = wrapped["content"]
            reason = wrapped.get("finishReason", wrapped.get("finish_reason"))
            if isinstance(reason, str) and reason and reason != "FINISH_REASON_UNSPECIFIED":
                extra["stop_reason"] = reason
            usage = _usage(wrapped.get("_usage"))
            if usage:
                extra["usage"] = usage
            outer = {k: v for k, v in message.items() if k not in ("content", "candidates")}
        else:
            content, outer = message, message
        for key, value in outer.items():  # times and ids stored beside the content
            if key not in ("parts", "role") and not key.startswith("_") and key not in extra:
                extra.setdefault(key, value)
        role = content.get("role")
        if role == "model":
            chat = _model_turn(content.get("parts") or [], index, pairing)
            chat.update(extra)
        else:
            answers = pairing if pairing.turn_index == previous else _Pairing()
            chat = _user_turn(content.get("parts") or [], index, answers)
            chat.update(extra)
            pairing = _Pairing()  # the next user turn answers nothing of the turn before this one
        out.append((index, chat))
        previous = index
    return out


def _note(notes: list[tuple[str, str]], index: int, position: int, raw: Any) -> None:
    if not isinstance(raw, dict):
        notes.append(("unread_part", f"part {position} of message {index} is not an object: left out"))
        return
    unknown = sorted(str(k) for k, v in raw.items() if v is not None and _snake(str(k)) not in KNOWN_PARTS)
    if unknown:
        # the keys are the log's text: quoted and cut, as names are in other violations
        keys = ", ".join(repr(k[:60]) for k in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        notes.append(("unread_part", f"part {position} of message {index} is of a kind loopscope does not read "
                                     f"({keys}): left out"))


def _model_turn(parts: list[Any], index: int, pairing: _Pairing) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    notes: list[tuple[str, str]] = []
    pairing.open(index)
    position = 0
    for number, raw in enumerate(parts):
        part = _parts(raw)
        _note(notes, index, number, raw)
        call = part.get("function_call")
        if isinstance(call, dict):
            call = _parts(call)
            name = str(call["name"]) if call.get("name") is not None else "unknown"
            call_id = call.get("id")
            if call_id in (None, ""):
                call_id = f"m{index}.{position}"
            # a response without an id answers it by name, even when the call has one (the model sent
            # ids, the code that ran the tools built its responses by name only)
            pairing.waiting.setdefault(name, []).append(str(call_id))
            position += 1
            args = call.get("args")
            blocks.append({"type": "tool_use", "id": str(call_id), "name": name, "input": {} if args is None else args})
        if isinstance(part.get("text"), str) and not part.get("thought"):
            blocks.append({"type": "text", "text": part["text"]})
    chat: dict[str, Any] = {"role": "assistant", "content": blocks}
    if notes:
        chat[NOTES_KEY] = notes
    return chat


def _user_turn(parts: list[Any], index: int, pairing: _Pairing) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    given: list[dict[str, Any]] = []
    notes: list[tuple[str, str]] = []
    for number, raw in enumerate(parts):
        part = _parts(raw)
        _note(notes, index, number, raw)
        response = part.get("function_response")
        if isinstance(response, dict):
            response = _parts(response)
            name = str(response["name"]) if response.get("name") is not None else "unknown"
            call_id = response.get("id")
            if call_id not in (None, ""):
                pairing.answered(str(call_id))
            else:
                call_id = pairing.take(name)
                if call_id is None:
                    notes.append(("unknown_result_id", f"message {index}: the functionResponse {name!r} (part {number}, "
                                  "no id) answers no call of that name in the model turn just before it: left out"))
                    continue
            text, flag = response_text(response.get("response"))
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(call_id), "content": text}
            if flag is not None:
                block["is_error"] = flag
            results.append(block)
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            given.append({"type": "text", "text": part["text"]})
        elif "inline_data" in part or "file_data" in part:
            given.append({"type": "inline_data"})  # an image, a file: the user gave something
    chat: dict[str, Any] = {"role": "user", "content": results + given}
    if notes:
        chat[NOTES_KEY] = notes
    return chat
