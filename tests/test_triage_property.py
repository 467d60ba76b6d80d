"""Property test: error classes, first unrecovered errors and incidents agree with the reference.

Random conversations cover what the definitions hinge on: prompts starting
at the same instant (the first input position decides), parallel calls in one
step, errors before and after successes, open prompts and abnormal exits,
replays of an earlier tool_call_id (sometimes with an earlier ``ts``, flagged
``replayed`` or not), ``replayed: true`` on a first occurrence, null
fingerprints and messages, and records written in any order.
The SQL side is read through the library and, for the first unrecovered
error, through ``loopscope triage --format json``.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from loopscope.analyses import incidents, recovery
from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.selection import Selection
from loopscope.cli.app import app

_spec = importlib.util.spec_from_file_location(
    "loopscope_test_reference_incidents", Path(__file__).parent / "reference_incidents.py"
)
assert _spec and _spec.loader
ref = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = ref
_spec.loader.exec_module(ref)
reference = ref.reference

_stores_spec = importlib.util.spec_from_file_location("loopscope_test_store_template", Path(__file__).parent / "store_template.py")
assert _stores_spec and _stores_spec.loader
_stores = importlib.util.module_from_spec(_stores_spec)
_stores_spec.loader.exec_module(_stores)
new_store = _stores.new_store

BASE = dt.datetime(2026, 11, 20, 8, 0, 0)
EXITS = [None, "end_turn", "end_turn", "stop_sequence", "max_tokens", "budget_exceeded", "error"]
_RUNS = itertools.count()


def _ts(ms: int) -> str:
    t = BASE + dt.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


@st.composite
def record_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    clock = 0
    for c in range(draw(st.integers(1, 3))):
        conv = f"conv-{c}"
        ids: list[str] = []
        for p in range(draw(st.integers(1, 3))):
            prompt = f"prompt-{p}"
            clock += draw(st.sampled_from([0, 1, 1000]))  # 0: starts at the same instant as the last record
            for step in range(draw(st.integers(0, 4))):
                for _ in range(draw(st.integers(1, 2))):  # parallel calls share the step
                    clock += draw(st.sampled_from([0, 1, 7]))
                    reuse = bool(ids) and draw(st.integers(0, 4)) == 0
                    tcid = draw(st.sampled_from(ids)) if reuse else f"tc-{c}-{len(ids)}"
                    ids.append(tcid)
                    is_error = draw(st.booleans())
                    records.append({
                        "v": 1, "kind": "tool_call", "ts": _ts(clock - draw(st.sampled_from([0, 0, 0, 5]))),
                        "conversation_id": conv, "prompt_id": prompt, "agent": "support",
                        "tool_call_id": tcid, "tool_name": draw(st.sampled_from(["search", "book"])),
                        "step": step, "args_fingerprint": draw(st.sampled_from(["f1", "f2", None])),
                        "outcome": "permanent_fail" if is_error else "ok", "is_error": is_error, "attempts": 1,
                        "latency_ms": 3.0,
                        "error_message": draw(st.sampled_from(["m1", "m2", None])) if is_error else None,
                        "replayed": draw(st.booleans()) if reuse else draw(st.integers(0, 9)) == 0,
                    })
            reason = draw(st.sampled_from(EXITS))
            if reason is not None:
                clock += 1
                records.append({
                    "v": 1, "kind": "loop_exit", "ts": _ts(clock), "conversation_id": conv, "prompt_id": prompt,
                    "agent": "support", "exit_reason": reason, "max_tool_calls": 10,
                })
    if draw(st.booleans()):
        order = draw(st.permutations(range(len(records))))
        records = [records[i] for i in order]
    return records


def _load(records: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    n = next(_RUNS)
    path = Path(f"records-{n}.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    db = Path(f"store-{n}.duckdb")
    con = new_store(db)
    load_paths(con, [path])
    return con, db


def _call_key(r: dict[str, Any]) -> tuple[str, str, str, int, dt.datetime]:
    return (r["conversation_id"], r["prompt_id"], r["tool_call_id"], r["step"], reference.parse_ts(r["ts"]))


# Generated examples per run: 20 (40 with LOOPSCOPE_PROPERTY_EXAMPLES=full, as before 2026-11-27;
# tests/conftest.py says why).
PROPERTY_EXAMPLES = 40 if os.environ.get("LOOPSCOPE_PROPERTY_EXAMPLES") == "full" else 20


@settings(max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(record_sets())
def test_triage_agrees_with_reference(records: list[dict[str, Any]]) -> None:
    con, db = _load(records)
    try:
        # every error and its class
        sql_classes = sorted(con.execute("SELECT conversation_id, tool_call_id, error_class FROM errors_v").fetchall())
        ref_classes = sorted((e.conversation_id, e.tool_call_id, e.error_class) for e in reference.errors(records))
        assert sql_classes == ref_classes

        convs = sorted({r["conversation_id"] for r in records})
        expected_listed = {}
        for conv in convs:
            want = reference.first_unrecovered_error(records, conv)
            got = recovery.first_unrecovered(con, conv)
            if want is None:
                assert got is None
                continue
            expected_listed[conv] = want.tool_call_id
            assert got is not None
            assert (got.prompt_id, got.tool_call_id, got.step, got.error_class) == (
                want.prompt_id, want.tool_call_id, want.step, want.error_class
            )
            # previous attempts: same tool and fingerprint, earlier in conversation order
            want_prev = [_call_key(records[i]) for i in ref.previous_attempts(records, want.pos)]
            got_prev = [(conv, a.prompt_id, a.tool_call_id, a.step, a.ts) for a in got.previous_attempts]
            assert got_prev == want_prev

        # loopscope unrecovered lists exactly those conversations, newest first
        listed = recovery.first_unrecovered_all(con, Selection())
        assert {r.conversation_id: r.tool_call_id for r in listed} == expected_listed
        last_ts = {c: max(reference.parse_ts(r["ts"]) for r in records if r["conversation_id"] == c) for c in convs}
        assert [r.conversation_id for r in listed] == sorted(expected_listed, key=lambda c: (-last_ts[c].timestamp(), c))

        # retry loops
        want_loops = {k: [records[i]["tool_call_id"] for i in v] for k, v in ref.retry_loops(records).items()}
        got_loops = {
            (lp.conversation_id, lp.prompt_id, lp.tool_name, lp.args_fingerprint,
             lp.error_message if lp.args_fingerprint is None else None): lp.tool_call_ids
            for lp in incidents.retry_loops(con, Selection())
        }
        assert got_loops == want_loops
        assert all(lp.redundant_calls == lp.calls - 1 for lp in incidents.retry_loops(con, Selection()))

        # replays and their kind
        want_replays = sorted((*_call_key(records[i]), kind) for i, kind in ref.replays(records).items())
        got_replays = sorted(
            (r.conversation_id, r.prompt_id, r.tool_call_id, r.step, r.ts, r.kind) for r in incidents.replays(con, Selection())
        )
        assert got_replays == want_replays

        # duplicate executions by fingerprint
        got_dups = {
            (d.conversation_id, d.prompt_id, d.tool_name, d.args_fingerprint): (d.original_tool_call_id, d.duplicate_tool_call_ids)
            for d in incidents.duplicate_executions(con, Selection())
        }
        assert got_dups == ref.duplicate_executions(records)
    finally:
        con.close()

    # and through the command line, for one conversation
    if not records:
        return
    conv = records[0]["conversation_id"]
    result = CliRunner().invoke(app, ["triage", conv, "--db", str(db), "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout)["first_unrecovered"]
    want = reference.first_unrecovered_error(records, conv)
    if want is None:
        assert first is None
    else:
        assert (first["prompt_id"], first["tool_call_id"], first["class"]) == (want.prompt_id, want.tool_call_id, want.error_class)
