"""Triage of one conversation: its timeline and its first unrecovered error.

Seed 001's runbook (pull the conversation, find the first tool result with
``is_error`` the model failed to recover from, read its message) as one call:
``triage(con, conversation_id)`` returns the conversation as prompts -> steps
-> tool calls (with outcome, attempts, latency, error class, replay flag) and
the loop exit of each prompt, the retry loops, replays and duplicate
executions found in it, and the first unrecovered error with the previous
attempts at the same tool and fingerprint and a seed-000-style
``[Error Recovery Context]`` block whose suggestions come from the static
catalog in ``hints`` (the one the error-message lint uses).

Prompts are in prompt order (first ``ts``, then first ``seq``); tool calls
inside a prompt by step, then ``ts``, then ``seq``.
"""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass, field
from typing import Any

import duckdb

from loopscope.analyses import hints, incidents, loops, recovery
from loopscope.analyses.errors import UnknownConversation
from loopscope.analyses.rows import fetch_dicts as _rows
from loopscope.analyses.rows import class_dict, json_object
from loopscope.analyses.selection import Selection
from loopscope.analyses.store.freshness import checked_once
from loopscope.analyses.store.relations import conversation_relations, conversation_set_relations, relations
from loopscope.collectors.history import without_error_label

# {prompts}: store.relations (the facts when fresh, else the view), here and in RECENT_CONVERSATIONS_SQL.
CONVERSATION_EXISTS_SQL = "SELECT count(*) FROM {prompts} WHERE conversation_id = ?"
# Conversations whose id starts with what the user typed (a UUID's first 8 characters), one past
# the number listed, so "and more" is known without counting them all.
PREFIX_MATCHES_SQL = """
SELECT DISTINCT conversation_id FROM (
    SELECT conversation_id FROM tool_calls WHERE substr(conversation_id, 1, ?) = ?
    UNION ALL
    SELECT conversation_id FROM loop_exits WHERE substr(conversation_id, 1, ?) = ?
) AS ids ORDER BY conversation_id LIMIT ?
"""
PREFIX_CANDIDATES_SHOWN = 10
# Candidates for "did you mean": the most recently active conversations.
RECENT_CONVERSATIONS_SQL = """
SELECT conversation_id FROM {prompts}
GROUP BY conversation_id
ORDER BY max(last_ts) DESC, conversation_id
LIMIT ?
"""
# prompts_v itself: the timeline shows the exit's columns (steps, tokens, duration, exit error), which
# prompt_facts does not keep.
CONVERSATION_PROMPTS_SQL = """
SELECT * FROM prompts_v
WHERE conversation_id = ?
ORDER BY first_ts, first_seq, prompt_id
"""
# Every record of the conversation, with its error class when it is an error.
# {tool_calls} / {errors}: store.relations.conversation_relations (this conversation's rows of
# tool_calls_v and errors_v: of the facts when fresh, else computed from its records only).
CONVERSATION_TOOL_CALLS_SQL = """
SELECT t.*, e.error_class, e.resolved_in_prompt
FROM {tool_calls} t
LEFT JOIN (
    SELECT seq, error_class, resolved_in_prompt FROM {errors} WHERE conversation_id = $conversation_id
) e ON e.seq = t.seq
WHERE t.conversation_id = $conversation_id
ORDER BY t.prompt_id, t.step, t.ts, t.seq
"""

# The same for several conversations at once ({tool_calls} / {errors} / {prompts}: their rows,
# store.relations.conversation_set_relations), by conversation, each in the orders above.
CONVERSATIONS_TOOL_CALLS_SQL = """
SELECT t.*, e.error_class, e.resolved_in_prompt
FROM {tool_calls} t
LEFT JOIN (SELECT seq, error_class, resolved_in_prompt FROM {errors}) e ON e.seq = t.seq
ORDER BY t.conversation_id, t.prompt_id, t.step, t.ts, t.seq
"""
CONVERSATIONS_PROMPTS_SQL = """
SELECT * FROM {prompts}
ORDER BY conversation_id, first_ts, first_seq, prompt_id
"""

