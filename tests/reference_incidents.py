"""Plain-Python reference for the incident analyses, for property tests.

Extends tests/reference.py (replays, prompts, error classes, first
unrecovered error) with what triage adds on top: previous attempts, retry
loops, replays with their kind, and duplicate executions by fingerprint.
Written from docs/records.md and docs/triage.md without looking at the SQL.

Input everywhere: ``records``, valid v1 record dicts **in input order**.
Positions (``pos``) are indexes into ``records``.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_NAME = "loopscope_test_reference"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).parent / "reference.py")
    assert _spec and _spec.loader
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)
reference = sys.modules[_NAME]

Records = Sequence[Mapping[str, Any]]


def conversation_order(records: Records) -> dict[int, tuple[dt.datetime, int, int, dt.datetime, int]]:
    """For each tool_call position: its place in its conversation.

    Prompt order (the prompt's first ``ts``, then its first position), then
    step, then ``ts``, then position.
    """
    ps = reference.prompts(records)
    out = {}
    for i, r in enumerate(records):
        if r["kind"] != "tool_call":
            continue
        p = ps[(r["conversation_id"], r["prompt_id"])]
        out[i] = (p.first_ts, p.first_pos, r["step"], reference.parse_ts(r["ts"]), i)
    return out


def previous_attempts(records: Records, error_pos: int) -> list[int]:
    """Earlier tool calls of the conversation at the same tool and fingerprint.

    Without a fingerprint: earlier calls with no fingerprint and the same
    error message. Successes, errors and replays all count. In conversation order.
    """
    order = conversation_order(records)
    e = records[error_pos]
    fp = e.get("args_fingerprint")

    def same(r: Mapping[str, Any]) -> bool:
        if fp is None:
            return r.get("args_fingerprint") is None and r.get("error_message") == e.get("error_message")
        return r.get("args_fingerprint") == fp

    hits = [
        i for i, r in enumerate(records)
        if r["kind"] == "tool_call" and r["conversation_id"] == e["conversation_id"]
        and r["tool_name"] == e["tool_name"] and same(r) and order[i] < order[error_pos]
    ]
    return sorted(hits, key=lambda i: order[i])


def retry_loops(records: Records) -> dict[tuple[Any, ...], list[int]]:
    """Retry loops: key (conversation, prompt, tool, fingerprint, message-if-no-fingerprint) -> positions.

    Three or more ``is_error`` tool calls in one prompt with the same tool and
    fingerprint (when the fingerprint is null: the same error message).
    Positions are ordered by ``ts``, then position.
    """
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(records):
        if r["kind"] != "tool_call" or not r["is_error"]:
            continue
        fp = r.get("args_fingerprint")
        key = (r["conversation_id"], r["prompt_id"], r["tool_name"], fp, r.get("error_message") if fp is None else None)
        groups.setdefault(key, []).append(i)
    return {
        k: sorted(v, key=lambda i: (reference.parse_ts(records[i]["ts"]), i))
        for k, v in groups.items() if len(v) >= 3
    }


def replays(records: Records) -> dict[int, str]:
    """Every replay position -> ``short_circuited`` (flagged ``replayed``) or ``double_execution``."""
    flags = reference.replay_flags(records)
    return {
        i: "short_circuited" if records[i].get("replayed", False) else "double_execution"
        for i, f in enumerate(flags) if f
    }


def duplicate_executions(records: Records) -> dict[tuple[str, str, str, str], tuple[str, list[str]]]:
    """(conversation, prompt, tool, fingerprint) -> (original tool_call_id, duplicate tool_call_ids).

    The original is the first successful, non-replay call of that tool and
    non-null fingerprint in the prompt (by ``ts``, then position); duplicates
    are the later calls with the same tool and fingerprint, another
    ``tool_call_id``, and not flagged ``replayed``.
    """
    flags = reference.replay_flags(records)

    def when(i: int) -> tuple[dt.datetime, int]:
        return (reference.parse_ts(records[i]["ts"]), i)

    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for i, r in enumerate(records):
        if r["kind"] == "tool_call" and r.get("args_fingerprint") is not None:
            key = (r["conversation_id"], r["prompt_id"], r["tool_name"], r["args_fingerprint"])
            groups.setdefault(key, []).append(i)
    out = {}
    for key, members in groups.items():
        ok = [i for i in members if not records[i]["is_error"] and not flags[i]]
        if not ok:
            continue
        first = min(ok, key=when)
        original = records[first]["tool_call_id"]
        dups = sorted(
            (i for i in members
             if when(i) > when(first) and records[i]["tool_call_id"] != original and not records[i].get("replayed", False)),
            key=when,
        )
        if dups:
            out[key] = (original, [records[i]["tool_call_id"] for i in dups])
    return out
