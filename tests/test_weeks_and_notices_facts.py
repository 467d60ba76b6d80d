"""The audit's weekly figures and its notices, read from the facts, give what the views give.

``cohorts.figures_by`` groups weeks and days by the truncated time and names each group once
(instead of formatting every prompt's time); ``notices`` looks for a violation kind before
joining the records to the prompts and counts id collisions from ``repeat_facts``. Through the
CLI on a store whose weeks cross an ISO year boundary, with undated prompts and an id collision
in one agent only: the audit's weeks (overall and per agent) are those of ``metrics --by week``
(another path: metrics.GROUP_KEYS), and the notices count what the data holds, per selection.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app


def _call(conv: str, prompt: str, agent: str, ts: str, call_id: str, tool: str, step: int, *, error: bool = False,
          fingerprint: str = "f0") -> dict[str, Any]:
    return {
        "v": 1, "kind": "tool_call", "ts": ts, "conversation_id": conv, "prompt_id": prompt, "agent": agent,
        "trace_id": None, "span_id": None, "tags": {"mode": "test"}, "tool_call_id": call_id, "tool_name": tool,
        "step": step, "input_shape": {"q": "string"}, "args_fingerprint": fingerprint,
        "outcome": "permanent_fail" if error else "ok", "is_error": error, "attempts": 1, "latency_ms": 10.0,
        "error_type": "E" if error else None, "error_message": "Error: no such thing" if error else None,
        "replayed": False,
    }


def _exit(conv: str, prompt: str, agent: str, ts: str, calls: int) -> dict[str, Any]:
    return {
        "v": 1, "kind": "loop_exit", "ts": ts, "conversation_id": conv, "prompt_id": prompt, "agent": agent,
        "trace_id": None, "span_id": None, "tags": {"mode": "test"}, "exit_reason": "end_turn", "steps": calls,
        "tool_calls": calls, "tool_errors": 0, "max_tool_calls": 100, "input_tokens": 1, "output_tokens": 1,
        "duration_ms": 1.0, "error_type": None, "error_message": None,
    }


# (agent, first time of the prompt, its calls): 2020-12-31 and 2021-01-03 are ISO week 2020-W53,
# 2021-01-04 starts 2021-W01, 2024-12-30 is 2025-W01; 1970 times are "no timestamp".
PROMPTS = [
    ("alpha", "2020-12-31T12:00:00Z", 3),
    ("alpha", "2021-01-03T23:59:58Z", 1),
    ("alpha", "2021-01-04T00:00:00Z", 2),
    ("beta", "2021-01-04T08:00:00Z", 4),
    ("beta", "2024-12-30T01:00:00Z", 2),
    ("alpha", "1970-01-01T00:00:05Z", 2),
    ("beta", "1970-01-01T00:01:00Z", 1),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("weeks")
    lines: list[dict[str, Any]] = []
    for i, (agent, ts, calls) in enumerate(PROMPTS):
        conv, prompt = f"c{i}", f"c{i}-p1"
        for step in range(calls):
            t = ts.replace("Z", f".{step + 1:03d}Z") if "." not in ts else ts
            lines.append(_call(conv, prompt, agent, t, f"id{step}", "search", step, error=(step == 0 and calls > 1)))
        lines.append(_exit(conv, prompt, agent, ts.replace("Z", ".900Z"), calls))
    # in one alpha conversation, an id reused by another tool: an id collision (alpha only)
    lines.append(_call("c2", "c2-p1", "alpha", "2021-01-04T00:00:00.500Z", "id0", "lookup", 5, fingerprint="f1"))
    logs = root / "records.jsonl"
    logs.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    db = root / "store.duckdb"
    result = CliRunner().invoke(app, ["load", str(logs), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db


def _json(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_audit_weeks_are_the_iso_weeks_of_metrics_by_week(store: Path) -> None:
    report = _json(["audit", "--db", str(store), "--format", "json"])
    by_week = {row["group"]: row for row in _json(["metrics", "--db", str(store), "--by", "week", "--format", "json"])}
    assert sorted(by_week) == ["2020-W53", "2021-W01", "2025-W01", "no timestamp"]
    assert by_week["no timestamp"]["prompts"] == 2
    weeks = report["weeks"]
    assert [w["week"] for w in weeks] == ["2020-W53", "2021-W01", "2025-W01"]  # undated: in the notices, not a week
    for week in weeks:
        expected = by_week[week["week"]]
        for key in ("prompts", "tool_calls", "median_tool_calls_per_prompt", "p99_tool_calls_per_prompt", "errors",
                    "recovered_errors", "replays"):
            assert week[key] == expected[key], (week["week"], key)
    assert [w["prompts"] for w in weeks] == [2, 2, 1]
    per_agent = {a["agent"]: [(w["week"], w["prompts"], w["tool_calls"]) for w in a["weeks"]] for a in report["agents"]}
    assert per_agent == {
        "alpha": [("2020-W53", 2, 4), ("2021-W01", 1, 3)],
        "beta": [("2021-W01", 1, 4), ("2025-W01", 1, 2)],
    }
    undated = [n for n in report["notices"] if n["kind"] == "no_timestamps"]
    assert [n["count"] for n in undated] == [2]


def test_metrics_by_day_names_undated_prompts_once(store: Path) -> None:
    days = {row["group"]: row["prompts"] for row in _json(["metrics", "--db", str(store), "--by", "day", "--format", "json"])}
    assert days == {"2020-12-31": 1, "2021-01-03": 1, "2021-01-04": 2, "2024-12-30": 1, "no timestamp": 2}


def test_id_collision_notice_counts_the_selected_prompts_only(store: Path) -> None:
    def collisions(*args: str) -> list[int]:
        report = _json(["audit", "--db", str(store), "--format", "json", *args])
        kinds = {n["kind"] for n in report["notices"]}
        assert not kinds & {"unflagged_error_text", "no_tool_calls"}  # the loads reported none
        return [n["count"] for n in report["notices"] if n["kind"] == "id_collisions"]

    assert collisions() == [1]
    assert collisions("--agent", "alpha") == [1]
    assert collisions("--agent", "beta") == []