_CANDIDATE_LIMIT = 20_000
_ATTEMPT_MESSAGE_CHARS = 160


@dataclass(frozen=True)
class ToolCallEntry:
    """One tool call in the timeline."""

    tool_call_id: str
    tool_name: str
    step: int
    ts: dt.datetime
    outcome: str
    is_error: bool
    attempts: int
    latency_ms: float | None
    error_type: str | None
    error_message: str | None
    error_class: str | None
    is_replay: bool
    replayed: bool
    args_fingerprint: str | None
    first_unrecovered: bool = False
    resolved_in_prompt: str | None = None
    is_id_collision: bool = False

    @property
    def resolved_later(self) -> bool:
        """An unrecovered error that a later prompt resolved (the same tool succeeded there)."""
        return self.resolved_in_prompt is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (``class`` is the error class, null unless an error)."""
        return {**class_dict(self), "resolved_later": self.resolved_later}


@dataclass(frozen=True)
class LoopExit:
    """How a prompt's agent loop ended."""

    exit_reason: str
    normal: bool
    ts: dt.datetime
    steps: int | None
    tool_calls: int | None
    max_tool_calls: int | None
    duration_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    error_type: str | None
    error_message: str | None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class PromptEntry:
    """One prompt of the conversation: its steps and its exit (None while open)."""

    prompt_id: str
    first_ts: dt.datetime
    agent: str
    tags: dict[str, Any] | None
    n_tool_calls: int
    steps: list[tuple[int, list[ToolCallEntry]]]
    loop_exit: LoopExit | None

    @property
    def is_open(self) -> bool:
        """No loop_exit was logged (the process died, or the prompt is still running)."""
        return self.loop_exit is None

    @property
    def tool_calls(self) -> list[ToolCallEntry]:
        """Every tool call of the prompt, in order."""
        return [call for _, calls in self.steps for call in calls]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "prompt_id": self.prompt_id,
            "first_ts": self.first_ts,
            "agent": self.agent,
            "tags": self.tags,
            "n_tool_calls": self.n_tool_calls,
            "is_open": self.is_open,
            "steps": [{"step": step, "tool_calls": [c.to_dict() for c in calls]} for step, calls in self.steps],
            "loop_exit": self.loop_exit.to_dict() if self.loop_exit else None,
        }


