"""Claude Code session transcripts (``--input-format claude-code``).

Claude Code writes one JSON Lines file per session,
``~/.claude/projects/<encoded-cwd>/<session-id>.jsonl``, and (2.1 and later) one
per subagent run, ``<session-id>/subagents/agent-<agent-id>.jsonl`` (2.0 put
``agent-<agent-id>.jsonl`` beside the session file). Each line is an object with
a ``type``:

- ``user``: ``message.content`` is the user's text, or a list of blocks where
  ``tool_result`` blocks (``tool_use_id``, ``content``, ``is_error``) answer the
  calls of the previous response;
- ``assistant``: one content block of a model response per line (streamed):
  every line of one response carries the same ``message.id``, with ``text``,
  ``thinking`` or ``tool_use`` (``id``, ``name``, ``input``) blocks, the
  ``stop_reason`` (null in most lines of 2.x) and ``usage``;
- ``result`` (``claude -p --output-format stream-json`` only): how the run ended;
- ``system``, ``summary``, ``progress``, ``file-history-snapshot``,
  ``queue-operation`` and a few more: bookkeeping, not read.

``claude -p --output-format stream-json`` (and the Claude Agent SDK's message
stream) writes the same user / assistant lines with a snake_case ``session_id``,
no times, a subagent's lines inline with ``parent_tool_use_id`` (the Task / Agent
call that started it: its own conversation ``<session>/task-<call id>``), and a
last ``result`` line: ``subtype`` ``success`` -> ``end_turn``, ``error_max_turns`` /
``error_max_budget_usd`` -> ``budget_exceeded``, another ``error_*`` (or
``is_error``) -> ``error``, for the prompt then running.

How lines become records (the rules shared with Codex are in ``_session``):

- conversation = the session: the file name's session id (a resumed session
  copies earlier lines into a new file under its new id), else the lines'
  ``sessionId``. A subagent file is its own conversation,
  ``<session-id>/agent-<agent-id>``, agent ``claude-code/subagent``, with
  ``parent_conversation_id`` (the session that started it); the parent's
  ``Task`` / ``Agent`` call that started it gets ``subagent_conversation_id``
  when its result names the agent (``toolUseResult.agentId``). Sidechain lines
  inside a session file (1.x) are grouped the same way, by ``agentId`` or by
  the first line of their chain. Compaction (``agent-acompact-*``) and
  ``Warmup`` sidechains are Claude Code's own housekeeping, not agent work:
  skipped and counted.
- prompt = a user line with content for the model: not a tool result, not
  ``isMeta`` (caveats, expanded command text), not a compaction summary
  (``isCompactSummary``), not local-command output
  (``<local-command-stdout>``...), not a message that is one ``<tag>...</tag>`` block
  (text Claude Code adds). A ``/command`` line starts a prompt only if
  the model answers it (a custom slash command); local commands (``/mcp``,
  ``/clear``) make none. ``prompt_id`` is ``line-<n>``, its line number.
- step = the response (``message.id``) the calls belong to.
- exit: ``[Request interrupted by user]`` / ``[Request interrupted by user for
  tool use]`` -> ``interrupted`` (abnormal); an API error written as a model
  response (``isApiErrorMessage``) -> ``error`` with ``error_type``
  ``api_error`` and the redacted text; else the stored ``stop_reason`` of the
  prompt's last response when it is not ``tool_use``, else ``end_turn``
  inferred when that response asked for no tool. Otherwise the prompt is open.
- ``is_error`` is the ``tool_result``'s ``is_error``; ``error_type`` is
  ``tool_use_error`` when Claude Code wrapped the text in ``<tool_use_error>``
  (its own validation and permission errors), else null.
"""

from __future__ import annotations

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

AGENT = "claude-code"
SUBAGENT = "claude-code/subagent"
# Line types the reader knows and does not need (not counted as unknown).
BOOKKEEPING = frozenset(
    {
        "system", "summary", "progress", "file-history-snapshot", "queue-operation", "custom-title",
        "ai-title", "tag", "agent-name", "last-prompt", "pr-link", "attachment", "permission-mode",
    }
)
# stream-json result subtypes that mean the run hit a limit the caller set (--max-turns, --max-budget-usd).
RESULT_BUDGETS = {"error_max_turns": "max_turns", "error_max_budget_usd": "max_budget_usd",
                  "error_max_structured_output_retries": "max_structured_output_retries"}
INTERRUPTED = ("[Request interrupted by user", "[Request interrupted by user for tool use")
NOT_PROMPTS = (
    "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>", "Caveat: The messages below",
    "<bash-stdout>", "<bash-stderr>", "<user-memory-input>",
)
COMMAND = ("<command-name>", "<command-message>")
# A message that is one tag block (<system-reminder>...</system-reminder>): text Claude Code adds.
WRAPPED_RE = re.compile(r"^<([A-Za-z_][\w-]*)>.*</\1>$", re.DOTALL)
_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_SNIFF_RE = re.compile(rb'"parentUuid"\s*:|"type"\s*:\s*"(file-history-snapshot|queue-operation)"|"leafUuid"\s*:')


