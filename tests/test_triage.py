"""``loopscope triage`` and ``loopscope unrecovered`` on hand-written logs with known answers.

Each conversation below is built to show one rule of docs/records.md
("Incident analysis" and the error classes); the expected answers are
written out by hand next to it.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

T0 = dt.datetime(2026, 11, 20, 10, 0, 0)
RUNNER = CliRunner()


def _ts(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def call(conv: str, prompt: str, step: int, tcid: str, tool: str, sec: float, *, error: str | None = None,
         fp: str | None = "fp-default", replayed: bool = False, agent: str = "support",
         tags: dict[str, str] | None = None, outcome: str | None = None, error_type: str | None = None,
         attempts: int = 1) -> dict[str, Any]:
    """One v1 tool_call record; ``error`` set means is_error with that message."""
    return {
        "v": 1, "kind": "tool_call", "ts": _ts(sec), "conversation_id": conv, "prompt_id": prompt,
        "agent": agent, "trace_id": None, "span_id": None, "tags": tags or {"deploy": "v1"},
        "tool_call_id": tcid, "tool_name": tool, "step": step, "input_shape": {"city": "string"},
        "args_fingerprint": fp, "outcome": outcome or ("permanent_fail" if error else "ok"),
        "is_error": error is not None, "attempts": attempts, "latency_ms": 12.5, "error_type": error_type,
        "error_message": error, "replayed": replayed,
    }


def exit_(conv: str, prompt: str, reason: str, sec: float, *, agent: str = "support",
          tags: dict[str, str] | None = None, max_tool_calls: int | None = 10) -> dict[str, Any]:
    """One v1 loop_exit record."""
    return {
        "v": 1, "kind": "loop_exit", "ts": _ts(sec), "conversation_id": conv, "prompt_id": prompt,
        "agent": agent, "trace_id": None, "span_id": None, "tags": tags or {"deploy": "v1"},
        "exit_reason": reason, "steps": 3, "tool_calls": 2, "tool_errors": 1, "max_tool_calls": max_tool_calls,
        "input_tokens": 100, "output_tokens": 20, "duration_ms": 900.0, "error_type": None, "error_message": None,
    }


HOSTILE = "\x1b[31mred[/] [bold]fake markup[/bold] \x07bell"

RECORDS: list[dict[str, Any]] = [
    # recov: the error at step 0 is followed by a success at step 1 and a normal exit -> recovered.
    call("recov", "p1", 0, "r-1", "search", 0, error="no such city 'Pari'", fp="A"),
    call("recov", "p1", 1, "r-2", "search", 1, fp="B"),
    exit_("recov", "p1", "end_turn", 2),
    # order: prompt pA starts first, so its step-2 error comes before pB's step-0 error;
    # inside pA two parallel errors at step 2, the earlier ts wins.
    call("order", "pA", 0, "o-1", "lookup", 10, fp="L0"),
    call("order", "pA", 2, "o-3", "lookup", 12.5, error="second parallel error", fp="L2"),
    call("order", "pA", 2, "o-2", "lookup", 12, error="first parallel error", fp="L1"),
    exit_("order", "pA", "end_turn", 13),
    call("order", "pB", 0, "o-4", "pay", 20, error="card declined", fp="P"),
    exit_("order", "pB", "max_tokens", 21),
    # aborted: a later success does not help when the exit is abnormal.
    call("aborted", "p1", 0, "a-1", "book", 30, error="room sold out", fp="R", agent="billing",
         tags={"deploy": "v2"}),
    call("aborted", "p1", 1, "a-2", "book", 31, fp="S", agent="billing", tags={"deploy": "v2"}),
    exit_("aborted", "p1", "budget_exceeded", 32, agent="billing", tags={"deploy": "v2"}, max_tool_calls=2),
    # open: no loop_exit at all.
    call("open", "p1", 0, "op-1", "search", 40, error="upstream 503", fp="A", outcome="transient_fail",
         error_type="ServiceUnavailable", attempts=3),
    call("open", "p1", 1, "op-2", "search", 41, fp="A"),
    # prev: the same search (fingerprint P) failed, then worked, then failed for good in p2.
    call("prev", "p1", 0, "pv-1", "lookup", 50, error="timeout after 30 s", fp="P"),
    call("prev", "p1", 1, "pv-2", "lookup", 51, fp="P"),
    call("prev", "p1", 1, "pv-3", "lookup", 51.5, fp="other"),
    exit_("prev", "p1", "end_turn", 52),
    call("prev", "p2", 0, "pv-4", "lookup", 60, error="timeout after 30 s", fp="P"),
    exit_("prev", "p2", "end_turn", 61),
    # spin: four identical failures (loop of 4, 3 redundant), three with no fingerprint and the same
    # message (loop of 3), two more (not a loop); a success at the end recovers all of them.
    *[call("spin", "p1", i, f"s-{i}", "fetch", 70 + i, error="timeout", fp="F") for i in range(4)],
    *[call("spin", "p1", 4 + i, f"sn-{i}", "parse", 75 + i, error="bad json", fp=None) for i in range(3)],
    *[call("spin", "p1", 7 + i, f"s2-{i}", "fetch", 78 + i, error="timeout", fp="G") for i in range(2)],
    call("spin", "p1", 9, "s-ok", "fetch", 80, fp="H"),
    exit_("spin", "p1", "end_turn", 81),
    # replay: r1 ran in p1, ran again unflagged in p2 after a restart (double execution), then was
    # short-circuited; a replayed error is not an error.
    call("replay", "p1", 0, "charge-1", "charge", 90, fp="C"),
    exit_("replay", "p1", "end_turn", 91),
    call("replay", "p2", 0, "charge-1", "charge", 100, fp="C"),
    call("replay", "p2", 0, "charge-1", "charge", 101, fp="C", replayed=True, error="already charged"),
    exit_("replay", "p2", "end_turn", 102),
    # dup: the same successful charge repeated under a new id in the same prompt.
    call("dup", "p1", 0, "d-1", "charge", 110, fp="D"),
    call("dup", "p1", 1, "d-2", "charge", 111, fp="D"),
    exit_("dup", "p1", "end_turn", 112),
    # hostile: the error text tries to recolour the terminal and inject markup.
    call("hostile", "p1", 0, "h-1", "search", 120, error=HOSTILE, fp="X"),
    exit_("hostile", "p1", "end_turn", 121),
]


@pytest.fixture()
def logs(tmp_path: Path) -> Path:
    path = tmp_path / "logs" / "agent.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return path


def run(*args: str) -> Any:
    result = RUNNER.invoke(app, list(args), catch_exceptions=False)
    return result


def triage_json(logs: Path, conv: str) -> dict[str, Any]:
    result = run("triage", conv, str(logs), "--db", "t.duckdb", "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


EXPECTED_FIRST = {
    "recov": None,
    "order": ("pA", 2, "o-2", "lookup", "gave_up", "first parallel error"),
    "aborted": ("p1", 0, "a-1", "book", "aborted", "room sold out"),
    "open": ("p1", 0, "op-1", "search", "open", "upstream 503"),
    "prev": ("p2", 0, "pv-4", "lookup", "gave_up", "timeout after 30 s"),
    "spin": None,
    "replay": None,
    "dup": None,
    "hostile": ("p1", 0, "h-1", "search", "gave_up", HOSTILE),
}


@pytest.mark.parametrize("conv", sorted(EXPECTED_FIRST))
def test_first_unrecovered_json(logs: Path, conv: str) -> None:
    doc = triage_json(logs, conv)
    assert doc["conversation_id"] == conv
    first = doc["first_unrecovered"]
    expected = EXPECTED_FIRST[conv]
    if expected is None:
        assert first is None
        return
    got = (first["prompt_id"], first["step"], first["tool_call_id"], first["tool_name"], first["class"],
           first["error_message"])
    assert got == expected
    assert isinstance(first["previous_attempts"], list)
    # exactly one call in the timeline carries the marker, and it is this one
    marked = [c["tool_call_id"] for p in doc["prompts"] for s in p["steps"] for c in s["tool_calls"]
              if c["first_unrecovered"]]
    assert marked == [expected[2]]


def test_timeline_shape_and_classes(logs: Path) -> None:
    doc = triage_json(logs, "order")
    assert [p["prompt_id"] for p in doc["prompts"]] == ["pA", "pB"]
    pa = doc["prompts"][0]
    assert [s["step"] for s in pa["steps"]] == [0, 2]
    assert [c["tool_call_id"] for c in pa["steps"][1]["tool_calls"]] == ["o-2", "o-3"]
    assert pa["loop_exit"]["exit_reason"] == "end_turn" and pa["loop_exit"]["normal"] is True
    pb = doc["prompts"][1]
    assert pb["loop_exit"]["exit_reason"] == "max_tokens" and pb["loop_exit"]["normal"] is False
    assert pb["steps"][0]["tool_calls"][0]["class"] == "aborted"
    assert doc["error_classes"] == {"recovered": 0, "open": 0, "aborted": 1, "gave_up": 2}
    ok = pa["steps"][0]["tool_calls"][0]
    assert (ok["outcome"], ok["is_error"], ok["attempts"], ok["latency_ms"], ok["class"]) == ("ok", False, 1, 12.5, None)

    open_doc = triage_json(logs, "open")
    assert open_doc["prompts"][0]["is_open"] is True and open_doc["prompts"][0]["loop_exit"] is None
    err = open_doc["prompts"][0]["steps"][0]["tool_calls"][0]
    assert (err["outcome"], err["attempts"], err["error_type"]) == ("transient_fail", 3, "ServiceUnavailable")


def test_previous_attempts_same_tool_and_fingerprint(logs: Path) -> None:
    first = triage_json(logs, "prev")["first_unrecovered"]
    attempts = [(a["tool_call_id"], a["is_error"], a["error_message"]) for a in first["previous_attempts"]]
    # pv-3 has another fingerprint: not the same operation
    assert attempts == [("pv-1", True, "timeout after 30 s"), ("pv-2", False, None)]
    ctx = first["recovery_context"]
    assert ctx.startswith("[Error Recovery Context]\nOperation: lookup(city)\nError: timeout after 30 s\n")
    assert "Previous attempts (this conversation): 2" in ctx
    assert "1. lookup(same arguments) [prompt p1, step 0] → timeout after 30 s" in ctx
    assert "2. lookup(same arguments) [prompt p1, step 1] → ok" in ctx
    # the catalog's timeout entry (analyses/hints.py) supplies the suggestions
    assert first["recovery_pattern"] == "retry_unchanged"
    assert first["suggestions"] and all(f"  - {s}" in ctx for s in first["suggestions"])
    assert "lookup" in first["suggestions"][0]


def test_retry_loops(logs: Path) -> None:
    loops = triage_json(logs, "spin")["retry_loops"]
    got = sorted((lp["tool_name"], lp["args_fingerprint"], lp["calls"], lp["redundant_calls"]) for lp in loops)
    assert got == [("fetch", "F", 4, 3), ("parse", None, 3, 2)]
    fetch = next(lp for lp in loops if lp["tool_name"] == "fetch")
    assert fetch["tool_call_ids"] == ["s-0", "s-1", "s-2", "s-3"]
    assert (fetch["first_step"], fetch["last_step"], fetch["error_message"]) == (0, 3, "timeout")
    assert triage_json(logs, "prev")["retry_loops"] == []


def test_replays_and_double_execution(logs: Path) -> None:
    doc = triage_json(logs, "replay")
    got = [(r["tool_call_id"], r["prompt_id"], r["run"], r["runs"], r["replayed"], r["kind"]) for r in doc["replays"]]
    assert got == [
        ("charge-1", "p2", 2, 3, False, "double_execution"),
        ("charge-1", "p2", 3, 3, True, "short_circuited"),
    ]
    # the replayed error is a replay, not an error: no class, nothing unrecovered
    calls = [c for p in doc["prompts"] for s in p["steps"] for c in s["tool_calls"]]
    assert [(c["is_replay"], c["class"]) for c in calls] == [(False, None), (True, None), (True, None)]
    assert doc["error_classes"] == {"recovered": 0, "open": 0, "aborted": 0, "gave_up": 0}


def test_duplicate_execution_by_fingerprint(logs: Path) -> None:
    dups = triage_json(logs, "dup")["duplicate_executions"]
    assert [(d["original_tool_call_id"], d["duplicate_tool_call_ids"], d["duplicates"]) for d in dups] == [
        ("d-1", ["d-2"], 1)
    ]
    # a replay by id is not a duplicate by fingerprint
    assert triage_json(logs, "replay")["duplicate_executions"] == []


def test_table_render_marks_classes_and_first_unrecovered(logs: Path) -> None:
    result = run("triage", "order", str(logs), "--db", "t.duckdb")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "prompt pA" in out and "prompt pB" in out
    assert "[gave_up]" in out and "[aborted]" in out
    assert re.search(r"o-2 \[gave_up\]\s+◀ first unrecovered", out)
    assert "First unrecovered error" in out and "first parallel error" in out
    assert "exit max_tokens (abnormal)" in out
    spin = run("triage", "spin", "--db", "t.duckdb").stdout
    assert "Retry loops" in spin and "No unrecovered error" in spin
    replay = run("triage", "replay", "--db", "t.duckdb").stdout
    assert "replay: EXECUTED AGAIN" in replay and "double execution" in replay and "short-circuited" in replay


def test_untrusted_text_is_inert(logs: Path) -> None:
    result = run("triage", "hostile", str(logs), "--db", "t.duckdb")
    assert result.exit_code == 0
    out = result.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred[/] [bold]fake markup[/bold] \\x07bell" in out
    listing = run("unrecovered", "--db", "t.duckdb").stdout
    assert "\x1b" not in listing and "\\x1b[31mred" in listing
    # JSON keeps the exact text the model saw
    assert triage_json(logs, "hostile")["first_unrecovered"]["error_message"] == HOSTILE


def test_triage_csv(logs: Path) -> None:
    result = run("triage", "order", str(logs), "--db", "t.duckdb", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["prompt_id"], r["tool_call_id"], r["class"], r["first_unrecovered"]) for r in rows] == [
        ("pA", "o-1", "", "False"), ("pA", "o-2", "gave_up", "True"), ("pA", "o-3", "gave_up", "False"),
        ("pB", "o-4", "aborted", "False"),
    ]


def test_unknown_conversation_hints(logs: Path) -> None:
    result = run("triage", "prevv", str(logs), "--db", "t.duckdb")
    assert result.exit_code == 1
    assert "conversation 'prevv' is not in the database" in result.stderr
    assert "did you mean 'prev'" in result.stderr
    far = run("triage", "zzzzzzzz", "--db", "t.duckdb")
    assert far.exit_code == 1 and "loopscope unrecovered" in far.stderr
    empty = run("triage", "anything", "--db", "empty.duckdb")
    assert empty.exit_code == 1 and "holds no records" in empty.stderr
    assert "Traceback" not in result.output + far.output + empty.output


def unrecovered_json(*args: str) -> list[dict[str, Any]]:
    result = run("unrecovered", "--db", "t.duckdb", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_unrecovered_lists_exactly_the_conversations_with_one(logs: Path) -> None:
    result = run("unrecovered", str(logs), "--db", "t.duckdb", "--format", "json")
    rows = json.loads(result.stdout)
    # newest conversation (last record) first
    assert [r["conversation_id"] for r in rows] == ["hostile", "prev", "open", "aborted", "order"]
    for r in rows:
        expected = EXPECTED_FIRST[r["conversation_id"]]
        assert (r["prompt_id"], r["step"], r["tool_call_id"], r["tool_name"], r["class"], r["error_message"]) == expected
    by_id = {r["conversation_id"]: r for r in rows}
    assert by_id["order"]["n_unrecovered"] == 3
    assert by_id["prev"]["previous_attempts"] == 2
    # every conversation whose triage shows a first unrecovered error is listed, and no other
    assert set(by_id) == {c for c, e in EXPECTED_FIRST.items() if e is not None}


def test_unrecovered_filters(logs: Path) -> None:
    run("load", str(logs), "--db", "t.duckdb")
    ids = lambda rows: [r["conversation_id"] for r in rows]  # noqa: E731
    assert ids(unrecovered_json("--class", "aborted")) == ["aborted"]
    assert ids(unrecovered_json("--class", "open", "--class", "aborted")) == ["open", "aborted"]
    assert ids(unrecovered_json("--tool", "lookup")) == ["prev", "order"]
    assert ids(unrecovered_json("--agent", "billing")) == ["aborted"]
    assert ids(unrecovered_json("--tag", "deploy=v2")) == ["aborted"]
    assert ids(unrecovered_json("--limit", "2")) == ["hostile", "prev"]
    # prompts that start before 10:00:45 only: prev's p2 (10:01:00) is out, its p1 recovered
    assert ids(unrecovered_json("--until", "2026-11-20T10:00:45Z")) == ["open", "aborted", "order"]
    # order's pA starts before --since: its first unrecovered error within the selection is pB's
    since = unrecovered_json("--since", "2026-11-20T10:00:15Z", "--until", "2026-11-20T10:00:25Z")
    assert [(r["conversation_id"], r["prompt_id"], r["class"]) for r in since] == [("order", "pB", "aborted")]
    assert unrecovered_json("--class", "gave_up", "--tool", "pay") == []


def test_unrecovered_table_and_csv(logs: Path) -> None:
    table = run("unrecovered", str(logs), "--db", "t.duckdb")
    assert table.exit_code == 0
    assert "5 conversations with an unrecovered tool error" in table.stdout
    assert "first parallel error" in table.stdout
    rows = list(csv.DictReader(io.StringIO(run("unrecovered", "--db", "t.duckdb", "--format", "csv").stdout)))
    assert [r["conversation_id"] for r in rows] == ["hostile", "prev", "open", "aborted", "order"]
    assert rows[-1]["class"] == "gave_up" and rows[-1]["tool_call_id"] == "o-2"
    # a cut list says how many there are in all; a limit the list does not reach says nothing more
    cut = run("unrecovered", "--db", "t.duckdb", "--limit", "2")
    assert "2 of 5 conversations with an unrecovered tool error" in cut.stdout
    cut_filtered = run("unrecovered", "--db", "t.duckdb", "--limit", "1", "--tool", "lookup")
    assert "1 of 2 conversations with an unrecovered tool error" in cut_filtered.stdout
    whole = run("unrecovered", "--db", "t.duckdb", "--limit", "5").stdout
    assert "5 conversations with an unrecovered tool error" in whole and " of 5 " not in whole
    none = run("unrecovered", "--db", "t.duckdb", "--class", "open", "--agent", "billing")
    assert none.exit_code == 0 and "No conversation in the selection" in none.stdout


def test_unrecovered_bad_options(logs: Path) -> None:
    bad_class = run("unrecovered", "--db", "t.duckdb", "--class", "recovered")
    assert bad_class.exit_code == 1 and "gave_up" in bad_class.stderr
    bad_since = run("unrecovered", "--db", "t.duckdb", "--since", "yesterday")
    assert bad_since.exit_code == 1 and "--since" in bad_since.stderr
    bad_limit = run("unrecovered", "--db", "t.duckdb", "--limit", "-1")
    assert bad_limit.exit_code == 1
