"""Codex CLI session rollouts (``--input-format codex``).

Codex writes one JSON Lines file per session,
``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session-id>.jsonl``. Since
mid-2025 each line is ``{"timestamp", "type", "payload"}`` with ``type``:

- ``session_meta``: ``payload.id`` is the session id (the conversation),
  ``payload.source`` says who started it;
- ``response_item``: what went to or came from the model, ``payload.type``
  ``message`` (roles ``user``, ``assistant``, ``developer``), ``reasoning``,
  ``function_call`` (``name``, ``arguments`` as a JSON string, ``call_id``),
  ``custom_tool_call`` (``name``, ``input`` as free text, e.g. ``apply_patch``),
  ``local_shell_call``, their ``*_output`` items (``call_id``, ``output``),
  ``web_search_call`` (run by the provider: not an agent tool call);
- ``event_msg``: UI events; read are ``user_message`` (what the user typed),
  ``turn_aborted``, ``task_complete``, ``error`` and ``token_count``;
- ``turn_context``, ``compacted``: not needed.

Earlier versions (before the envelope) wrote the session meta bare on the first
line, then bare response items and ``{"record_type": "state"}`` lines, without
times: those records take the session's start time (``ts_synthetic: true``).

How lines become records (the rules shared with Claude Code are in ``_session``):

- conversation = ``session_meta.payload.id`` (else the file name); agent ``codex``
  (``codex/subagent`` when ``source`` is ``{"subagent": ...}``, with
  ``parent_conversation_id`` from its ``parent_thread_id``).
- prompt = a ``user_message`` event, or a user ``message`` item that is not
  Codex's own context (``<environment_context>``, ``# AGENTS.md instructions``,
  ``<user_instructions>``..., or any message that is one ``<tag>...</tag>`` block); both copies of one message are one prompt.
- step = one model response: the run of ``reasoning`` / assistant ``message`` /
  call items between two tool outputs (parallel calls share it).
- exit: ``turn_aborted`` -> ``interrupted`` (reason kept as ``error_type``,
  abnormal); an ``error`` event -> ``error``; ``task_complete`` -> ``end_turn``;
  else ``end_turn`` inferred when the last response asked for no tool.
- error: Codex does not store an error flag with the output (its
  ``FunctionCallOutputPayload.success`` is not serialized), so ``is_error`` is
  read from the output text as Codex's own tools write it:
  a JSON envelope ``{"output", "metadata": {"exit_code"}}`` with an exit code
  other than 0; a header line ``Exit code: N`` or ``Process exited with code N``
  (before ``Output:``) with N other than 0 (``error_type`` ``exit_code``, the code
  in ``exit_code``); an object output with ``success: false``; or one of the
  failure texts Codex answers a call with before running it (``failed to parse
  function arguments``, ``unsupported call``, ``execution error``, ``err:`` from
  an MCP server, ``... rejected by user``, ``apply_patch verification failed``,
  ``<tool> failed:``). ``exec_command_end`` events are not read: the model sees
  the exit code only through the output of the call that reported it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loopscope.analyses.ingest.transcripts._lines import (
    head_objects,
    json_lines,
    text_of,
)
from loopscope.analyses.ingest.transcripts._session import Session, parse_ts

AGENT = "codex"
TOP_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
MODEL_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output", "mcp_tool_call_output"})
KNOWN_ITEMS = MODEL_ITEMS | OUTPUT_ITEMS | {
    "message", "web_search_call", "ghost_snapshot", "compaction", "compaction_summary", "other",
    "image_generation_call", "tool_search_call", "tool_search_output",
}
# Context Codex adds as user messages: not something the user typed.
CONTEXT_PREFIXES = (
    "<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
    "<turn_aborted>", "<user_shell_command>", "<permissions instructions>", "<skill>", "<collaboration_mode>",
)
# Failure texts Codex answers a call with (codex-rs core tool handlers), with the error_type given.
FAILURE_PREFIXES = (
    ("failed to parse function arguments", "invalid_arguments"),
    ("unsupported call", "unsupported_call"),
    ("unsupported custom tool call", "unsupported_call"),
    ("execution error", "execution_error"),
    ("err: ", "mcp_error"),
    ("exec command rejected by user", "rejected_by_user"),
    ("patch rejected by user", "rejected_by_user"),
    ("apply_patch verification failed", "patch_verification_failed"),
)
# A message that is one tag block (<environment_context>...</environment_context>): text Codex adds.
_WRAPPED_RE = re.compile(r"^<([A-Za-z_][\w-]*)>.*</\1>$", re.DOTALL)
_TOOL_FAILED_RE = re.compile(r"^[a-z_][a-z0-9_]* failed: ")
_EXIT_RE = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)\s*$", re.MULTILINE)
# exec_command / write_stdin while the process still runs: no exit code yet, and none expected.
_RUNNING_RE = re.compile(r"^Process running with session ID \d+\s*$", re.MULTILINE)
# Codex's command tools: each output states how the command ended (an exit code, or that it still
# runs). An output of theirs that states neither cannot be judged (an edited or redacted log, or a
# Codex that writes its outputs another way): counted, and said once per file.
COMMAND_TOOLS = frozenset({"shell", "container.exec", "shell_command", "exec_command", "write_stdin", "local_shell"})
_SNIFF_RE = re.compile(rb'^\s*\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(session_meta|response_item|event_msg|turn_context|compacted)"')


def sniff(head: bytes) -> bool:
    """Whether a file starts like a Codex rollout (the envelope, or the bare session meta of old versions)."""
    text = head.lstrip(b"\xef\xbb\xbf")
    if _SNIFF_RE.match(text):
        return True
    objects = head_objects(head, limit=3)
    if not objects:
        return False
    first = objects[0]
    if first.get("type") in TOP_TYPES and "payload" in first:
        return True
    # before the envelope: {"id", "timestamp", "instructions"...} then bare items / record_type lines
    return "id" in first and "timestamp" in first and "type" not in first and ("instructions" in first or "git" in first)


def _exit_code(text: str) -> int | None:
    header = text.split("\nOutput:\n", 1)[0]
    match = _EXIT_RE.search(header)
    return int(match.group(1)) if match else None


def states_its_end(output: Any) -> bool:
    """Whether a command tool's output says how the command ended (or that it still runs)."""
    if isinstance(output, dict):  # {content, success} as some versions wrote it: the flag says it
        return isinstance(output.get("success"), bool) or (
            isinstance(output.get("content"), str) and states_its_end(output["content"]))
    if not isinstance(output, str):
        return False
    text, is_error, _, code = judge_output(output)
    return code is not None or is_error or bool(_RUNNING_RE.search(text.split("\nOutput:\n", 1)[0]))


