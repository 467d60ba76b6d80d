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

OpenAI Responses API calls (``client.responses.create``: ``{request: {input, instructions,
previous_response_id}, response: {id, output, status}}``) are read too: the ``input`` items and
the ``output`` items are folded into chat messages as the messages reader folds a Responses item
list (``responses_messages``: a run of ``reasoning`` / assistant ``message`` / ``function_call``
items is one assistant message, a ``function_call_output`` a tool message), the text of a
message's ``input_text`` / ``output_text`` parts joined, so that an output re-sent in the next
``input`` (as the SDK serializes it, or as an easy input message) compares equal. A call whose
request names a ``previous_response_id`` sends only its new items: it continues the conversation
of the logged response with that ``id``, from that response (a later call from an earlier
response is a branch, as above); when no logged response has that id, the call starts a
conversation of its own and the load's notices count it (the start is not in the log). A response
with ``status`` ``failed`` (or an ``error``) is a failed call; ``incomplete`` for
``max_output_tokens`` / ``content_filter`` is the stop reason ``length`` / ``content_filter``.
The calls of the other tools the client runs (``custom_tool_call``, ``shell_call``,
``apply_patch_call``, ...: ``responses_items``) are calls too; provider-run tool items
(``web_search_call``, ``file_search_call``, ...) are skipped, as Anthropic server tools are.

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

from loopscope.analyses.ingest.messages.responses_items import fold, is_model_item

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


# -- OpenAI Responses API calls ------------------------------------------------------------------


def _request(root: dict[str, Any]) -> Optional[dict[str, Any]]:
    for key in REQUEST_KEYS:
        request = root.get(key)
        if isinstance(request, dict):
            return request
    return None


