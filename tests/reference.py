"""A plain-Python reference for the normative definitions, for property tests.

Written from docs/records.md ("The four dashboard metrics", "Incident
analysis") without looking at the SQL, so that tests can check the DuckDB
views and queries against it on random record sets. Nothing here is fast;
everything here is meant to be obviously right.

Input everywhere: ``records``, a sequence of v1 records (dicts, as written in
the JSONL files) **in input order** (files in load order, then line order).
That order is the "position in the input" that breaks ``ts`` ties. Only valid
records belong here: the caller leaves out lines the loader quarantines.

Public functions:

- ``parse_ts(text)``: an RFC 3339 timestamp -> naive UTC datetime.
- ``replay_flags(records)``: is each record a replay (None for loop exits).
- ``collision_flags(records)``: is each record an id collision (None for loop exits).
- ``prompts(records)``: one ``Prompt`` per (conversation_id, prompt_id).
- ``errors(records)``: every error with its class (recovered/open/aborted/gave_up)
  and whether a later prompt resolved it (``resolved_later``).
- ``metrics(records, keep=None)``: the four metrics and their counts.
- ``first_unrecovered_error(records, conversation_id)``: the incident's start.
- ``quantile(values, q)``: linear interpolation between closest ranks.

How a prompt's agent is chosen is not fixed by the spec; like loopscope, the
reference takes the agent of the prompt's ``loop_exit`` when there is one,
else of its first record (by ts, then input position).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NORMAL_EXITS = frozenset({"end_turn", "stop_sequence"})
SCRATCHPAD = frozenset({"think"})
"""The default scratchpad tools: a success of theirs never recovers an error."""

_TS_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})?$"
)

PromptKey = tuple[str, str]


def parse_ts(text: str) -> dt.datetime:
    """Parse an RFC 3339 timestamp into a naive UTC datetime.

    Any number of fraction digits is accepted; digits past microseconds are
    dropped (truncated). ``Z``/``z`` and ``+HH:MM``/``-HH:MM`` offsets are
    applied; a timestamp without an offset is taken as UTC.

    Raises:
        ValueError: not an RFC 3339 timestamp.
    """
    m = _TS_RE.match(text)
    if not m:
        raise ValueError(f"not RFC 3339: {text!r}")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "")[:6].ljust(6, "0")
    value = dt.datetime(year, month, day, hour, minute, second, int(frac))
    tz = m.group(8)
    if tz and tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        value -= sign * dt.timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6]))
    return value


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile with linear interpolation between closest ranks (numpy's default).

    For sorted values x[0..n-1], position h = (n - 1) * q; the result is
    x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]). None for
    no values.
    """
    if not values:
        return None
    xs = sorted(values)
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def _order_key(records: Sequence[Mapping[str, Any]], i: int) -> tuple[dt.datetime, int]:
    return (parse_ts(records[i]["ts"]), i)


def _same_call(r: Mapping[str, Any]) -> tuple[str, str, str, str | None]:
    return (r["conversation_id"], r["tool_call_id"], r["tool_name"], r.get("args_fingerprint"))


def _calls_in_order(records: Sequence[Mapping[str, Any]]) -> list[int]:
    calls = [i for i, r in enumerate(records) if r["kind"] == "tool_call"]
    calls.sort(key=lambda i: _order_key(records, i))
    return calls


def replay_flags(records: Sequence[Mapping[str, Any]]) -> list[bool | None]:
    """For each record: True/False for a ``tool_call`` (is it a replay?), None otherwise.

    A replay is a ``tool_call`` that has ``replayed: true``, or whose
    ``tool_call_id`` already appeared in an earlier ``tool_call`` of the same
    conversation (ordered by ``ts``, then input position) for the same call:
    the same ``tool_name`` and ``args_fingerprint`` (two nulls are the same).
    """
    flags: list[bool | None] = [None] * len(records)
    seen: set[tuple[str, str, str, str | None]] = set()
    for i in _calls_in_order(records):
        r = records[i]
        flags[i] = _same_call(r) in seen or bool(r.get("replayed", False))
        seen.add(_same_call(r))
    return flags


def collision_flags(records: Sequence[Mapping[str, Any]]) -> list[bool | None]:
    """For each ``tool_call``: is it an id collision (its id used earlier in the conversation by another call)?

    Not a replay (neither flagged ``replayed`` nor a repeat of the same call),
    and its ``tool_call_id`` appeared earlier in the conversation.
    """
    replays = replay_flags(records)
    flags: list[bool | None] = [None] * len(records)
    ids: set[tuple[str, str]] = set()
    for i in _calls_in_order(records):
        r = records[i]
        key = (r["conversation_id"], r["tool_call_id"])
        flags[i] = key in ids and not replays[i]
        ids.add(key)
    return flags


