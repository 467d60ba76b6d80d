"""loopscope's own events in OTLP logs: ``loopscope.tool_call`` / ``loopscope.agent_exit``.

The body of such an event is a v1 record (or part of one): its fields are
taken as they are, and whatever is missing comes from the log record's
attributes (the ``gen_ai.*`` keys of the alias map) and envelope (time,
trace and span ids). Other log records (model message events, exceptions)
carry no tool-call facts of their own and are skipped.
"""

from __future__ import annotations

from typing import Any

from loopscope.analyses.ingest.otlp import LogRecord
from loopscope.analyses.ingest.otlp.aliases import (
    AGENT_NAME_KEYS,
    CONVERSATION_KEYS,
    TOOL_CALL_ID_KEYS,
    TOOL_NAME_KEYS,
    first,
    format_ts,
)


def logs_to_records(logs: list[LogRecord]) -> list[tuple[int, dict[str, Any]]]:
    """Convert loopscope's own ``loopscope.tool_call`` / ``loopscope.agent_exit`` events."""
    out: list[tuple[int, dict[str, Any]]] = []
    kinds = {"loopscope.tool_call": "tool_call", "loopscope.agent_exit": "loop_exit"}
    for log in logs:
        kind = kinds.get(log.event_name or "")
        if kind is None:
            continue
        body = log.body if isinstance(log.body, dict) else {}
        rec: dict[str, Any] = {k: v for k, v in body.items() if v is not None}
        a = log.attrs
        rec["v"] = rec.get("v", 1)
        rec["kind"] = kind
        if "ts" not in rec and log.time_ns:
            rec["ts"] = format_ts(log.time_ns)
        conv = rec.get("conversation_id") or first(a, CONVERSATION_KEYS)
        rec["conversation_id"] = conv if conv is not None else f"otlp-trace:{log.trace_id}"
        if conv is None:
            rec["conversation_id_from_trace"] = True
        if "prompt_id" not in rec:
            # Tool and exit events of one loop share its trace; the trace is the prompt.
            rec["prompt_id"], rec["prompt_id_from"] = f"otlp-trace:{log.trace_id}", "trace"
        rec.setdefault("agent", first(a, AGENT_NAME_KEYS) or "default")
        rec.setdefault("trace_id", log.trace_id)
        rec.setdefault("span_id", log.span_id)
        if kind == "tool_call":
            rec.setdefault("tool_call_id", first(a, TOOL_CALL_ID_KEYS))
            rec.setdefault("tool_name", first(a, TOOL_NAME_KEYS))
            outcome = rec.setdefault("outcome", "ok")
            rec.setdefault("is_error", outcome in ("transient_fail", "permanent_fail"))
            rec.setdefault("attempts", 1)
            rec.setdefault("replayed", False)
        rec["source_format"] = "otlp"
        out.append((log.line_no, rec))
    return out