def _responses_request(root: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The request of a logged Responses API call (``input``: a string or a list of items), else None."""
    request = _request(root)
    if request is None or "messages" in request or not isinstance(request.get("input"), (str, list)):
        return None
    return request


def _responses_response(response: Any) -> Optional[dict[str, Any]]:
    """A Responses API response body (``output`` items), else None."""
    if isinstance(response, dict) and isinstance(response.get("output"), list) and (
        response.get("object") == "response" or "status" in response
    ):
        return response
    return None


def responses_messages(items: list[Any]) -> list[Any]:
    """Responses API items as chat messages (``responses_items.fold``), items of no message left out."""
    return [message for _, message in fold(items)]


def _responses_history(request: dict[str, Any]) -> list[Any]:
    """What a Responses API call sent: its ``input`` items (after ``instructions`` as a system message,
    unless it continues a stored response: then the instructions are no message of the history)."""
    raw = request["input"]
    history = responses_messages([raw] if isinstance(raw, str) else raw)
    instructions = request.get("instructions")
    if isinstance(instructions, str) and instructions and not previous_response_id(request):
        history.insert(0, {"role": "system", "content": instructions})
    return history


# Why a Responses API response stopped short (``incomplete_details.reason``) as a stop reason.
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _responses_reply(response: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The assistant message of a Responses API response (None when it failed)."""
    if str(response.get("status") or "").lower() in ("failed", "cancelled") or response.get("error"):
        return None
    folded = responses_messages([i for i in response["output"] if isinstance(i, dict) and (
        is_model_item(i) or i.get("type") == "message")])
    reply: dict[str, Any] = folded[0] if len(folded) == 1 else {"role": "assistant", "content": ""}
    details = response.get("incomplete_details")
    if response.get("status") == "incomplete" and isinstance(details, dict) and details.get("reason") in _INCOMPLETE:
        reply["finish_reason"] = _INCOMPLETE[details["reason"]]
    elif response.get("status") == "completed":
        reply["finish_reason"] = "tool_calls" if reply.get("tool_calls") else "stop"
    if isinstance(response.get("usage"), dict):
        reply["usage"] = response["usage"]
    return reply


def previous_response_id(request: Any) -> Optional[str]:
    """The stored response a Responses API request continues (it then sends only its new items)."""
    value = request.get("previous_response_id") if isinstance(request, dict) else None
    return value if isinstance(value, str) and value else None


def responses_ids(root: Any) -> tuple[Optional[str], Optional[str]]:
    """``(previous_response_id, response id)`` of a logged Responses API call; ``(None, None)`` otherwise."""
    if not isinstance(root, dict):
        return None, None
    request = _responses_request(root)
    if request is None:
        return None, None
    response = next((root[k] for k in RESPONSE_KEYS if k in root), None)
    response_id = response.get("id") if isinstance(response, dict) else None
    return previous_response_id(request), response_id if isinstance(response_id, str) and response_id else None


def response_created(root: dict[str, Any]) -> Optional[Any]:
    """When a logged Responses API response was created (``created_at``, epoch seconds), else None."""
    response = next((root[k] for k in RESPONSE_KEYS if k in root), None)
    if isinstance(response, dict) and response.get("object") == "response":
        return response.get("created_at")
    return None


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
    request = _responses_request(root)
    if request is not None:  # an OpenAI Responses API call
        response = root[response_key]
        body = _responses_response(response)
        if body is None and not _failed(root, response):
            return None
        return _responses_history(request), _responses_reply(body) if body is not None else None
    history = _history(root)
    if history is None:
        return None
    response = root[response_key]
    body = _responses_response(response)
    if body is not None:  # a Responses API call logged with its input items as "messages" (LiteLLM)
        return responses_messages(history), _responses_reply(body)
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


# LiteLLM's call types that are no chat with a model that can call tools (embeddings, images,
# audio, moderation, reranking): a gateway log holds them beside the chat calls.
_NOT_CHAT = ("embedding", "image_generation", "image_edit", "transcription", "speech", "moderation", "rerank",
             "text_completion", "file_", "batch", "create_", "retrieve_", "list_", "delete_", "cancel_")


def not_chat_call(root: Any) -> Optional[str]:
    """The call type of a logged call that is no chat (LiteLLM's ``call_type``: ``embedding``,
    ``aimage_generation``, ``moderation``...), else None: such a line holds no conversation."""
    if not isinstance(root, dict) or not isinstance(root.get("call_type"), str):
        return None
    kind = root["call_type"].lower()
    bare = kind[1:] if kind.startswith("a") and kind[1:].startswith(_NOT_CHAT) else kind
    return root["call_type"] if bare.startswith(_NOT_CHAT) else None


def session_id(root: dict[str, Any]) -> Optional[str]:
    """The session a gateway recorded for this call (top level or under ``metadata``; the request's
    ``metadata``, which the OpenAI APIs take), else None."""
    request = _request(root)
    for where in (root, root.get("metadata"), request.get("metadata") if request is not None else None):
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


class Mark:
    """Where a call's transcript sits in its conversation: its digests, after ``offset`` earlier messages."""

    __slots__ = ("digests", "offset")

    def __init__(self, digests: list[bytes], offset: int = 0) -> None:
        self.digests = digests
        self.offset = offset


class Threads:
    """Threads logged calls into conversations, in log order.

    ``add`` returns ``(conversation, new_messages, branch, mark)``: the conversation the call
    belongs to (an earlier one it continues, or None for a new one), the messages it adds,
    whether it re-sent an earlier point of a conversation that had since gone on, and where its
    transcript sits (pass it to ``record``).
    """

    def __init__(self) -> None:
        # digest of a transcript (a call's history + reply) -> (conversation, its length then)
        self._seen: dict[bytes, tuple[Any, int]] = {}
        self._tip: dict[int, int] = {}  # id(conversation) -> length of its transcript now
        # Responses API response id -> (conversation, its transcript's length and last digest then)
        self._responses: dict[str, tuple[Any, int, bytes]] = {}

    @staticmethod
    def _seed(session: Optional[str]) -> bytes:
        return hashlib.blake2b((session or "").encode(), digest_size=16).digest()

    @staticmethod
    def _digests(messages: list[Any], digest: bytes) -> list[bytes]:
        out = []
        for m in messages:
            digest = hashlib.blake2b(digest + message_key(m).encode(), digest_size=16).digest()
            out.append(digest)
        return out

    def knows_response(self, response_id: str) -> bool:
        """Whether a logged response has this id (a ``previous_response_id`` in the log)."""
        return response_id in self._responses

    def _start(self, session: Optional[str], previous: Optional[str]) -> Optional[tuple[bytes, int, Any]]:
        """Where a call's history starts: ``(digest, length, conversation)`` before its first message
        (the session's seed, or the transcript of the response it continues); None for a
        ``previous`` response not in the log."""
        if previous is None:
            return self._seed(session), 0, None
        found = self._responses.get(previous)
        return None if found is None else (found[2], found[1], found[0])

    def add(self, history: list[Any], reply: dict[str, Any], session: Optional[str],
            previous: Optional[str] = None) -> tuple[Any, list[Any], bool, Mark]:
        """Returns ``(conversation or None, messages to add, branch, mark)``; pass the mark to ``record``.

        ``previous``: the Responses API response this call continues (``previous_response_id``):
        ``history`` is then only its new items, placed after that response's transcript (not in the
        log: the call starts a conversation of its own).
        """
        transcript = history + [reply]
        start = self._start(session, previous) or (self._seed(session), 0, None)
        digest, offset, parent = start
        digests = self._digests(transcript, digest)
        for k in range(len(history), 0, -1):
            found = self._seen.get(digests[k - 1])
            if found is not None:
                conv, length = found
                return conv, transcript[k:], self._tip.get(id(conv)) != length, Mark(digests, offset)
        if parent is not None:
            return parent, transcript, self._tip.get(id(parent)) != offset, Mark(digests, offset)
        return None, transcript, False, Mark(digests, offset)

    def add_failed(self, history: list[Any], session: Optional[str],
                   previous: Optional[str] = None) -> tuple[Any, Optional[list[Any]]]:
        """A call with no reply: ``(conversation, messages to add)`` when it continues a conversation's
        latest call (the tool results it sent are that conversation's, and the conversation's tip is
        now this history, so a retry of it continues it); ``(None, None)`` when it re-sent an earlier
        point of a conversation (a failed retry: nothing in it is new); ``(None, [])`` when it
        continues nothing logged before it (``previous``: a Responses API response not in the log)."""
        start = self._start(session, previous)
        if start is None:
            return None, []
        digest, offset, parent = start
        digests = self._digests(history, digest)
        candidates = [(k, self._seen.get(digests[k - 1])) for k in range(len(digests), 0, -1)]
        if parent is not None:
            candidates.append((0, (parent, offset)))
        for k, found in candidates:
            if found is not None:
                conv, length = found
                if self._tip.get(id(conv)) != length:
                    return None, None
                if digests:
                    self._seen.setdefault(digests[-1], (conv, offset + len(digests)))
                self._tip[id(conv)] = offset + len(digests)
                return conv, history[k:]
        return None, []

    def start_failed(self, conv: Any, history: list[Any], session: Optional[str]) -> None:
        """Remember ``conv`` as a conversation started by a call with no reply (its history is its
        transcript so far), so a retry of that call continues it."""
        digests = self._digests(history, self._seed(session))
        if digests:
            self._seen.setdefault(digests[-1], (conv, len(digests)))
            self._tip[id(conv)] = len(digests)

    def record(self, conv: Any, mark: Mark, response_id: Optional[str] = None) -> None:
        """Remember ``conv`` as holding this call's history and transcript (its tip now: one longer)."""
        digests, offset = mark.digests, mark.offset
        if len(digests) > 1:
            self._seen.setdefault(digests[-2], (conv, offset + len(digests) - 1))
        self._seen.setdefault(digests[-1], (conv, offset + len(digests)))
        self._tip[id(conv)] = offset + len(digests)
        if response_id is not None:
            self._responses.setdefault(response_id, (conv, offset + len(digests), digests[-1]))