@dataclass
class Prompt:
    """One prompt as the metrics see it.

    Attributes:
        key: (conversation_id, prompt_id).
        first_ts: the earliest ``ts`` of its records (naive UTC).
        first_pos: input position of its first record (by ts, then position).
        agent: the exit's agent, else the first record's (``default`` if unset).
        n_tool_calls: its ``tool_call`` records, replays included.
        exit_reason: reason of its ``loop_exit`` (the last by ts, position), None when open.
        calls: input positions of its ``tool_call`` records.
    """

    key: PromptKey
    first_ts: dt.datetime
    first_pos: int
    agent: str
    n_tool_calls: int = 0
    exit_reason: str | None = None
    calls: list[int] = field(default_factory=list)

    @property
    def is_open(self) -> bool:
        """No ``loop_exit`` was logged (the process died first, or is still running)."""
        return self.exit_reason is None

    @property
    def normal_exit(self) -> bool:
        """The exit is ``end_turn`` or ``stop_sequence``."""
        return self.exit_reason in NORMAL_EXITS


def prompts(records: Sequence[Mapping[str, Any]]) -> dict[PromptKey, Prompt]:
    """Every prompt that appears in any record, keyed by (conversation_id, prompt_id)."""
    order = sorted(range(len(records)), key=lambda i: _order_key(records, i))
    result: dict[PromptKey, Prompt] = {}
    last_exit: dict[PromptKey, int] = {}
    for i in order:
        r = records[i]
        key = (r["conversation_id"], r["prompt_id"])
        if key not in result:
            result[key] = Prompt(key, parse_ts(r["ts"]), i, r.get("agent") or "default")
        p = result[key]
        if r["kind"] == "tool_call":
            p.n_tool_calls += 1
            p.calls.append(i)
        else:
            last_exit[key] = i  # the order is by (ts, position): the last one wins
    for key, i in last_exit.items():
        result[key].exit_reason = records[i]["exit_reason"]
        result[key].agent = records[i].get("agent") or "default"
    return result


@dataclass(frozen=True)
class ErrorFact:
    """One error (``is_error: true``, not a replay) and its class."""

    pos: int
    conversation_id: str
    prompt_id: str
    tool_call_id: str
    step: int
    ts: dt.datetime
    error_class: str
    resolved_later: bool = False


def errors(records: Sequence[Mapping[str, Any]], scratchpad: frozenset[str] = SCRATCHPAD) -> list[ErrorFact]:
    """Every error in input order, classified.

    ``recovered``: the prompt has a later ``tool_call`` (step > s) with
    ``is_error: false`` of a tool that is not a scratchpad tool, and a normal
    exit; otherwise ``open`` (no exit), ``aborted`` (abnormal exit) or
    ``gave_up`` (normal exit, no later success). An unrecovered error is
    ``resolved_later`` when a later prompt of the conversation (by the
    prompt's first ts, then first input position) has a ``tool_call`` of the
    same tool with ``is_error: false`` that is not a replay.
    """
    flags = replay_flags(records)
    ps = prompts(records)
    facts = []
    for i, r in enumerate(records):
        if r["kind"] != "tool_call" or not r["is_error"] or flags[i]:
            continue
        p = ps[(r["conversation_id"], r["prompt_id"])]
        later_ok = any(
            records[j]["step"] > r["step"] and not records[j]["is_error"] and records[j]["tool_name"] not in scratchpad
            for j in p.calls
        )
        if later_ok and p.normal_exit:
            cls = "recovered"
        elif p.is_open:
            cls = "open"
        elif not p.normal_exit:
            cls = "aborted"
        else:
            cls = "gave_up"
        resolved = cls != "recovered" and any(
            (q.first_ts, q.first_pos) > (p.first_ts, p.first_pos)
            and any(
                records[j]["tool_name"] == r["tool_name"] and not records[j]["is_error"] and not flags[j]
                for j in q.calls
            )
            for q in ps.values()
            if q.key[0] == r["conversation_id"]
        )
        facts.append(
            ErrorFact(
                i, r["conversation_id"], r["prompt_id"], r["tool_call_id"], r["step"], parse_ts(r["ts"]), cls, resolved
            )
        )
    return facts