@dataclass(frozen=True)
class Triage:
    """Everything ``loopscope triage`` shows about one conversation."""

    conversation_id: str
    prompts: list[PromptEntry]
    first_unrecovered: recovery.UnrecoveredError | None
    recovery_context: str | None
    suggestions: list[str]
    recovery_pattern: str | None
    retry_loops: list[incidents.RetryLoop] = field(default_factory=list)
    replays: list[incidents.Replay] = field(default_factory=list)
    duplicate_executions: list[incidents.DuplicateExecution] = field(default_factory=list)
    no_progress_loops: list[loops.NoProgressLoop] = field(default_factory=list)
    cycles: list[loops.Cycle] = field(default_factory=list)

    def class_counts(self) -> dict[str, int]:
        """Errors per class over the whole conversation (classes with none included)."""
        counts = {c: 0 for c in recovery.ERROR_CLASSES}
        for prompt in self.prompts:
            for call in prompt.tool_calls:
                if call.error_class:
                    counts[call.error_class] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``loopscope triage --format json``."""
        first = None
        if self.first_unrecovered is not None:
            first = self.first_unrecovered.to_dict()
            first["recovery_pattern"] = self.recovery_pattern
            first["suggestions"] = list(self.suggestions)
            first["recovery_context"] = self.recovery_context
        return {
            "conversation_id": self.conversation_id,
            "prompts": [p.to_dict() for p in self.prompts],
            "first_unrecovered": first,
            "error_classes": self.class_counts(),
            "retry_loops": [r.to_dict() for r in self.retry_loops],
            "replays": [r.to_dict() for r in self.replays],
            "duplicate_executions": [d.to_dict() for d in self.duplicate_executions],
            "no_progress_loops": [r.to_dict() for r in self.no_progress_loops],
            "cycles": [c.to_dict() for c in self.cycles],
        }


def _by_prefix(con: duckdb.DuckDBPyConnection, prefix: str) -> str | None:
    """The one conversation whose id starts with ``prefix``; None when none does.

    Raises:
        UnknownConversation: several ids start with it (the message lists them).
    """
    if not prefix:
        return None
    n = len(prefix)
    found = [r[0] for r in con.execute(PREFIX_MATCHES_SQL, [n, prefix, n, prefix, PREFIX_CANDIDATES_SHOWN + 1]).fetchall()]
    if len(found) == 1:
        return str(found[0])
    if not found:
        return None
    shown = found[:PREFIX_CANDIDATES_SHOWN]
    many = f"more than {len(shown)}" if len(found) > PREFIX_CANDIDATES_SHOWN else str(len(shown))
    raise UnknownConversation(
        f"{prefix!r} is the start of {many} conversation ids: " + ", ".join(repr(c) for c in shown),
        hint="give more of the id, enough for one conversation",
    )


def unknown_conversation(con: duckdb.DuckDBPyConnection, conversation_id: str) -> UnknownConversation:
    """The error for an id that is not in the store, with the closest ids as a hint."""
    sql = RECENT_CONVERSATIONS_SQL.format(prompts=relations(con).prompts)
    candidates = [r[0] for r in con.execute(sql, [_CANDIDATE_LIMIT]).fetchall()]
    if not candidates:
        return UnknownConversation(
            f"conversation {conversation_id!r} is not in the database: it holds no records",
            hint="load logs first (loopscope load PATH), or name them after the id: loopscope triage ID PATH...",
        )
    close = difflib.get_close_matches(conversation_id, candidates, n=3, cutoff=0.6)
    if close:
        hint = "did you mean " + " or ".join(repr(c) for c in close) + "?"
    else:
        hint = "list conversations with an unrecovered error with: loopscope unrecovered"
    return UnknownConversation(f"conversation {conversation_id!r} is not in the database", hint=hint)


def _call_entry(row: dict[str, Any], first_id: tuple[str, int] | None) -> ToolCallEntry:
    return ToolCallEntry(
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        step=row["step"],
        ts=row["ts"],
        outcome=row["outcome"],
        is_error=row["is_error"],
        attempts=row["attempts"],
        latency_ms=row["latency_ms"],
        error_type=row["error_type"],
        error_message=row["error_message"],
        error_class=row["error_class"],
        is_replay=row["is_replay"],
        replayed=row["replayed"],
        args_fingerprint=row["args_fingerprint"],
        first_unrecovered=first_id is not None and (row["prompt_id"], row["seq"]) == first_id,
        resolved_in_prompt=row["resolved_in_prompt"],
        is_id_collision=row["is_id_collision"],
    )


def _loop_exit(p: dict[str, Any]) -> LoopExit | None:
    if p["is_open"]:
        return None
    return LoopExit(
        exit_reason=p["exit_reason"],
        normal=p["normal_exit"],
        ts=p["exit_ts"],
        steps=p["steps"],
        tool_calls=p["n_tool_calls"],
        max_tool_calls=p["max_tool_calls"],
        duration_ms=p["duration_ms"],
        input_tokens=p["input_tokens"],
        output_tokens=p["output_tokens"],
        error_type=p["exit_error_type"],
        error_message=p["exit_error_message"],
    )


def _operation(tool_name: str, input_shape: dict[str, str] | None) -> str:
    # Only argument names are logged (never values), so the operation shows those.
    args = ", ".join(input_shape) if input_shape else "..."
    return f"{tool_name}({args})"


def _one_line(text: str | None, limit: int = _ATTEMPT_MESSAGE_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def recovery_context(error: recovery.UnrecoveredError, suggestions: list[str]) -> str:
    """The seed-000 ``[Error Recovery Context]`` block for an error.

    It is what a harness could have injected right after the failing call:
    the operation, the error the model saw, what was already tried at the same
    tool and fingerprint in this conversation, and the catalog's suggestions.
    """
    lines = [
        "[Error Recovery Context]",
        f"Operation: {_operation(error.tool_name, error.input_shape)}",
        f"Error: {without_error_label(_one_line(error.error_message, 2000)) or '(no message)'}",
    ]
    if error.error_type:
        lines.append(f"Error type: {error.error_type}")
    lines += ["", f"Previous attempts (this conversation): {len(error.previous_attempts)}"]
    for i, attempt in enumerate(error.previous_attempts, 1):
        if attempt.is_error:
            result = _one_line(attempt.error_message) or attempt.outcome
        else:
            result = "ok" if attempt.outcome == "ok" else f"ok ({attempt.outcome})"
        replay = ", replay" if attempt.is_replay else ""
        lines.append(
            f"  {i}. {attempt.tool_name}(same arguments) [prompt {attempt.prompt_id}, step {attempt.step}{replay}] → {result}"
        )
    lines += ["", "Recovery suggestions:", *(f"  - {s}" for s in suggestions)]
    return "\n".join(lines)


def conversation_prompts(
    con: duckdb.DuckDBPyConnection, conversation_id: str, first: recovery.UnrecoveredError | None
) -> list[PromptEntry]:
    """One conversation's prompts with their tool calls by step (the timeline); ``first`` marks its first unrecovered error."""
    one = conversation_relations(con)
    calls_sql = CONVERSATION_TOOL_CALLS_SQL.format(tool_calls=one.tool_calls, errors=one.errors)
    calls = _rows(con.execute(calls_sql, {"conversation_id": conversation_id}))
    return _prompt_entries(_rows(con.execute(CONVERSATION_PROMPTS_SQL, [conversation_id])), calls, first)


