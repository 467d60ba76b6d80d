"""Figures on real third-party conversations (tau2-bench excerpts in tests/fixtures/tau2/), counted twice.

Each figure loopscope prints through the CLI (``metrics`` and ``audit --format json``) is compared
with a count made here straight from the raw JSON, by a deliberately plain reading of the
spec (docs/records.md), with no loopscope code:

- a prompt starts at each ``user`` message without ``tool_calls``; the model calls of a prompt
  are its ``assistant`` messages, numbered from 0 (the step);
- a tool call is an entry of an assistant message's ``tool_calls`` (the simulated user's own
  tools, ``requestor: "user"``, are not the agent's); its result is the ``tool`` message with
  its id (the n-th result of an id answers its n-th call), an error when that message has
  ``error: true``;
- the same call again (same id, tool and canonical arguments) in the conversation is a replay;
  the same id on another call is an id collision (a new call);
- an error (not a replay) is recovered when a later step of its prompt has a successful call of
  a tool other than ``think`` and the prompt ended normally (every prompt does, except the last
  one of a conversation the harness stopped: ``max_steps``, ``too_many_errors``,
  ``infrastructure_error``); an unrecovered error is resolved later when a later prompt has a
  successful, non-replay call of the same tool.

The literal numbers are asserted too, so a change in either count shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

TAU2 = Path(__file__).resolve().parent / "fixtures" / "tau2"
STOPPED = {"max_steps", "too_many_errors", "infrastructure_error"}
runner = CliRunner()


def count_by_hand(path: Path) -> dict[str, int]:
    """The figures of one tau2 file, from its raw JSON (see the module docstring)."""
    doc = json.loads(path.read_text())
    totals = dict(tool_calls=0, errors=0, replays=0, collisions=0, recovered=0, resolved_later=0)
    for sim in doc["simulations"]:
        prompts: list[list[dict[str, Any]]] = []  # per prompt: its calls
        results: dict[str, list[dict[str, Any]]] = {}  # an id's results in order: a reused id has several
        for m in sim["messages"]:
            if m["role"] == "tool" and m.get("requestor") != "user":
                results.setdefault(m["id"], []).append(m)
        step = -1
        for m in sim["messages"]:
            if m["role"] == "user" and not m.get("tool_calls"):
                prompts.append([])
                step = -1
            elif m["role"] == "assistant":
                if not prompts:
                    if not m.get("tool_calls"):
                        continue  # a greeting before the first user message
                    prompts.append([])
                step += 1
                for call in m.get("tool_calls") or []:
                    queue = results.get(call["id"]) or [{}]
                    result = queue.pop(0) if len(queue) > 1 else queue[0]
                    prompts[-1].append(
                        {
                            "id": call["id"],
                            "tool": call["name"],
                            "args": json.dumps(call["arguments"], sort_keys=True),
                            "step": step,
                            "error": bool(result and result.get("error")),
                        }
                    )
        seen_calls: set[tuple[str, str, str]] = set()
        seen_ids: set[str] = set()
        for calls in prompts:
            for c in calls:
                key = (c["id"], c["tool"], c["args"])
                c["replay"] = key in seen_calls
                totals["collisions"] += c["id"] in seen_ids and not c["replay"]
                seen_calls.add(key)
                seen_ids.add(c["id"])
        for i, calls in enumerate(prompts):
            normal = not (i == len(prompts) - 1 and sim.get("termination_reason") in STOPPED)
            totals["tool_calls"] += len(calls)
            totals["replays"] += sum(c["replay"] for c in calls)
            for c in calls:
                if not c["error"] or c["replay"]:
                    continue
                totals["errors"] += 1
                if normal and any(d["step"] > c["step"] and not d["error"] and d["tool"] != "think" for d in calls):
                    totals["recovered"] += 1
                elif any(d["tool"] == c["tool"] and not d["error"] and not d["replay"] for later in prompts[i + 1:] for d in later):
                    totals["resolved_later"] += 1
    return totals


# file -> the figures counted by hand above (and checked against the conversations' text once).
EXPECTED = {
    "claude-sonnet-4-5_airline_default_gpt4.1_1trials.json": dict(
        tool_calls=17, errors=1, replays=0, collisions=0, recovered=1, resolved_later=0
    ),
    "langchain_agent_airline_2025-11-26_00-37-06.json": dict(
        tool_calls=38, errors=7, replays=7, collisions=0, recovered=0, resolved_later=5
    ),
    "adaptive_agent_medical_triage_opus46_cascata.json": dict(
        tool_calls=26, errors=26, replays=0, collisions=0, recovered=0, resolved_later=0
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_figures_match_an_independent_count(tmp_path: Path, name: str) -> None:
    path = TAU2 / name
    by_hand = count_by_hand(path)
    assert by_hand == EXPECTED[name]

    db = str(tmp_path / "t.duckdb")
    metrics = runner.invoke(app, ["metrics", str(path), "--db", db, "--format", "json"], catch_exceptions=False)
    assert metrics.exit_code == 0, metrics.output
    m = json.loads(metrics.stdout)
    assert (m["tool_calls"], m["errors"], m["replays"], m["recovered_errors"], m["resolved_later_errors"]) == (
        by_hand["tool_calls"], by_hand["errors"], by_hand["replays"], by_hand["recovered"], by_hand["resolved_later"]
    )
    errors = by_hand["errors"]
    assert m["recovery_rate"] == (by_hand["recovered"] / errors if errors else None)
    assert m["conversation_recovery_rate"] == ((by_hand["recovered"] + by_hand["resolved_later"]) / errors if errors else None)
    assert sum(m["error_classes"].values()) == errors

    audit = runner.invoke(app, ["audit", "--db", db, "--format", "json"], catch_exceptions=False)
    assert audit.exit_code == 0, audit.output
    report = json.loads(audit.stdout)
    # one vocabulary: the audit's overall figures are the metrics' figures, key for key
    overall = {k: v for k, v in report["overall"].items() if k != "conversations"}
    assert overall == m
    kinds = {row["kind"]: row["violations"] for row in report["protocol_violations"]["by_kind"]}
    assert kinds.get("reused_tool_call_id", 0) == by_hand["collisions"]


def test_langgraph_redispatches_are_replays_not_collisions(tmp_path: Path) -> None:
    # The LangGraph agent dispatches the same call again under its id (transfer_to_human_agents
    # three times in a row): those are real double executions, which the replay rate is for.
    path = TAU2 / "langchain_agent_airline_2025-11-26_00-37-06.json"
    db = str(tmp_path / "t.duckdb")
    out = runner.invoke(app, ["audit", str(path), "--db", db, "--format", "json"], catch_exceptions=False)
    report = json.loads(out.stdout)
    assert report["replays"]["total"] == 7 and report["replays"]["double_executions"] == 7
    assert not [v for v in report["protocol_violations"]["items"] if v["kind"] == "reused_tool_call_id"]


def test_undated_logs_say_no_timestamp_instead_of_1970(tmp_path: Path) -> None:
    # Messages without times get 1970-01-01 plus their index inside the store (ts_synthetic); no view
    # may show that as a date: weeks group them as "no timestamp", the terminal lists say so too.
    path = Path(__file__).resolve().parent / "fixtures" / "messages" / "openai_text_errors.jsonl"
    db = str(tmp_path / "t.duckdb")
    load = runner.invoke(app, ["load", str(path), "--db", db, "--error-when", "prefix"], catch_exceptions=False)
    assert load.exit_code == 0 and "without timestamps" in load.stderr
    weeks = json.loads(runner.invoke(app, ["metrics", "--db", db, "--by", "week", "-f", "json"]).stdout)
    assert [w["group"] for w in weeks] == ["no timestamp"]
    listing = runner.invoke(app, ["unrecovered", "--db", db], env={"COLUMNS": "140"}, catch_exceptions=False)
    assert "no timestamp" in listing.stdout and "1970" not in listing.stdout
    first = json.loads(runner.invoke(app, ["unrecovered", "--db", db, "-f", "json"]).stdout)[0]["conversation_id"]
    timeline = runner.invoke(app, ["triage", first, "--db", db], env={"COLUMNS": "140"}, catch_exceptions=False)
    assert "no timestamp" in timeline.stdout and "1970" not in timeline.stdout
