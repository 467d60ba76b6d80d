"""Record format v1: the two record kinds and their completion step.

The hot path builds each record as a dict with every field in spec order, but leaves three pieces
of work for :func:`finish`, which a sink runs (the JSONL sink on its writer thread):

- ``ts`` holds epoch seconds (float) until it is formatted as RFC 3339 UTC with microseconds and
  ``Z`` (``2026-11-21T23:44:18.123456Z``);
- ``trace_id`` / ``span_id`` hold OpenTelemetry ints until formatted as 32 / 16 lowercase hex;
- ``input_shape`` holds the arguments (a shallow copy taken when the call starts) and
  ``args_fingerprint`` the :data:`PENDING` marker until both are computed from them -- so the
  queue carries one object per record and argument values never leave the process.

Latencies are rounded to microseconds (3 decimals of milliseconds) at the same time.
"""

from __future__ import annotations

import time
from typing import Any

from loopscope.collectors.shape import RawResult, result_fingerprint, shape_and_fingerprint

SCHEMA_VERSION = 1
TOOL_CALL = "tool_call"
LOOP_EXIT = "loop_exit"

#: Field order of each kind, as in the spec (``tags`` only present when set).
COMMON_FIELDS = ("v", "kind", "ts", "conversation_id", "prompt_id", "agent", "trace_id", "span_id", "tags")
TOOL_CALL_FIELDS = COMMON_FIELDS + (
    "tool_call_id",
    "tool_name",
    "step",
    "input_shape",
    "args_fingerprint",
    "outcome",
    "is_error",
    "attempts",
    "latency_ms",
    "error_type",
    "error_message",
    "replayed",
)
#: Optional ``tool_call`` fields, written after the others only when known (additive to v1).
TOOL_CALL_OPTIONAL_FIELDS = ("result_fingerprint",)
LOOP_EXIT_FIELDS = COMMON_FIELDS + (
    "exit_reason",
    "steps",
    "tool_calls",
    "tool_errors",
    "max_tool_calls",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "error_type",
    "error_message",
)
OUTCOMES = ("ok", "retried", "transient_fail", "permanent_fail")
NORMAL_EXITS = ("end_turn", "stop_sequence")


class _Pending:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<loopscope: input_shape holds the raw arguments>"


#: ``args_fingerprint`` value of a record whose ``input_shape`` still holds the raw arguments.
PENDING: Any = _Pending()

# (second, "YYYY-MM-DDTHH:MM:SS") of the last timestamp: one tuple, so threads never pair a second
# with another second's text.
_ts_cache: tuple[int, str] = (-1, "")


def format_ts(epoch: float) -> str:
    """Epoch seconds -> ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (UTC, always 6 fractional digits)."""
    global _ts_cache
    sec, us = divmod(round(epoch * 1_000_000), 1_000_000)
    cached = _ts_cache
    if cached[0] == sec:
        prefix = cached[1]
    else:
        # Records arrive in bursts within one second: format the date part once per second.
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        _ts_cache = (sec, prefix)
    return f"{prefix}.{us:06d}Z"


def finish(rec: dict[str, Any]) -> dict[str, Any]:
    """Complete a record built on the hot path (in place) and return it. Idempotent."""
    ts = rec["ts"]
    if ts.__class__ is not str:
        rec["ts"] = format_ts(ts)
    tid = rec["trace_id"]
    if tid is not None and tid.__class__ is int:
        rec["trace_id"] = format(tid, "032x")
        rec["span_id"] = format(rec["span_id"], "016x")
    if rec.get("args_fingerprint") is PENDING:
        rec["input_shape"], rec["args_fingerprint"] = shape_and_fingerprint(rec["input_shape"])
        lat = rec["latency_ms"]
        if lat is not None:
            rec["latency_ms"] = round(lat, 3)
        rf = rec.get("result_fingerprint")
        if rf.__class__ is RawResult:
            rec["result_fingerprint"] = result_fingerprint(rf.value)
    elif rec["kind"] == LOOP_EXIT:
        dur = rec["duration_ms"]
        if dur is not None:
            rec["duration_ms"] = round(dur, 3)
    return rec


#: OpenAI ``finish_reason`` -> the record's exit-reason vocabulary (Anthropic's stop reasons).
OPENAI_FINISH_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}


def openai_stop_reason(finish_reason: str | None) -> str | None:
    """Map an OpenAI ``finish_reason`` to the spec's vocabulary (unknown values kept as-is).

    ``stop`` means the model finished its turn, i.e. ``end_turn`` -- a normal exit -- whereas the
    raw string ``stop`` would count as an abnormal provider reason.
    """
    if finish_reason is None:
        return None
    return OPENAI_FINISH_REASONS.get(finish_reason, finish_reason)
