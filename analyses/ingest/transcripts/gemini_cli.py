"""Gemini CLI saved chats (``--input-format gemini-cli``).

Gemini CLI's chat recording (``packages/core/src/services/chatRecordingService.ts``) writes one
file per session under ``~/.gemini/tmp/<project_hash>/chats/``: ``session-<time>-<id>.jsonl``
(a subagent's run: ``chats/<parent session id>/<id>.jsonl``); earlier versions wrote one JSON
document, ``session-<time>-<id>.json``, ``{sessionId, projectHash, startTime, lastUpdated,
messages: [...]}``. The JSON Lines form holds, line by line:

- a metadata object ``{sessionId, projectHash, startTime, lastUpdated, kind?}``;
- message records ``{id, timestamp, type, content, ...}``: a message is written again, whole,
  when it changes (its tool calls, its tokens): the last write wins, at the place of the first;
- ``{$set: {...}}``: metadata updates; a ``$set`` with ``messages`` replaces the whole list
  (the CLI then reads that list, as this reader does);
- ``{$rewindTo: <message id>}``: that message and all after it are dropped (``/rewind``; all
  messages when the id is unknown). The CLI drops them; so does this reader, and counts them.

Message ``type``:

- ``user``: what the user sent (``content``: a string or Gemini parts). Text or inline data
  starts a prompt; a message made only of ``functionResponse`` parts is the CLI's record of
  the tool results it sent (they are read from the calls, below), not a prompt.
- ``gemini``: one model response (a step): ``content`` (its text), ``tokens`` ``{input,
  output}``, and ``toolCalls[]`` ``{id, name, args, status, result, timestamp}``: ``result``
  is the Gemini parts sent back (a ``functionResponse``, read as the messages reader reads it:
  ``error``, else ``output``, the text handed to the model). ``status`` ``success`` is a
  success, ``error`` an error; ``cancelled`` (the user declined or stopped the tool) is an
  error with ``error_type`` ``cancelled``, and the prompt ends ``interrupted`` unless the
  model answers after it: as Claude Code's rejected tool use (a ``tool_result`` with
  ``is_error``) followed by ``[Request interrupted by user for tool use]``. Any other status
  (``scheduled``, ``executing``, ``awaiting_approval``...) never finished: no record, a
  ``missing_result`` violation. A response made only of the CLI's synthetic thought
  ("Binary content received", signature ``skip_thought_signature_validator``) is not a step.
- ``info`` / ``warning``: what the CLI showed; ``Request cancelled.`` / ``User cancelled the
  request.`` while the prompt's loop runs ends it ``interrupted``.
- ``error``: an error the CLI showed (an API error, a quota): while the prompt's loop runs
  (no response yet, or its last response asked for tools), it ends the loop ``error``
  (``error_type`` ``cli_error``, the redacted text); otherwise it is not the loop's.

Conversation = ``sessionId``; agent ``gemini-cli`` (``gemini-cli/subagent`` for ``kind:
"subagent"``, with ``parent_conversation_id`` the folder's name). ``prompt_id`` is the user
message's ``id``. ``transcript_line`` is the JSON Lines line where the message was first
written; for the ``.json`` form and for a list from a ``$set``, the message's position (1-based).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loopscope.analyses.ingest.messages.gemini import response_text
from loopscope.analyses.ingest.transcripts._lines import _open, first_object, head_objects, json_lines, text_of
from loopscope.analyses.ingest.transcripts._session import Session, parse_ts

AGENT = "gemini-cli"
SUBAGENT = "gemini-cli/subagent"
SYNTHETIC_SIGNATURE = "skip_thought_signature_validator"
CANCEL_NOTICES = ("Request cancelled.", "User cancelled the request.")
# a legacy .json file is read whole; past this size it is refused as the messages reader does
MAX_JSON_BYTES = 256 * 2**20


def sniff(head: bytes) -> bool:
    """Whether a file starts like a Gemini CLI chat: ``sessionId`` and ``projectHash`` in its first object."""
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if not text.startswith(b"{"):
        return False
    if any("sessionId" in o and "projectHash" in o for o in head_objects(head, limit=2)):
        return True
    # the legacy .json form, pretty-printed: the two keys come first
    first = text[:400]
    return b'"sessionId"' in first and b'"projectHash"' in first and b'"messages"' in text


def _parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    return content if isinstance(content, list) else []


def _has(part: Any, *keys: str) -> bool:
    return isinstance(part, dict) and any(part.get(k) is not None for k in keys)


def _gives_content(content: Any) -> bool:
    """Whether a user message carries something for the model (text, inline data): a prompt."""
    for part in _parts(content):
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"].strip() and not part.get("thought"):
            return True
        if _has(part, "inlineData", "inline_data", "fileData", "file_data"):
            return True
    return False


def _synthetic_ack(message: Mapping[str, Any]) -> bool:
    parts = _parts(message.get("content"))
    return bool(parts) and not message.get("toolCalls") and all(
        isinstance(p, dict) and p.get("thought") is True and p.get("thoughtSignature") == SYNTHETIC_SIGNATURE for p in parts
    )


def _result_text(call: Mapping[str, Any]) -> str:
    """The text the model was handed for a call: its functionResponse, else what the CLI displayed."""
    for part in _parts(call.get("result")):
        if not isinstance(part, dict):
            continue
        response = part.get("functionResponse", part.get("function_response"))
        if isinstance(response, dict):
            return response_text(response.get("response"))[0]
    display = call.get("resultDisplay")
    return display if isinstance(display, str) else text_of(call.get("result"))


class _Reader:
    def __init__(self, path: Path, out: Any) -> None:
        self.path = path
        self.out = out
        self.skipped: Counter[str] = Counter()

    def messages(self) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
        """(metadata, [(line or position, message)]) as the CLI reconstructs the session."""
        from loopscope.analyses.ingest.transcripts import BadLine

        with _open(self.path) as f:
            start = f.read(65536)
            pretty = first_object(start) is None  # the legacy .json form is pretty-printed: its first line is "{"
            data = start + f.read(MAX_JSON_BYTES + 1) if pretty else b""
        whole = None
        if pretty and len(data) <= MAX_JSON_BYTES:
            try:
                whole = json.loads(data.decode("utf-8-sig"))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                first = next((line for line in data.splitlines() if line.strip()), b"")
                if first.strip().lstrip(b"\xef\xbb\xbf") in (b"{", b"["):
                    # one pretty-printed JSON document (the legacy .json form), cut or damaged: say so
                    # once, where it broke, rather than once per line of it (none of them JSON alone)
                    self.out.bad.append(BadLine(
                        getattr(exc, "lineno", None),
                        f"not JSON: a Gemini CLI chat written as one JSON document, cut or damaged ({exc}): not read",
                        data[:200].decode("utf-8", "replace")))
                    return {}, []
                whole = None  # read line by line: the bad lines say what is wrong
        if pretty and len(data) > MAX_JSON_BYTES:
            self.out.bad.append(BadLine(None, f"a Gemini CLI chat as one JSON document larger than {MAX_JSON_BYTES // 2**20} "
                                        "MiB: not read (the CLI's .jsonl form is read line by line at any size)", ""))
            return {}, []
        del data
        if isinstance(whole, dict) and isinstance(whole.get("messages"), list):  # the legacy .json form
            return whole, [(n, m) for n, m in enumerate(whole["messages"], start=1) if isinstance(m, dict)]
        metadata: dict[str, Any] = {}
        by_id: dict[str, tuple[int, dict[str, Any]]] = {}
        for line_no, line in json_lines(self.path, self.out.bad, BadLine):
            if isinstance(line.get("$rewindTo"), str):
                ids = list(by_id)
                start = ids.index(line["$rewindTo"]) if line["$rewindTo"] in ids else 0
                for key in ids[start:]:
                    del by_id[key]
                self.skipped["messages dropped by /rewind ($rewindTo)"] += len(ids) - start
            elif isinstance(line.get("id"), str):
                first = by_id.get(line["id"], (line_no, line))[0]
                by_id[line["id"]] = (first, line)
            elif isinstance(line.get("$set"), dict):
                metadata.update(line["$set"])
            elif isinstance(line.get("sessionId"), str):
                metadata.update(line)
            else:
                self.skipped["(line of no known kind)"] += 1
        listed = metadata.get("messages")
        if isinstance(listed, list) and listed:
            return metadata, [(n, m) for n, m in enumerate(listed, start=1) if isinstance(m, dict)]
        return metadata, list(by_id.values())

    def read(self) -> None:
        metadata, messages = self.messages()
        session_id = metadata.get("sessionId")
        key = session_id if isinstance(session_id, str) and session_id else f"{self.path.parent.name}/{self.path.name}"
        if metadata.get("kind") == "subagent":
            session = Session(key, SUBAGENT, {"parent_conversation_id": self.path.parent.name})
        else:
            session = Session(key, AGENT)
        for position, message in messages:
            self.message(session, position, message)
        records, violations = session.finish()
        self.out.records.extend(records)
        self.out.violations.extend(violations)
        self.out.skipped_types.update(self.skipped)

    def message(self, session: Session, line_no: int, message: Mapping[str, Any]) -> None:
        kind = message.get("type")
        ts = parse_ts(message.get("timestamp"))
        if kind == "user":
            if _gives_content(message.get("content")):
                mid = message.get("id")
                session.prompt(mid if isinstance(mid, str) and mid else f"line-{line_no}", ts, line_no)
        elif kind == "gemini":
            self.response(session, line_no, message, ts)
        elif kind in ("info", "warning", "error"):
            text = text_of(message.get("content")).strip()
            if kind == "info" and text in CANCEL_NOTICES and self._running(session):
                session.end("interrupted", ts, line_no, source="cancelled", error_type="cancelled")
            elif kind == "error" and self._running(session):
                session.end("error", ts, line_no, source="cli_error", error_type="cli_error", error_message=text or None)
        else:
            self.skipped[str(kind) if kind is not None else "(no type)"] += 1

    @staticmethod
    def _running(session: Session) -> bool:
        """Whether the current prompt's loop is still going: no response yet, or its last asked for tools."""
        prompt = session.current
        if prompt is None or prompt.ended is not None:
            return False
        return not prompt.steps or prompt.last_step in prompt.steps_with_calls

    def response(self, session: Session, line_no: int, message: Mapping[str, Any], ts: Any) -> None:
        if _synthetic_ack(message):
            self.skipped["synthetic model acknowledgment (binary tool output)"] += 1
            return
        mid = message.get("id")
        step = mid if isinstance(mid, str) and mid else f"line-{line_no}"
        tokens = message.get("tokens") if isinstance(message.get("tokens"), dict) else {}
        session.response(step, ts, line_no, input_tokens=tokens.get("input"), output_tokens=tokens.get("output"))
        calls = [c for c in message.get("toolCalls") or [] if isinstance(c, dict)]
        for call in calls:
            name = call.get("name") if isinstance(call.get("name"), str) and call.get("name") else "(unnamed)"
            call_id = call.get("id")
            session.call(step, ts, line_no, str(call_id) if call_id is not None else "", name, call.get("args"))
        cancelled = False
        for call in calls:
            status = call.get("status")
            if status not in ("success", "error", "cancelled"):
                continue  # never finished: missing_result
            call_id = call.get("id")
            result_ts = parse_ts(call.get("timestamp"))
            session.result(str(call_id) if call_id is not None else f"line-{line_no}", result_ts, line_no,
                           _result_text(call), status != "success", error_type="cancelled" if status == "cancelled" else None)
            cancelled = cancelled or status == "cancelled"
        if cancelled:
            session.end("interrupted", ts, line_no, source="cancelled", error_type="cancelled")


def read(path: Path, options: Mapping[str, Any]) -> Any:
    """Read one Gemini CLI chat file into v1 records.

    Args:
        path: a ``session-*.jsonl`` (or legacy ``.json``) file (gzip allowed).
        options: not used (the format has no options); accepted for the reader protocol.

    Returns:
        A ``ReaderOutput``: records, protocol violations, bad lines, and ``skipped_types``
        (messages of types the reader does not know, messages dropped by ``/rewind``).
    """
    from loopscope.analyses.ingest.transcripts import ReaderOutput

    out = ReaderOutput()
    _Reader(path, out).read()
    return out
