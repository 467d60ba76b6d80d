"""Model-call logs: one line per model call, the history sent and the reply received.

An LLM gateway or proxy (LiteLLM's ``StandardLoggingPayload``, a hand-rolled
``{"request": {...}, "response": {...}}`` logger, Helicone's ``request_body`` /
``response_body``) logs each call a loop makes with the whole conversation so far:
the third call of a conversation re-sends the first two calls' replies and tool
results. Read line by line as conversations, every tool call would count once
per later line and the last reply not at all (before this module, on LiteLLM's log of
a loop of nine model calls, tests/fixtures/calllog: 4 prompts where there were 3, 3 of
them open, 7 tool calls where there were 5, and 2 replays where there were none).

So each line is read as *history + reply* and lines are threaded into
conversations: a call whose history starts with an earlier call's history and
reply continues that conversation (only its new messages are added), a call
that continues nothing starts one. Messages are compared loosely (role, text,
tool call ids and names, or the arguments when a call has no id; the result's
call id), because a client re-sends a reply in its own serialization (``content``
``null`` or ``""``, fields such as ``refusal`` or ``annotations`` dropped, the
arguments re-encoded).

A call that re-sends an earlier point of a conversation that has since gone on
(a retried or regenerated call) is a branch: it is read as its own conversation
from the branch point, and the load's notices count it. A logged call with no
reply (a failed request) is counted; when it continues a conversation, the tool
results it sent are that conversation's, and unless a later call goes on from the
same point the loop ended there: ``exit_reason`` ``error``, ``error_type``
``model_call_failed``. One that continues nothing in the file starts a conversation
with its history, ended the same way (a retry continues it), unless that history ends
with a model response: no request, but a finished conversation whose ``response`` is
empty, read as a conversation.

Calls are threaded by their messages only. A session id (``session_id``,
``litellm_session_id``, ``conversation_id``, ``thread_id``, at the top or under
``metadata``; ``--id-key`` instead when given) keeps two sessions apart and names the
conversation; without one, LiteLLM's ``trace_id`` of the first call names it (LiteLLM
puts a session id the caller sent there, else one of its own per call, which is why it
does not thread).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Optional

# Where a logged call keeps what it sent and what it got back.
REQUEST_KEYS = ("request", "request_body")
RESPONSE_KEYS = ("response", "response_body")
# A session id a gateway records for a run of calls (LiteLLM: metadata.litellm_session_id).
SESSION_KEYS = ("session_id", "litellm_session_id", "conversation_id", "thread_id")
# When the call was sent and its reply came back (LiteLLM: epoch seconds); else the line's own time.
SENT_TIME_KEYS = ("startTime", "start_time")
REPLY_TIME_KEYS = ("endTime", "end_time")


def _history(root: dict[str, Any]) -> Optional[list[Any]]:
    for key in REQUEST_KEYS:
        request = root.get(key)
        if isinstance(request, dict) and isinstance(request.get("messages"), list):
            return request["messages"]
    return root["messages"] if isinstance(root.get("messages"), list) else None


def _reply(response: Any) -> Optional[dict[str, Any]]:
    """The assistant message of a logged response (OpenAI chat completion or Anthropic message), else None."""
    if not isinstance(response, dict):
        return None
    body = response.get("body")
    if isinstance(body, dict) and "choices" in body:  # OpenAI batch output: {status_code, body}
        response = body
    choices = response.get("choices")
    if isinstance(choices, list):
        choice = choices[0] if choices and isinstance(choices[0], dict) else None
        message = choice.get("message") if choice else None
        if not isinstance(message, dict):
            return None
        reply = dict(message)
        if choice.get("finish_reason") is not None and reply.get("finish_reason") is None:
            reply["finish_reason"] = choice["finish_reason"]
        return reply
    if response.get("role") == "assistant" and "content" in response:  # Anthropic Messages
        return dict(response)
    return None


def call_entry(root: Any) -> Optional[tuple[list[Any], Optional[dict[str, Any]]]]:
    """``(history, reply)`` of one logged model call, else None (not a call log line).

    ``reply`` is None for a logged call that failed (no reply); a ``response`` that is neither
    a reply this reader knows nor a failure makes the line no call log line at all (it is then
    read as anything else is: a conversation object whose ``messages`` are its history).
    """
    if not isinstance(root, dict):
        return None
    response_key = next((k for k in RESPONSE_KEYS if k in root), None)
    if response_key is None:
        return None
    history = _history(root)
    if history is None:
        return None
    response = root[response_key]
    reply = _reply(response)
    if reply is None and not _failed(root, response):
        return None  # a "response" that is neither a reply nor a failure: not a call log line
    return history, reply


def _failed(root: dict[str, Any], response: Any) -> bool:
    """A logged call that failed: a failure status, an error in place of the response, or no response."""
    if str(root.get("status", "")).lower() in ("failure", "failed", "error"):
        return True
    if response in (None, {}, ""):
        return True
    # an error in place of the response; not a reply that states no error ("error": null, as every
    # OpenAI Responses API object does)
    return isinstance(response, dict) and response.get("error") not in (None, {}, "") and "choices" not in response


def session_id(root: dict[str, Any]) -> Optional[str]:
    """The session a gateway recorded for this call (top level or under ``metadata``), else None."""
    for where in (root, root.get("metadata")):
        if isinstance(where, dict):
            for key in SESSION_KEYS:
                value = where.get(key)
                if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
                    return str(value)
    return None


def trace_id(root: dict[str, Any]) -> Optional[str]:
    """The gateway's trace id for the call (LiteLLM: the session id when one was sent), to name a conversation.

    Not used to thread calls: without a session, LiteLLM gives each call a trace id of its own.
    """
    value = root.get("trace_id")
    return value if isinstance(value, str) and value else None


def _block_key(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    return [block.get(k) for k in ("type", "text", "id", "tool_use_id", "name")]


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def message_key(message: Any) -> str:
    """What two serializations of one message share (see the module docstring)."""
    if not isinstance(message, dict):
        return json.dumps(message, sort_keys=True, default=str)
    content = message.get("content")
    text = [_block_key(b) for b in content] if isinstance(content, list) else (content or "")
    calls = []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        calls.append([call.get("id"), function.get("name"), None if call.get("id") else _arguments(function.get("arguments"))])
    return json.dumps([message.get("role") or message.get("type"), text, calls, message.get("tool_call_id")],
                      sort_keys=True, default=str)


class Threads:
    """Threads logged calls into conversations, in log order.

    ``add`` returns ``(conversation, new_messages, branch)``: the conversation the call
    belongs to (an earlier one it continues, or None for a new one), the messages it adds,
    and whether it re-sent an earlier point of a conversation that had since gone on.
    """

    def __init__(self) -> None:
        # digest of a transcript (a call's history + reply) -> (conversation, its length then)
        self._seen: dict[bytes, tuple[Any, int]] = {}
        self._tip: dict[int, int] = {}  # id(conversation) -> length of its transcript now

    @staticmethod
    def _digests(messages: list[Any], seed: str) -> list[bytes]:
        digest = hashlib.blake2b(seed.encode(), digest_size=16).digest()
        out = []
        for m in messages:
            digest = hashlib.blake2b(digest + message_key(m).encode(), digest_size=16).digest()
            out.append(digest)
        return out

    def add(self, history: list[Any], reply: dict[str, Any], session: Optional[str]) -> tuple[Any, list[Any], bool, list[bytes]]:
        """Returns ``(conversation or None, messages to add, branch, digests)``; pass the digests to ``record``."""
        transcript = history + [reply]
        digests = self._digests(transcript, session or "")
        for k in range(len(history), 0, -1):
            found = self._seen.get(digests[k - 1])
            if found is not None:
                conv, length = found
                return conv, transcript[k:], self._tip.get(id(conv)) != length, digests
        return None, transcript, False, digests

    def add_failed(self, history: list[Any], session: Optional[str]) -> tuple[Any, Optional[list[Any]]]:
        """A call with no reply: ``(conversation, messages to add)`` when it continues a conversation's
        latest call (the tool results it sent are that conversation's, and the conversation's tip is
        now this history, so a retry of it continues it); ``(None, None)`` when it re-sent an earlier
        point of a conversation (a failed retry: nothing in it is new); ``(None, [])`` when it
        continues nothing logged before it."""
        digests = self._digests(history, session or "")
        for k in range(len(digests), 0, -1):
            found = self._seen.get(digests[k - 1])
            if found is not None:
                conv, length = found
                if self._tip.get(id(conv)) != length:
                    return None, None
                self._seen.setdefault(digests[-1], (conv, len(digests)))
                self._tip[id(conv)] = len(digests)
                return conv, history[k:]
        return None, []

    def start_failed(self, conv: Any, history: list[Any], session: Optional[str]) -> None:
        """Remember ``conv`` as a conversation started by a call with no reply (its history is its
        transcript so far), so a retry of that call continues it."""
        digests = self._digests(history, session or "")
        if digests:
            self._seen.setdefault(digests[-1], (conv, len(digests)))
            self._tip[id(conv)] = len(digests)

    def record(self, conv: Any, digests: list[bytes]) -> None:
        """Remember ``conv`` as holding this call's history and transcript (its tip now: one longer)."""
        if len(digests) > 1:
            self._seen.setdefault(digests[-2], (conv, len(digests) - 1))
        self._seen.setdefault(digests[-1], (conv, len(digests)))
        self._tip[id(conv)] = len(digests)
