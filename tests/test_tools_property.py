"""Property test: per-tool health from SQL (the fast query and the views' query) equals tests/reference.py.

Random records cover what the per-tool figures hinge on: replays (the same call again, or
``replayed: true``), id collisions (an id reused by another tool or fingerprint: a new call),
``think`` (a scratchpad tool: never a recovery), errors resolved in a later prompt, open prompts and
abnormal exits, missing and equal latencies, timestamps that tie or step back (input order decides),
error texts that share a template, and a window that cuts conversations (facts stay store-wide).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import itertools
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.lint.templates import template_of
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect
from loopscope.analyses.tools import tool_health

_spec = importlib.util.spec_from_file_location("loopscope_test_reference", Path(__file__).parent / "reference.py")
assert _spec and _spec.loader
reference = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = reference
_spec.loader.exec_module(reference)

BASE = dt.datetime(2026, 11, 16, 12, 0, 0)
TOOLS = ["search", "book", "think"]
FINGERPRINTS = [None, "ab12", "cd34"]
LATENCIES = [None, 0, 1.5, 10, 10, 250.25, 3000]
MESSAGES = ["Error: room R-12 taken", "Error: room R-7 taken", "no result for 'rome'", "failed", None]
EXITS = [None, "end_turn", "end_turn", "stop_sequence", "max_tokens", "error"]
WINDOW_START = BASE + dt.timedelta(seconds=20)
_RUNS = itertools.count()


def _ts(seconds: int) -> str:
    return (BASE + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


@st.composite
def record_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    clock = 0
    counter = 0
    for c in range(draw(st.integers(1, 3))):
        conv = f"conv-{c}"
        used: list[tuple[str, str, str | None]] = []
        for p in range(draw(st.integers(1, 3))):
            common = {"v": 1, "conversation_id": conv, "prompt_id": f"p-{p}", "agent": "a"}
            for step in range(draw(st.integers(0, 3))):
                for _ in range(draw(st.integers(1, 2))):
                    how = draw(st.sampled_from(["new", "new", "new", "replay", "collision"]))
                    tool, fp = draw(st.sampled_from(TOOLS)), draw(st.sampled_from(FINGERPRINTS))
                    if how == "replay" and used:
                        call_id, tool, fp = draw(st.sampled_from(used))
                    elif how == "collision" and used:
                        call_id = draw(st.sampled_from(used))[0]
                    else:
                        counter += 1
                        call_id = f"toolu_{counter}"
                    used.append((call_id, tool, fp))
                    is_error = draw(st.booleans())
                    clock += draw(st.integers(-1, 4))
                    rec = dict(common, kind="tool_call", ts=_ts(clock), tool_call_id=call_id, tool_name=tool, step=step,
                               args_fingerprint=fp, outcome="permanent_fail" if is_error else "ok", is_error=is_error,
                               attempts=1, error_type=draw(st.sampled_from([None, "E"])) if is_error else None,
                               error_message=draw(st.sampled_from(MESSAGES)) if is_error else None,
                               replayed=draw(st.sampled_from([False, False, False, True])))
                    latency = draw(st.sampled_from(LATENCIES))
                    if latency is not None:
                        rec["latency_ms"] = latency
                    records.append(rec)
            exit_reason = draw(st.sampled_from(EXITS))
            if exit_reason is not None:
                clock += draw(st.integers(0, 3))
                records.append(dict(common, kind="loop_exit", ts=_ts(clock), exit_reason=exit_reason))
    return records


def _same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [g["tool_name"] for g in got] == [w["tool_name"] for w in want]
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for key, value in w.items():
            if isinstance(value, float) and g[key] is not None:
                assert math.isclose(g[key], value, rel_tol=1e-9, abs_tol=1e-9), (g["tool_name"], key, g[key], value)
            else:
                assert g[key] == value, (g["tool_name"], key, g[key], value)


# Generated examples per run: 30 (60 with LOOPSCOPE_PROPERTY_EXAMPLES=full, as before 2026-11-27;
# tests/conftest.py says why).
PROPERTY_EXAMPLES = 60 if os.environ.get("LOOPSCOPE_PROPERTY_EXAMPLES") == "full" else 30


@settings(max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(records=record_lists())
def test_tool_health_agrees_with_reference(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    path = tmp_path / f"run-{next(_RUNS)}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    con = connect(":memory:")
    load_paths(con, [path])
    want = reference.tool_health(records, template=template_of)
    _same([t.as_dict() for t in tool_health(con).tools], want)
    _same([t.as_dict() for t in tool_health(con, source="views").tools], want)
    # A window that cuts conversations: record-level facts still come from the whole store.
    window = Selection(since=WINDOW_START)
    cut = reference.tool_health(records, keep=lambda p: p.first_ts >= WINDOW_START, template=template_of)
    _same([t.as_dict() for t in tool_health(con, window).tools], cut)
    _same([t.as_dict() for t in tool_health(con, window, source="views").tools], cut)
    # One tool, and the cut to the most called.
    if want:
        first = want[0]["tool_name"]
        _same([t.as_dict() for t in tool_health(con, tools=(first,)).tools], want[:1])
        report = tool_health(con, limit=1)
        assert report.total == len(want)
        _same([t.as_dict() for t in report.tools], want[:1])