def _prompt_entries(
    prompt_rows: list[dict[str, Any]], call_rows: list[dict[str, Any]], first: recovery.UnrecoveredError | None
) -> list[PromptEntry]:
    """One conversation's prompt entries from its ``prompts_v`` rows and its calls (with their error class), both in order."""
    first_key = (first.prompt_id, first.seq) if first is not None else None
    calls_by_prompt: dict[str, list[dict[str, Any]]] = {}
    for row in call_rows:
        calls_by_prompt.setdefault(row["prompt_id"], []).append(row)
    prompts = []
    for p in prompt_rows:
        steps: dict[int, list[ToolCallEntry]] = {}
        for row in calls_by_prompt.get(p["prompt_id"], []):
            entry = _call_entry(row, first_key)
            steps.setdefault(entry.step, []).append(entry)
        prompts.append(
            PromptEntry(
                prompt_id=p["prompt_id"],
                first_ts=p["first_ts"],
                agent=p["agent"],
                tags=json_object(p["tags"]),
                n_tool_calls=p["n_tool_calls"],
                steps=sorted(steps.items()),
                loop_exit=_loop_exit(p),
            )
        )
    return prompts


def _timeline(first: recovery.UnrecoveredError | None, prompts: list[PromptEntry]) -> dict[str, Any]:
    return {
        "first_unrecovered": first.to_dict() if first is not None else None,
        "prompts": [p.to_dict() for p in prompts],
    }