def judge_output(output: Any) -> tuple[str, bool, str | None, int | None]:
    """(text the model saw, is_error, error_type, exit code) of a Codex tool output."""
    if isinstance(output, dict):  # {content, success} as some versions wrote it
        text = text_of(output.get("content")) if not isinstance(output.get("content"), str) else output["content"]
        if output.get("success") is False:
            return text, True, "failed", None
        output = text
    if isinstance(output, list):  # content items (MCP results with images): no failure signal
        return text_of(output), False, None, None
    if not isinstance(output, str):
        return "", False, None, None
    text = output
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            envelope = json.loads(stripped)
        except (ValueError, RecursionError):
            envelope = None
        if isinstance(envelope, dict) and isinstance(envelope.get("metadata"), dict):
            code = envelope["metadata"].get("exit_code")
            shown = envelope.get("output") if isinstance(envelope.get("output"), str) else text
            if isinstance(code, int) and not isinstance(code, bool):
                return shown, code != 0, "exit_code" if code != 0 else None, code
            return shown, False, None, None
    code = _exit_code(text)
    if code is not None:
        return text, code != 0, "exit_code" if code != 0 else None, code
    lowered = stripped.lower()
    for prefix, error_type in FAILURE_PREFIXES:
        if lowered.startswith(prefix):
            return text, True, error_type, None
    if _TOOL_FAILED_RE.match(stripped):
        return text, True, "tool_failed", None
    return text, False, None, None