INDEX_NAME = "sessions-index.json"
INDEX_SKIPPED = "sessions-index.json (Claude Code's index of sessions, not a transcript)"


def sniff(head: bytes) -> bool:
    """Whether a file starts like a Claude Code transcript (its bookkeeping keys), or is its sessions index."""
    if not head.lstrip(b"\xef\xbb\xbf").lstrip().startswith(b"{"):
        return False
    if _SNIFF_RE.search(head) or (b'"sessionId"' in head and b'"fullPath"' in head):
        return True
    objects = head_objects(head)
    if any("sessionId" in o and o.get("type") in ("user", "assistant", "system") for o in objects):
        return True
    # `claude -p --output-format stream-json` (and the Agent SDK's messages): snake_case session_id,
    # a system init line, then user / assistant lines holding an API message each, and a result line
    return any(
        "session_id" in o and (o.get("type") == "system" and o.get("subtype") == "init"
                               or o.get("type") in ("user", "assistant") and isinstance(o.get("message"), dict))
        for o in objects
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class _Reader:
    def __init__(self, path: Path, out: Any, bad_line: Any) -> None:
        self.path = path
        self.out = out
        self.bad_line = bad_line
        self.skipped: Counter[str] = Counter()
        self.sessions: dict[str, Session] = {}
        self.order: list[str] = []
        self.seen_uuids: set[str] = set()
        self.chain_root: dict[str, str] = {}  # sidechain line uuid -> its chain's key
        self.awaiting: dict[str, tuple[str, Any, int] | None] = {}  # a /command waiting for an answer
        self.file_session = path.name.split(".")[0] if _UUID_RE.match(path.name.split(".")[0]) else None
        self.in_subagents = path.parent.name == "subagents" or path.name.startswith("agent-")
        self.main_id: str | None = None
        self.skip_keys: set[str] = set()  # conversations found to be housekeeping (compaction, warmup)

    # -- which conversation --------------------------------------------
    def _session(self, key: str, agent: str, extra: dict[str, Any] | None = None) -> Session:
        session = self.sessions.get(key)
        if session is None:
            session = Session(key, agent, extra)
            self.sessions[key] = session
            self.order.append(key)
        return session

    def _main_key(self, line: Mapping[str, Any]) -> str:
        if self.main_id is None:
            self.main_id = (self.file_session or _str(line.get("sessionId")) or _str(line.get("session_id"))
                            or f"{self.path.parent.name}/{self.path.name}")
        return self.main_id

    def _conversation(self, line: Mapping[str, Any]) -> Session | None:
        """The conversation a user/assistant line belongs to (None: housekeeping, skipped)."""
        agent_id = _str(line.get("agentId"))
        task = _str(line.get("parent_tool_use_id"))
        if task is not None:
            # stream-json: a subagent's messages come inline, naming the Task / Agent call that started it
            main = self._main_key(line)
            key = f"{main}/task-{task}"
            if key not in self.sessions:
                self._session(main, AGENT).annotate_call(task, {"subagent_conversation_id": key})
            return self._session(key, SUBAGENT, {"parent_conversation_id": main})
        sidechain = line.get("isSidechain") is True or (self.in_subagents and agent_id is not None)
        if not sidechain:
            return self._session(self._main_key(line), AGENT)
        parent = _str(line.get("sessionId")) or (self.path.parent.parent.name if self.in_subagents else None)
        uuid = _str(line.get("uuid"))
        if agent_id is not None:
            chain = f"agent-{agent_id}"
        else:
            parent_uuid = _str(line.get("parentUuid"))
            chain = self.chain_root.get(parent_uuid or "") or f"sidechain-{uuid or len(self.chain_root)}"
        if uuid:
            self.chain_root[uuid] = chain
        key = f"{parent}/{chain}" if parent else chain
        if key in self.skip_keys:
            return None
        if key not in self.sessions:
            if (agent_id or "").startswith("acompact") or self._is_warmup(line):
                self.skip_keys.add(key)
                return None
            extra = {"parent_conversation_id": parent} if parent else {}
            return self._session(key, SUBAGENT, extra)
        return self.sessions[key]

    @staticmethod
    def _is_warmup(line: Mapping[str, Any]) -> bool:
        message = line.get("message")
        return (
            line.get("type") == "user"
            and isinstance(message, dict)
            and text_of(message.get("content")).strip() == "Warmup"
        )

    # -- lines -----------------------------------------------------------
    def line(self, line_no: int, line: dict[str, Any]) -> None:
        kind = line.get("type")
        if not isinstance(kind, str):
            self.skipped["(no type)"] += 1
            return
        if kind == "result":
            self._result(line_no, line)
            return
        if kind not in ("user", "assistant"):
            if kind not in BOOKKEEPING:
                self.skipped[kind] += 1
            return
        uuid = _str(line.get("uuid"))
        if uuid is not None:
            if uuid in self.seen_uuids:  # the same line written twice (resume, a write retried)
                self.skipped["duplicate line (same uuid)"] += 1
                return
            self.seen_uuids.add(uuid)
        message = line.get("message")
        if not isinstance(message, dict):
            self.out.bad.append(self.bad_line(line_no, f"a {kind!r} line without a message object", ""))
            return
        session = self._conversation(line)
        if session is None:
            self.skipped["housekeeping sidechain (compaction, warmup)"] += 1
            return
        ts = parse_ts(line.get("timestamp"))
        if kind == "assistant":
            self._assistant(session, line_no, line, message, ts)
        else:
            self._user(session, line_no, line, message, ts)

    def _result(self, line_no: int, line: Mapping[str, Any]) -> None:
        """stream-json's last line: how the run ended (``subtype``), for the main conversation's current prompt."""
        subtype = _str(line.get("subtype")) or "success"
        session = self._session(self._main_key(line), AGENT)
        ts = parse_ts(line.get("timestamp"))
        if subtype == "success" and line.get("is_error") is not True:
            session.end("end_turn", ts, line_no, source="result")
        elif subtype in RESULT_BUDGETS:
            session.end("budget_exceeded", ts, line_no, source="result", error_type=RESULT_BUDGETS[subtype])
        else:
            message = line.get("result") if isinstance(line.get("result"), str) else None
            session.end("error", ts, line_no, source="result", error_type=subtype if subtype != "success" else "result_error",
                        error_message=message)

    def _assistant(self, session: Session, line_no: int, line: Mapping[str, Any], message: Mapping[str, Any], ts: Any) -> None:
        waiting = self.awaiting.pop(session.conversation_id, None)
        if waiting is not None:  # a /command the model answers: it was the prompt
            session.prompt(waiting[0], waiting[1], waiting[2])
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if line.get("isApiErrorMessage") is True:
            session.end("error", ts, line_no, source="api_error", error_type="api_error", error_message=text_of(content) or None)
            return
        step_key = _str(message.get("id")) or _str(line.get("requestId")) or f"line-{line_no}"
        usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
        stop = _str(message.get("stop_reason"))
        session.response(step_key, ts, line_no, stop_reason=stop, input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"))
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                name = _str(block.get("name")) or "(unnamed)"
                call_id = block.get("id")
                session.call(step_key, ts, line_no, str(call_id) if call_id is not None else "", name, block.get("input"))

    def _user(self, session: Session, line_no: int, line: Mapping[str, Any], message: Mapping[str, Any], ts: Any) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for block in results:
            call_id = block.get("tool_use_id")
            text = text_of(block.get("content"))
            is_error = block.get("is_error") is True
            error_type = "tool_use_error" if is_error and text.lstrip().startswith("<tool_use_error>") else None
            session.result(str(call_id) if call_id is not None else "", ts, line_no, text, is_error, error_type=error_type)
            tur = line.get("toolUseResult")
            agent_id = tur.get("agentId") if isinstance(tur, dict) else None
            if isinstance(agent_id, str) and agent_id and len(results) == 1 and call_id is not None:
                session.annotate_call(str(call_id), {"subagent_conversation_id": f"{session.conversation_id}/agent-{agent_id}"})
        text = "\n".join(
            [content] if isinstance(content, str) else [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
        ).strip()
        has_media = any(isinstance(b, dict) and b.get("type") in ("image", "document") for b in blocks)
        if not text and not has_media:
            return
        if text.startswith(INTERRUPTED):
            session.end("interrupted", ts, line_no, source="interrupted_by_user", error_type="interrupted_by_user")
            return
        if line.get("isMeta") is True or line.get("isCompactSummary") is True or line.get("isVisibleInTranscriptOnly") is True:
            return
        if text.startswith(NOT_PROMPTS):
            return
        if text.startswith(COMMAND):
            self.awaiting[session.conversation_id] = (f"line-{line_no}", ts, line_no)
            return
        if WRAPPED_RE.match(text):
            return
        self.awaiting.pop(session.conversation_id, None)
        session.prompt(f"line-{line_no}", ts, line_no)


def read(path: Path, options: Mapping[str, Any]) -> Any:
    """Read one Claude Code transcript file into v1 records.

    Args:
        path: a session or subagent ``.jsonl`` file (gzip allowed).
        options: not used (the format has no options); accepted for the reader protocol.

    Returns:
        A ``ReaderOutput``: records, protocol violations, bad lines, and
        ``skipped_types``: lines of types this reader does not know, per type.
    """
    from loopscope.analyses.ingest.transcripts import BadLine, ReaderOutput

    out = ReaderOutput()
    if path.name == INDEX_NAME:  # found when a whole ~/.claude/projects is loaded: nothing to read
        out.skipped_types[INDEX_SKIPPED] = 1
        return out
    reader = _Reader(path, out, BadLine)
    for line_no, line in json_lines(path, out.bad, BadLine):
        reader.line(line_no, line)
    for key in reader.order:
        records, violations = reader.sessions[key].finish()
        out.records.extend(records)
        out.violations.extend(violations)
    out.skipped_types.update(reader.skipped)
    return out