def metrics(
    records: Sequence[Mapping[str, Any]], keep: Callable[[Prompt], bool] | None = None
) -> dict[str, Any]:
    """The four dashboard metrics over the prompts ``keep`` accepts (all by default).

    Replays and error classes are decided over all ``records``; ``keep`` only
    chooses which prompts (and so which of their records) are counted.

    Returns:
        A dict with the keys of ``loopscope metrics --format json``: prompts,
        open_prompts, tool_calls, median_tool_calls_per_prompt,
        p99_tool_calls_per_prompt, errors, recovered_errors, recovery_rate,
        resolved_later_errors, conversation_recovery_rate, replays,
        replay_rate, error_classes.
    """
    ps = prompts(records)
    chosen = {k: p for k, p in ps.items() if keep is None or keep(p)}
    flags = replay_flags(records)
    counts = [p.n_tool_calls for p in chosen.values()]
    n_calls = sum(counts)
    replays = sum(1 for i, f in enumerate(flags) if f and (records[i]["conversation_id"], records[i]["prompt_id"]) in chosen)
    errs = [e for e in errors(records) if (e.conversation_id, e.prompt_id) in chosen]
    recovered = sum(1 for e in errs if e.error_class == "recovered")
    resolved_later = sum(1 for e in errs if e.resolved_later)
    return {
        "prompts": len(chosen),
        "open_prompts": sum(1 for p in chosen.values() if p.is_open),
        "tool_calls": n_calls,
        "median_tool_calls_per_prompt": quantile(counts, 0.5),
        "p99_tool_calls_per_prompt": quantile(counts, 0.99),
        "errors": len(errs),
        "recovered_errors": recovered,
        "recovery_rate": recovered / len(errs) if errs else None,
        "resolved_later_errors": resolved_later,
        "conversation_recovery_rate": (recovered + resolved_later) / len(errs) if errs else None,
        "replays": replays,
        "replay_rate": replays / n_calls if n_calls else None,
        "error_classes": {c: sum(1 for e in errs if e.error_class == c) for c in ("recovered", "open", "aborted", "gave_up")},
    }


def first_unrecovered_error(records: Sequence[Mapping[str, Any]], conversation_id: str) -> ErrorFact | None:
    """The first unrecovered error of a conversation, or None.

    Of its unrecovered errors (class open, aborted or gave_up), the earliest
    by prompt order (the prompt's first ``ts``; ties by the prompt's first
    input position), then ``step``, then ``ts``, then input position.
    """
    ps = prompts(records)
    candidates = [e for e in errors(records) if e.conversation_id == conversation_id and e.error_class != "recovered"]
    if not candidates:
        return None

    def key(e: ErrorFact) -> tuple[dt.datetime, int, int, dt.datetime, int]:
        p = ps[(e.conversation_id, e.prompt_id)]
        return (p.first_ts, p.first_pos, e.step, e.ts, e.pos)

    return min(candidates, key=key)


def tool_health(
    records: Sequence[Mapping[str, Any]],
    keep: Callable[[Prompt], bool] | None = None,
    scratchpad: frozenset[str] = SCRATCHPAD,
    template: Callable[[str], str] | None = None,
) -> list[dict[str, Any]]:
    """Per-tool health over the prompts ``keep`` accepts, most called tool first (then by name).

    Per tool: its ``tool_call`` records (replays and id collisions included),
    its errors (``errors``: not replays) with their classes, its replays, and
    the quantiles of ``latency_ms`` over its calls that have one (``quantile``,
    linear interpolation), the calls without one counted apart. With
    ``template`` (a text -> template function), the most frequent template of
    its errors' texts (``error_message``, else ``error_type``, else ``""``),
    ties to the smallest.

    Returns:
        Dicts with the keys of ``loopscope metrics --by tool --format json``.
    """
    ps = prompts(records)
    chosen = {k for k, p in ps.items() if keep is None or keep(p)}
    flags = replay_flags(records)
    errs = {e.pos: e for e in errors(records, scratchpad) if (e.conversation_id, e.prompt_id) in chosen}
    by_tool: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        if r["kind"] == "tool_call" and (r["conversation_id"], r["prompt_id"]) in chosen:
            by_tool.setdefault(r["tool_name"], []).append(i)
    rows = []
    for tool, calls in by_tool.items():
        mine = [errs[i] for i in calls if i in errs]
        latencies = [float(records[i]["latency_ms"]) for i in calls if records[i].get("latency_ms") is not None]
        recovered = sum(1 for e in mine if e.error_class == "recovered")
        resolved = sum(1 for e in mine if e.resolved_later)
        replays = sum(1 for i in calls if flags[i])
        counts: dict[str, int] = {}
        if template is not None:
            for e in mine:
                r = records[e.pos]
                key = template(r.get("error_message") or r.get("error_type") or "")
                counts[key] = counts.get(key, 0) + 1
        top = min(counts.items(), key=lambda kv: (-kv[1], kv[0])) if counts else (None, 0)
        rows.append({
            "tool_name": tool,
            "scratchpad": tool in scratchpad,
            "tool_calls": len(calls),
            "errors": len(mine),
            "error_rate": len(mine) / len(calls),
            "recovered_errors": recovered,
            "recovery_rate": recovered / len(mine) if mine else None,
            "resolved_later_errors": resolved,
            "conversation_recovery_rate": (recovered + resolved) / len(mine) if mine else None,
            "replays": replays,
            "replay_rate": replays / len(calls),
            "p50_latency_ms": quantile(latencies, 0.5),
            "p95_latency_ms": quantile(latencies, 0.95),
            "p99_latency_ms": quantile(latencies, 0.99),
            "tool_calls_without_latency": len(calls) - len(latencies),
            "top_error_template": top[0],
            "top_error_template_errors": top[1],
            "error_classes": {c: sum(1 for e in mine if e.error_class == c) for c in ("recovered", "open", "aborted", "gave_up")},
        })
    rows.sort(key=lambda r: (-r["tool_calls"], r["tool_name"]))
    return rows
