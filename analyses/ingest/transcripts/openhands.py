"""OpenHands event streams (``--input-format openhands``).

OpenHands (All-Hands-AI/OpenHands) records a conversation as a list of events,
each ``event_to_dict(event)``: the trajectory the UI downloads and
``save_trajectory_path`` writes is a JSON list of them, and a stream copied one
event per line is read the same way (JSON Lines). Every event has ``id``,
``timestamp`` and ``source`` (``user``, ``agent``, ``environment``) and is
either

- an *action*: ``action`` (``message``, ``run``, ``run_ipython``, ``read``,
  ``write``, ``edit``, ``browse``, ``browse_interactive``, ``call_tool_mcp``,
  ``delegate``, ``think``, ``task_tracking``, ``finish``, ``reject``, ...),
  ``args``, and, when the model asked for it with function calling,
  ``tool_call_metadata`` ``{function_name, tool_call_id, model_response,
  total_calls_in_response}``; or
- an *observation*: ``observation`` (``run``, ``edit``, ``read``, ``error``,
  ``user_rejected``, ``agent_state_changed``, ``null``, ...), ``content``,
  ``extras`` (a ``run`` observation's ``extras.metadata.exit_code``), ``cause``
  (the id of the action it answers) and the action's ``tool_call_metadata``.

Why a transcript reader and not the messages reader: the file is the event log
of one agent session, like a Codex rollout, not a list of chat messages: the
calls and their results are separate events joined by an id, the loop's end is
an event of its own (``finish``, ``agent_state_changed``), and exit codes come
with command outputs. ``_session.Session`` already turns exactly these
statements (prompt, response, call, result, end) into records with the
transcript rules (steps, exits, id collisions, missing results), and the
transcript formats are the ones detected from a file's first bytes before the
generic ones. The messages reader still names an OpenHands stream when it is
forced on one (``--input-format messages``) and points here.

How events become records:

- conversation = the file (``<folder>/<file name>``: the events carry no
  session id); agent ``openhands``.
- prompt = a ``message`` action from the ``user`` (``prompt_id`` ``event-<id>``);
  two user messages with no response between are one prompt.
- step = one model response: the ``model_response.id`` in the
  ``tool_call_metadata`` (the calls of one response share it; its ``usage``
  gives the tokens), else the event itself (an agent ``message`` with no tool).
- tool call = an agent action with ``tool_call_metadata``: id ``tool_call_id``,
  name ``function_name``, arguments the ones the model sent
  (``model_response``'s tool call of that id), else ``args`` without
  ``thought``. An agent action of a tool kind with no metadata (agents without
  function calling) is a call too, id ``event-<id>``, named by its kind.
  ``think`` is a call of the ``think`` tool: a scratchpad tool, which never
  recovers an error (docs/metrics.md).
- result = the observation with the call's ``tool_call_id``, else the one whose
  ``cause`` is the action's id. An observation of a tool kind that answers no
  call in the file is the protocol violation ``unknown_result_id``.
- error: an ``error`` observation (``error_type`` its ``extras.error_id``, else
  ``error``); ``user_rejected`` (``rejected_by_user``); an MCP result whose
  JSON has ``isError: true`` (``mcp_error``); a ``run`` observation whose exit
  code is neither 0 nor -1 (``error_type`` ``exit_code``, the code in
  ``exit_code``): the rule of the Codex reader, where a command's non-zero exit
  code is an error. OpenHands writes -1 when the command had not ended (no new
  output for a while, or its timeout: the process is still running, the agent
  may wait or interrupt it), which Codex states as "Process running": not an
  error. A ``run`` observation with no exit code at all cannot be judged: it
  counts as a success, and the file gets one ``unread_exit_status`` notice.
  ``run_ipython`` results are never errors (OpenHands marks every cell a
  success).
- exit: ``finish`` -> ``end_turn``; ``reject`` -> ``refusal``;
  ``agent_state_changed`` to ``finished`` or ``awaiting_user_input`` ->
  ``end_turn``, to ``error`` -> ``error`` (its ``reason`` as the message), or
  ``budget_exceeded`` when the reason is OpenHands' "maximum iteration" /
  "maximum budget" limit, to ``stopped`` -> ``interrupted`` (abnormal), to
  ``rejected`` -> ``refusal``; else ``end_turn`` inferred when the last
  response asked for no tool. The first statement wins, and a response after
  it reopens the loop.
- time = the event's ``timestamp`` (ISO 8601 without zone: read as UTC).

Events the reader does not use (environment bookkeeping such as ``null``
observations, ``recall``, ``condensation``, ``system``, other agent states)
are counted per kind in the load's "Lines not read" line, never dropped
silently. OpenHands V1 (``{"kind": "...Event"}``, the software-agent-sdk) is
not read: no public V1 event log was found to build it on.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from loopscope.analyses.ingest.transcripts._lines import GZIP_MAGIC, RAW_CAP, _open, json_lines, text_of
from loopscope.analyses.ingest.transcripts._session import Session, parse_ts

AGENT = "openhands"
SOURCES = frozenset({"agent", "user", "environment"})
# Agent actions that run a tool (with or without function calling).
TOOL_ACTIONS = frozenset({
    "run", "run_ipython", "read", "write", "edit", "browse", "browse_interactive", "call_tool_mcp",
    "delegate", "think", "task_tracking",
})
# Observations that are a tool's result.
RESULT_OBSERVATIONS = frozenset({
    "run", "run_ipython", "read", "write", "edit", "browse", "mcp", "delegate", "think", "task_tracking",
    "error", "success", "user_rejected", "download",
})
# agent_state_changed -> (exit_reason, error_type)
STATE_EXITS = {
    "finished": ("end_turn", None),
    "awaiting_user_input": ("end_turn", None),
    "error": ("error", "agent_error"),
    "stopped": ("interrupted", "stopped"),
    "rejected": ("refusal", None),
}
BUDGET_RE = re.compile(r"maximum (?:iteration|budget)", re.IGNORECASE)
# Keys of ``args`` that are not the tool's arguments (what OpenHands adds to the action).
NOT_ARGUMENTS = frozenset({"thought", "impl_source", "translated_ipython_code", "security_risk", "hidden", "confirmation_state"})
_SNIFF_SOURCE_RE = re.compile(rb'"source"\s*:\s*"(?:agent|user|environment)"')
_SNIFF_KIND_RE = re.compile(rb'"(?:action|observation)"\s*:\s*"[a-z_]+"')
_SNIFF_START_RE = re.compile(rb'^\s*(?:\[\s*)?\{\s*"(?:id|timestamp|source|message|action|observation)"\s*:')


def sniff(head: bytes) -> bool:
    """Whether a file starts like an OpenHands event stream (a JSON list of events, or one per line).

    The first event must show an OpenHands ``source`` and an ``action`` or ``observation`` kind
    before its end (the head of a pretty-printed list is read as text: it is cut mid-event).
    """
    text = head.lstrip(b"\xef\xbb\xbf")
    if text.startswith(GZIP_MAGIC) or not _SNIFF_START_RE.match(text):
        return False
    first = _first_event_text(text)
    if b'"role"' in first:
        return False
    return bool(_SNIFF_SOURCE_RE.search(first) and _SNIFF_KIND_RE.search(first))


def _first_event_text(text: bytes) -> bytes:
    """The text of the first event in ``text``, as far as ``text`` goes (up to its closing brace)."""
    start = text.find(b"{")
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c == 0x7B:
            depth += 1
        elif c == 0x7D:
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


def _events(path: Path, bad: list[Any], bad_line: Any) -> Iterator[tuple[int, Any]]:
    """``(line number, event)`` for each element of the file's JSON list, or each line of JSON Lines.

    A list is decoded one element at a time: a file cut short (or broken at one element)
    keeps every event before the damage, and the rest is quarantined with its line number.
    """
    with _open(path) as f:
        head = f.read(64)
    if not head.lstrip(b"\xef\xbb\xbf").lstrip().startswith(b"["):
        yield from json_lines(path, bad, bad_line)
        return
    try:
        with _open(path) as f:
            raw = f.read()
    except (OSError, EOFError) as exc:
        bad.append(bad_line(None, f"the file could not be read ({type(exc).__name__}: {exc})", ""))
        return
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        bad.append(bad_line(line, f"not UTF-8 (byte 0x{raw[exc.start]:02x}): the events from this line on were not read",
                            raw[exc.start:exc.start + RAW_CAP].decode("utf-8", "replace")))
        text = raw[:exc.start].decode("utf-8-sig", "replace")
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    n = len(text)
    ws = re.compile(r"\s*")
    counted, line = 0, 1  # line number of ``counted``, advanced as the reading goes (no rescans)

    def line_at(at: int) -> int:
        nonlocal counted, line
        line += text.count("\n", counted, at)
        counted = at
        return line

    while True:
        pos = ws.match(text, pos).end()
        if pos >= n:
            bad.append(bad_line(line_at(pos), "the list of events ends early (no closing ']'): "
                                "the file was cut short; the events before were loaded", ""))
            return
        if text[pos] == "]":
            rest = text[pos + 1:].strip()
            if rest:
                bad.append(bad_line(line_at(pos), "text after the end of the list of events, not read", rest[:RAW_CAP]))
            return
        line_no = line_at(pos)
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            bad.append(bad_line(line_no, f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}); this event and "
                                "the rest of the file were not read, the events before were loaded", text[pos:pos + RAW_CAP]))
            return
        except RecursionError:
            bad.append(bad_line(line_no, "JSON nested too deeply to read; this event and the rest of the file were not read",
                                text[pos:pos + RAW_CAP]))
            return
        if isinstance(value, dict):
            yield line_no, value
        else:
            bad.append(bad_line(line_no, f"a JSON {type(value).__name__}, not an event object", text[pos:min(end, pos + RAW_CAP)]))
        pos = ws.match(text, end).end()
        if pos < n and text[pos] == ",":
            pos += 1
        elif pos < n and text[pos] != "]":
            bad.append(bad_line(line_at(pos), "expected ',' or ']' between events; the rest of the file was not read",
                                text[pos:pos + RAW_CAP]))
            return


def _exit_code(extras: Any) -> int | None:
    """The exit code a ``run`` observation states (``extras.metadata.exit_code``; older: ``extras.exit_code``)."""
    if not isinstance(extras, dict):
        return None
    metadata = extras.get("metadata")
    for holder in (metadata, extras):
        if isinstance(holder, dict):
            code = holder.get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool):
                return code
            if isinstance(code, float) and code.is_integer():
                return int(code)
    return None


def _mcp_error(content: str) -> bool:
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and (value.get("isError") is True or value.get("is_error") is True)


def _event_id(event: Mapping[str, Any]) -> str | None:
    value = event.get("id")
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        return None
    return str(value)


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.session = Session(f"{path.parent.name}/{path.name}", AGENT)
        self.skipped: Counter[str] = Counter()
        self.by_action: dict[str, str] = {}  # action event id -> its call id
        self.unread_exit = 0
        self.events = 0

    def _skip(self, key: str) -> None:
        self.skipped[key] += 1

    def event(self, line_no: int, event: Any) -> None:
        if not isinstance(event, dict):
            self._skip(f"(a JSON {type(event).__name__}, not an event)")
            return
        self.events += 1
        ts = parse_ts(event.get("timestamp"))
        action, observation = event.get("action"), event.get("observation")
        if isinstance(action, str):
            self._action(line_no, event, action, ts)
        elif isinstance(observation, str):
            self._observation(line_no, event, observation, ts)
        elif isinstance(event.get("kind"), str):
            self._skip(f"V1 event {event['kind'][:40]} (not read)")
        else:
            self._skip("(neither action nor observation)")

    def _step_key(self, event: Mapping[str, Any], meta: Mapping[str, Any] | None) -> str:
        response = meta.get("model_response") if meta else None
        if isinstance(response, dict) and isinstance(response.get("id"), str) and response["id"]:
            return f"response-{response['id']}"
        return f"event-{_event_id(event) or id(event)}"

    def _tokens(self, step: str, ts: Any, line_no: int, meta: Mapping[str, Any] | None) -> None:
        response = meta.get("model_response") if meta else None
        usage = response.get("usage") if isinstance(response, dict) else None
        if isinstance(usage, dict):
            self.session.response(step, ts, line_no, input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens"))
        else:
            self.session.response(step, ts, line_no)

    def _action(self, line_no: int, event: Mapping[str, Any], action: str, ts: Any) -> None:
        source = event.get("source")
        session = self.session
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else None
        eid = _event_id(event)
        if source == "user" and action == "message":
            session.prompt(f"event-{eid}" if eid else f"line-{line_no}", ts, line_no)
            return
        if source != "agent":
            self._skip(f"action {action[:40]} from {str(source)[:20]}")
            return
        step = self._step_key(event, meta)
        if action == "finish":
            self._tokens(step, ts, line_no, meta)
            session.end("end_turn", ts, line_no, source="finish")
            return
        if action == "reject":
            self._tokens(step, ts, line_no, meta)
            session.end("refusal", ts, line_no, source="reject")
            return
        if action == "message":  # what the model said: a response, never a tool call
            self._tokens(step, ts, line_no, meta)
            return
        if meta is not None or action in TOOL_ACTIONS:
            call_id = meta.get("tool_call_id") if meta else None
            call_id = call_id if isinstance(call_id, str) and call_id else (f"event-{eid}" if eid else "")
            name = meta.get("function_name") if meta else None
            name = name if isinstance(name, str) and name else action
            self._tokens(step, ts, line_no, meta)
            session.call(step, ts, line_no, call_id, name, self._arguments(event, meta, call_id))
            if eid is not None:
                self.by_action[eid] = session.by_id[call_id or f"line-{line_no}"].call_id
            return
        self._skip(f"action {action[:40]}")

    @staticmethod
    def _arguments(event: Mapping[str, Any], meta: Mapping[str, Any] | None, call_id: str) -> Any:
        """The arguments the model sent for this call, else the action's ``args`` (what OpenHands made of them)."""
        response = meta.get("model_response") if meta else None
        choices = response.get("choices") if isinstance(response, dict) else None
        if isinstance(choices, list):
            for choice in choices:
                message = choice.get("message") if isinstance(choice, dict) else None
                calls = message.get("tool_calls") if isinstance(message, dict) else None
                for call in calls if isinstance(calls, list) else []:
                    if isinstance(call, dict) and call.get("id") == call_id and isinstance(call.get("function"), dict):
                        raw = call["function"].get("arguments")
                        if isinstance(raw, str):
                            try:
                                return json.loads(raw)
                            except (ValueError, RecursionError):
                                return raw
                        return raw
        args = event.get("args")
        if isinstance(args, dict):
            return {k: v for k, v in args.items() if k not in NOT_ARGUMENTS}
        return args

    def _observation(self, line_no: int, event: Mapping[str, Any], observation: str, ts: Any) -> None:
        session = self.session
        extras = event.get("extras")
        if observation == "agent_state_changed":
            state = extras.get("agent_state") if isinstance(extras, dict) else None
            exit_ = STATE_EXITS.get(state) if isinstance(state, str) else None
            if exit_ is None:
                self._skip(f"agent_state_changed to {str(state)[:30]}")
                return
            reason, error_type = exit_
            message = extras.get("reason") if isinstance(extras.get("reason"), str) and extras.get("reason") else None
            if reason == "error" and message and BUDGET_RE.search(message):
                reason, error_type = "budget_exceeded", "budget_exceeded"
            session.end(reason, ts, line_no, source=f"agent_state_changed:{state}", error_type=error_type,
                        error_message=message if reason in ("error", "budget_exceeded", "interrupted") else None)
            return
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else None
        named = meta.get("tool_call_id") if meta else None
        named = named if isinstance(named, str) and named else None
        cause = event.get("cause")
        cause = str(cause) if isinstance(cause, (int, str)) and not isinstance(cause, bool) and cause != "" else None
        if named is not None and named in session.by_id:
            call_id = named
        elif cause is not None and cause in self.by_action:
            call_id = self.by_action[cause]
        elif observation in RESULT_OBSERVATIONS and (named is not None or cause is not None):
            # a tool's result naming a call this file does not hold: unknown_result_id
            call_id = named or f"event-{cause}"
        else:
            self._skip(f"observation {observation[:40]}" + (" (answers no call)" if observation in RESULT_OBSERVATIONS else ""))
            return
        content = event.get("content")
        text = content if isinstance(content, str) else text_of(content)
        is_error, error_type, extra = False, None, None
        if observation == "error":
            error_id = extras.get("error_id") if isinstance(extras, dict) else None
            is_error, error_type = True, error_id if isinstance(error_id, str) and error_id else "error"
        elif observation == "user_rejected":
            is_error, error_type = True, "rejected_by_user"
        elif observation == "mcp":
            is_error = _mcp_error(text)
            error_type = "mcp_error" if is_error else None
        elif observation == "run":
            code = _exit_code(extras)
            asked = session.by_id.get(call_id)
            if code is None:
                if asked is not None and not asked.done:
                    self.unread_exit += 1
            elif code != -1:
                extra = {"exit_code": code}
                if code != 0:
                    is_error, error_type = True, "exit_code"
        session.result(call_id, ts, line_no, text, is_error, error_type=error_type, extra=extra)