def _find_key(value: Any, key: str, depth: int = 0) -> Any:
    """The first value of ``key`` in nested objects (``source.subagent.thread_spawn.parent_thread_id``)."""
    if depth > 8 or not isinstance(value, dict):
        return None
    if key in value:
        return value[key]
    for inner in value.values():
        found = _find_key(inner, key, depth + 1)
        if found is not None:
            return found
    return None


def _tool_name(payload: Mapping[str, Any], default: str) -> str:
    name = payload.get("name") if isinstance(payload.get("name"), str) and payload.get("name") else default
    namespace = payload.get("namespace")
    if isinstance(namespace, str) and namespace:
        return f"{namespace}{name}" if namespace.endswith(("__", ".", "/")) else f"{namespace}.{name}"
    return name


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.session: Session | None = None
        self.skipped: Counter[str] = Counter()
        self.step = 0
        self.in_response = False
        self.unread: Counter[str] = Counter()  # command tools' outputs that state no end, per tool

    def _session(self, meta: Mapping[str, Any] | None = None) -> Session:
        if self.session is None:
            meta = meta or {}
            sid = meta.get("id") if isinstance(meta.get("id"), str) and meta.get("id") else None
            agent, extra = AGENT, {}
            source = meta.get("source")
            if isinstance(source, dict) and source:
                agent = f"{AGENT}/{next(iter(source))}"  # {"subagent": {"thread_spawn": {...}}}
            parent = _find_key(source, "parent_thread_id") or meta.get("parent_thread_id")
            if isinstance(parent, str) and parent:
                extra["parent_conversation_id"] = parent
            self.session = Session(sid or f"{self.path.parent.name}/{self.path.name}", agent, extra)
        return self.session

    def line(self, line_no: int, line: dict[str, Any]) -> None:
        kind = line.get("type")
        payload = line.get("payload")
        if "payload" not in line:  # before the envelope
            if line_no == 1 and "id" in line and "timestamp" in line and "type" not in line:
                # later lines carry no time: they take the session's start (ts_synthetic)
                self._session(line).last_ts = parse_ts(line.get("timestamp"))
                return
            if "record_type" in line:
                return
            if isinstance(kind, str) and kind in KNOWN_ITEMS:
                self._item(line_no, line, None)
                return
            self.skipped[str(kind) if kind is not None else "(no type)"] += 1
            return
        if not isinstance(payload, dict) or not isinstance(kind, str):
            self.skipped[str(kind) if isinstance(kind, str) else "(no type)"] += 1
            return
        ts = parse_ts(line.get("timestamp"))
        if kind == "session_meta":
            if self.session is None:
                self._session(payload)
            return
        if kind == "response_item":
            self._item(line_no, payload, ts)
        elif kind == "event_msg":
            self._event(line_no, payload, ts)
        elif kind not in TOP_TYPES:
            self.skipped[kind] += 1

    def _step_key(self) -> str:
        if not self.in_response:
            self.step += 1
            self.in_response = True
        return f"response-{self.step}"

    def _item(self, line_no: int, item: Mapping[str, Any], ts: Any) -> None:
        session = self._session()
        kind = item.get("type")
        if not isinstance(kind, str) or kind not in KNOWN_ITEMS:
            self.skipped[f"response_item:{kind if isinstance(kind, str) else '(no type)'}"] += 1
            return
        if kind == "message":
            role = item.get("role")
            if role == "assistant":
                session.response(self._step_key(), ts, line_no)
            elif role == "user":
                text = text_of(item.get("content")).strip()
                if text and not text.startswith(CONTEXT_PREFIXES) and not _WRAPPED_RE.match(text):
                    self.in_response = False
                    session.prompt(f"line-{line_no}", ts, line_no)
            return
        if kind == "reasoning":
            session.response(self._step_key(), ts, line_no)
        elif kind == "function_call":
            call_id = item.get("call_id") or item.get("id")
            session.call(self._step_key(), ts, line_no, str(call_id or ""), _tool_name(item, "(unnamed)"), item.get("arguments"))
        elif kind == "custom_tool_call":
            raw = item.get("input")
            call_id = item.get("call_id") or item.get("id")
            session.call(self._step_key(), ts, line_no, str(call_id or ""), _tool_name(item, "(unnamed)"), {"input": raw} if isinstance(raw, str) else raw)
        elif kind == "local_shell_call":
            call_id = item.get("call_id") or item.get("id")
            action = item.get("action")
            session.call(self._step_key(), ts, line_no, str(call_id or ""), "local_shell", action if isinstance(action, dict) else {})
        elif kind in OUTPUT_ITEMS:
            self.in_response = False
            text, is_error, error_type, code = judge_output(item.get("output"))
            extra = {"exit_code": code} if code is not None else None
            asked = session.by_id.get(str(item.get("call_id") or ""))
            if asked is not None and not asked.done and asked.name in COMMAND_TOOLS and not states_its_end(item.get("output")):
                self.unread[asked.name] += 1
            session.result(str(item.get("call_id") or ""), ts, line_no, text, is_error, error_type=error_type, extra=extra)
        # web_search_call (provider-side), ghost_snapshot, compaction: nothing to record

    def _event(self, line_no: int, event: Mapping[str, Any], ts: Any) -> None:
        session = self._session()
        kind = event.get("type")
        if kind == "user_message":
            message = event.get("message")
            text = message.strip() if isinstance(message, str) else ""
            if (text or event.get("images")) and not text.startswith(CONTEXT_PREFIXES) and not _WRAPPED_RE.match(text):
                self.in_response = False
                session.prompt(f"line-{line_no}", ts, line_no)
        elif kind == "turn_aborted":
            reason = event.get("reason") if isinstance(event.get("reason"), str) else "interrupted"
            session.end("interrupted", ts, line_no, source="turn_aborted", error_type=reason)
        elif kind == "task_complete":
            session.end("end_turn", ts, line_no, source="task_complete")
        elif kind == "error":
            message = event.get("message") if isinstance(event.get("message"), str) else None
            session.end("error", ts, line_no, source="error_event", error_type="error", error_message=message)
        elif kind == "token_count":
            info = event.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if isinstance(last, dict):
                session.add_tokens(last.get("input_tokens"), last.get("output_tokens"))


def read(path: Path, options: Mapping[str, Any]) -> Any:
    """Read one Codex rollout file into v1 records.

    Args:
        path: a ``rollout-*.jsonl`` file (gzip allowed).
        options: not used; accepted for the reader protocol.

    Returns:
        A ``ReaderOutput``: records, protocol violations, bad lines, and
        ``skipped_types``: lines of types this reader does not know, per type.
    """
    from loopscope.analyses.ingest.transcripts import BadLine, ReaderOutput

    out = ReaderOutput()
    reader = _Reader(path)
    for line_no, line in json_lines(path, out.bad, BadLine):
        reader.line(line_no, line)
    if reader.session is not None:
        records, violations = reader.session.finish()
        out.records.extend(records)
        out.violations.extend(violations)
    if reader.unread:
        # Nothing in these outputs says whether the command failed: they count as successes, and
        # zero errors would say more than the file does. Say so once per file.
        total = sum(reader.unread.values())
        tools = ", ".join(f"{name} {n}" for name, n in reader.unread.most_common())
        out.finding(
            "unread_exit_status",
            f"{path.name}: {total} output(s) of command tools ({tools}) state no exit code and no "
            "running process; they were counted as successes",
        )
    out.skipped_types.update(reader.skipped)
    return out
