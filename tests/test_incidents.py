"""Incident analyses as library calls over logs loaded with ``loopscope load``.

Budget pressure and the class breakdowns are library functions (shown by
``audit``); retry loops, replays and duplicate executions are also checked
through ``loopscope triage`` in test_triage.py.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.analyses import incidents, recovery
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect
from loopscope.cli.app import app

T0 = dt.datetime(2026, 11, 20, 10, 0, 0)


def _ts(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def call(conv: str, prompt: str, step: int, tcid: str, tool: str, sec: float, *, agent: str = "a",
         error: str | None = None, fp: str | None = "fp", replayed: bool = False) -> dict[str, Any]:
    return {
        "v": 1, "kind": "tool_call", "ts": _ts(sec), "conversation_id": conv, "prompt_id": prompt, "agent": agent,
        "tool_call_id": tcid, "tool_name": tool, "step": step, "input_shape": {}, "args_fingerprint": fp,
        "outcome": "permanent_fail" if error else "ok", "is_error": error is not None, "attempts": 1,
        "latency_ms": 1.0, "error_type": None, "error_message": error, "replayed": replayed,
    }


def exit_(conv: str, prompt: str, reason: str, sec: float, *, agent: str = "a", budget: int | None = 10) -> dict[str, Any]:
    return {
        "v": 1, "kind": "loop_exit", "ts": _ts(sec), "conversation_id": conv, "prompt_id": prompt, "agent": agent,
        "exit_reason": reason, "max_tool_calls": budget,
    }


def prompt_with(n: int, conv: str, sec: float, reason: str | None, *, agent: str = "a", budget: int | None = 10,
                errors: int = 0) -> list[dict[str, Any]]:
    """A prompt with ``n`` tool calls, the first ``errors`` of them failing, then its exit (None: open)."""
    recs = [
        call(conv, "p", i, f"{conv}-{i}", "tool_e" if i < errors else "tool_ok", sec + i, agent=agent,
             error="boom" if i < errors else None, fp=f"{conv}-{i}")
        for i in range(n)
    ]
    if reason is not None:
        recs.append(exit_(conv, "p", reason, sec + n, agent=agent, budget=budget))
    return recs


RECORDS = [
    # agent a: 1, 2, 3 and 10 tool calls; budget 8 on the oldest exit, 10 on the newer ones.
    *prompt_with(1, "a1", 0, "end_turn", budget=8),
    *prompt_with(2, "a2", 100, "end_turn", errors=1),  # error at step 0, success at 1: recovered
    *prompt_with(3, "a3", 200, None, errors=1),  # open prompt: error is open
    *prompt_with(10, "a4", 300, "budget_exceeded", errors=10),  # 10 errors, all aborted
    # agent b: one prompt with no tool calls and no budget.
    *prompt_with(0, "b1", 400, "end_turn", agent="b", budget=None),
    # agent c: an error at the last step of a normal exit: gave_up.
    *prompt_with(1, "c1", 500, "end_turn", agent="c", errors=1),
]


@pytest.fixture()
def con(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    result = CliRunner().invoke(app, ["load", str(path), "--db", str(tmp_path / "s.duckdb")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    c = connect(tmp_path / "s.duckdb")
    yield c
    c.close()


def test_budget_pressure(con) -> None:  # type: ignore[no-untyped-def]
    rows = {r.agent: r for r in incidents.budget_pressure(con, Selection())}
    a = rows["a"]
    assert (a.prompts, a.exited_prompts, a.budget_exceeded) == (4, 3, 1)
    # numpy's linear interpolation over [1, 2, 3, 10]: 3 + 0.97 * (10 - 3)
    assert a.p99_tool_calls_per_prompt == pytest.approx(9.79)
    assert a.median_tool_calls_per_prompt == pytest.approx(2.5)
    # the budget in force is the one on the newest exit that set one
    assert (a.max_tool_calls, a.budgets_seen, a.max_tool_calls_seen) == (10, 2, 10)
    assert a.budget_exceeded_share == pytest.approx(1 / 3)
    assert a.p99_budget_ratio == pytest.approx(0.979)
    b = rows["b"]
    assert (b.prompts, b.p99_tool_calls_per_prompt, b.max_tool_calls, b.p99_budget_ratio, b.budget_exceeded_share) == (
        1, 0.0, None, None, 0.0
    )
    only_b = incidents.budget_pressure(con, Selection(agents=("b",)))
    assert [r.agent for r in only_b] == ["b"]
    assert rows["a"].to_dict()["budget_exceeded_share"] == pytest.approx(1 / 3)


def test_class_breakdown_by_tool_and_agent(con) -> None:  # type: ignore[no-untyped-def]
    by_agent = {r.key: r for r in recovery.class_breakdown(con, Selection(), by="agent")}
    a = by_agent["a"]
    assert (a.errors, a.recovered, a.open, a.aborted, a.gave_up, a.prompts) == (12, 1, 1, 10, 0, 3)
    assert a.recovery_rate == pytest.approx(1 / 12)
    c = by_agent["c"]
    assert (c.errors, c.gave_up, c.recovery_rate) == (1, 1, 0.0)
    assert "b" not in by_agent
    by_tool = {r.key: r for r in recovery.class_breakdown(con, Selection(), by="tool")}
    assert set(by_tool) == {"tool_e"} and by_tool["tool_e"].errors == 13
    with pytest.raises(ValueError):
        recovery.class_breakdown(con, Selection(), by="week")


def test_retry_loop_needs_three_and_one_prompt(con) -> None:  # type: ignore[no-untyped-def]
    # a4's ten errors all have different fingerprints: no loop
    assert incidents.retry_loops(con, Selection()) == []
    con.execute("DELETE FROM tool_calls")
    con.execute("DELETE FROM loop_exits")
    rows = [
        # two failures in p1 and one in p2 with the same fingerprint: never three in one prompt
        call("x", "p1", 0, "x1", "t", 0, error="e", fp="F"),
        call("x", "p1", 1, "x2", "t", 1, error="e", fp="F"),
        call("x", "p2", 0, "x3", "t", 2, error="e", fp="F"),
        # three in one prompt, but one is another tool
        call("y", "p1", 0, "y1", "t", 3, error="e", fp="F"),
        call("y", "p1", 1, "y2", "t", 4, error="e", fp="F"),
        call("y", "p1", 2, "y3", "u", 5, error="e", fp="F"),
        # null fingerprint, different messages: no loop; same message three times: a loop
        call("z", "p1", 0, "z1", "t", 6, error="e1", fp=None),
        call("z", "p1", 1, "z2", "t", 7, error="e2", fp=None),
        call("z", "p1", 2, "z3", "t", 8, error="e3", fp=None),
        *[call("w", "p1", i, f"w{i}", "t", 9 + i, error="same", fp=None) for i in range(3)],
    ]
    path = Path("more.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from loopscope.analyses.ingest.load import load_paths

    load_paths(con, [path])
    loops = incidents.retry_loops(con, Selection())
    assert [(lp.conversation_id, lp.calls, lp.redundant_calls, lp.error_message) for lp in loops] == [
        ("w", 3, 2, "same")
    ]
    assert loops[0].is_open is True and loops[0].exit_reason is None