# A file that holds one event: OpenHands' own file store keeps a session one event per file.
ONE_EVENT = (
    "one OpenHands event, not an event stream: OpenHands' file store keeps a session one event per file "
    "(sessions/<id>/events/<n>.json), and read one by one each file would be a conversation of its own. "
    "What to do: join a session's events in id order into one list and load that: "
    "jq -s 'sort_by(.id)' sessions/<id>/events/*.json > <id>.json"
)


def read(path: Path, options: Mapping[str, Any]) -> Any:
    """Read one OpenHands event stream into v1 records.

    Args:
        path: a JSON list of events (``.json``), or one event per line (``.jsonl``); gzip allowed.
        options: not used; accepted for the reader protocol.

    Returns:
        A ``ReaderOutput``: records, protocol violations, bad lines (quarantined), and
        ``skipped_types``: events the reader does not use, per kind.
    """
    from loopscope.analyses.ingest.transcripts import BadLine, ReaderOutput

    out = ReaderOutput()
    reader = _Reader(path)
    events = list(_events(path, out.bad, BadLine))
    if len(events) == 1 and not out.bad:
        with _open(path) as f:
            listed = f.read(64).lstrip(b"\xef\xbb\xbf").lstrip().startswith(b"[")
        if not listed:  # a file of one event object: one file of a session's events/ folder
            out.bad.append(BadLine(events[0][0], ONE_EVENT, json.dumps(events[0][1])[:RAW_CAP]))
            return out
    for line_no, event in events:
        reader.event(line_no, event)
    records, violations = reader.session.finish()
    out.records.extend(records)
    out.violations.extend(violations)
    if reader.unread_exit:
        out.finding(
            "unread_exit_status",
            f"{path.name}: {reader.unread_exit} output(s) of command tools (OpenHands run "
            f"{reader.unread_exit}) state no exit code and no running process; they were counted as successes",
            reader.session.conversation_id,
        )
    out.skipped_types.update({f"openhands {k}": v for k, v in reader.skipped.items()})
    return out