def timelines(con: duckdb.DuckDBPyConnection, conversation_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The timeline of each conversation (its prompts and first unrecovered error), as plain data, in the given order.

    What a report that lists conversations embeds so every listed one can be read in place
    (the audit's HTML page); the incident analyses of ``triage`` are left out. The same data
    as ``triage`` gives for each (``timelines_one_by_one``), from one set of queries for all
    of them (``store.relations.conversation_set_relations``), not one set per conversation.
    """
    ids = list(dict.fromkeys(conversation_ids))
    if not ids:
        return {}
    if not getattr(con, "materialises_facts", True):  # a ClickHouse store: no temporary tables there
        return timelines_one_by_one(con, ids)
    with conversation_set_relations(con, ids) as rel:
        firsts = recovery.first_unrecovered_each(con, rel)
        calls: dict[str, list[dict[str, Any]]] = {}
        for row in _rows(con.execute(CONVERSATIONS_TOOL_CALLS_SQL.format(tool_calls=rel.tool_calls, errors=rel.errors))):
            calls.setdefault(row["conversation_id"], []).append(row)
        prompts: dict[str, list[dict[str, Any]]] = {}
        for row in _rows(con.execute(CONVERSATIONS_PROMPTS_SQL.format(prompts=rel.prompts))):
            prompts.setdefault(row["conversation_id"], []).append(row)
    out: dict[str, dict[str, Any]] = {}
    for cid in ids:
        first = firsts.get(cid)
        out[cid] = _timeline(first, _prompt_entries(prompts.get(cid, []), calls.get(cid, []), first))
    return out


def timelines_one_by_one(con: duckdb.DuckDBPyConnection, conversation_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``timelines`` with one set of queries per conversation (``triage``'s own; any store)."""
    out: dict[str, dict[str, Any]] = {}
    for cid in dict.fromkeys(conversation_ids):
        first = recovery.first_unrecovered(con, cid)
        out[cid] = _timeline(first, conversation_prompts(con, cid, first))
    return out


def triage(con: duckdb.DuckDBPyConnection, conversation_id: str, *, files_loaded: int | None = None) -> Triage:
    """Pull one conversation and find its first unrecovered error.

    Args:
        con: an open store.
        conversation_id: the conversation to triage: its id, or the start of
            exactly one conversation's id (a UUID's first 8 characters).
        files_loaded: how many log files the caller has just loaded for this
            triage (None when it loaded none); 0 changes the hint of an
            unknown id to "the PATHs hold no log file".

    Raises:
        UnknownConversation: the id is not in the store (the hint names the
            closest ids, or how to list conversations), or it is the start of
            several ids (the message lists them).
    """
    with checked_once(con):  # the facts' freshness is checked once for all of triage's queries
        return _triage(con, conversation_id, files_loaded)


def _triage(con: duckdb.DuckDBPyConnection, conversation_id: str, files_loaded: int | None) -> Triage:
    exists_sql = CONVERSATION_EXISTS_SQL.format(prompts=relations(con).prompts)
    exists = con.execute(exists_sql, [conversation_id]).fetchone()[0]
    if not exists:
        conversation_id = _by_prefix(con, conversation_id) or conversation_id
        exists = con.execute(exists_sql, [conversation_id]).fetchone()[0]
    if not exists:
        unknown = unknown_conversation(con, conversation_id)
        if files_loaded == 0:
            # The store's hint ("load logs first") would send the user in a circle.
            raise UnknownConversation(
                unknown.message,
                hint="the PATHs hold no log file loopscope reads (*.jsonl, *.ndjson, *.json, .gz, rotated .1); "
                "check them with: loopscope load PATH",
            )
        raise unknown
    first = recovery.first_unrecovered(con, conversation_id)
    prompts = conversation_prompts(con, conversation_id, first)
    suggestions: list[str] = []
    context = pattern = None
    if first is not None:
        suggestions = hints.suggestions_for(first.error_type, first.error_message, first.tool_name)
        pattern = hints.recovery_pattern(first.error_type, first.error_message)
        context = recovery_context(first, suggestions)
    only = Selection(conversation_ids=(conversation_id,))
    return Triage(
        conversation_id=conversation_id,
        prompts=prompts,
        first_unrecovered=first,
        recovery_context=context,
        suggestions=suggestions,
        recovery_pattern=pattern,
        retry_loops=incidents.retry_loops(con, only),
        replays=incidents.replays(con, only),
        duplicate_executions=incidents.duplicate_executions(con, only),
        no_progress_loops=loops.no_progress_loops(con, only),
        cycles=loops.cycles(con, only),
    )
