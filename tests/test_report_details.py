"""Issue 19's terminal details, through the CLI on real data (tau2-bench excerpts) and the demo's logs.

- the load table keeps file names readable (the folder once, names cut in the middle);
- lint explains its "+N more" rules;
- the audit's "significant in" column names weeks, not a wall of fragments;
- triage takes an unambiguous id prefix, and lists the candidates of an ambiguous one (exit 1);
- the Error Recovery Context does not say "Error: Error: ...";
- the review pack says what a parallel sibling of a failing call did.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

TAU2 = Path(__file__).resolve().parent / "fixtures" / "tau2"
FILES = sorted(TAU2.glob("*.json"))
SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
runner = CliRunner()


def _ids() -> list[str]:
    return [s["id"] for f in FILES for s in json.loads(f.read_text(encoding="utf-8"))["simulations"]]


@pytest.fixture()
def tau2_db(tmp_path: Path) -> str:
    db = str(tmp_path / "tau2.duckdb")
    res = runner.invoke(app, ["load", *map(str, FILES), "--db", db])
    assert res.exit_code == 0, res.output
    return db


def test_load_table_names_every_file_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # five files whose names differ only at the end, in a deep folder, on an 80-column terminal
    deep = tmp_path / "submissions" / "ironshell_ironforge_agent_runs" / "2026-03-23"
    deep.mkdir(parents=True)
    text = (SAMPLE_LOGS / "concierge.jsonl").read_text(encoding="utf-8").splitlines()
    names = [f"ironshell_ironforge_airline_trajectories_part_{i}.jsonl" for i in range(5)]
    for i, name in enumerate(names):
        (deep / name).write_text(text[i] + "\n", encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERMINAL_WIDTH", "80")
    res = runner.invoke(app, ["load", str(deep), "--db", str(tmp_path / "x.duckdb")])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"files under {deep.relative_to(tmp_path)}{os.sep}"  # the test runs in tmp_path
    rows = [line.split()[0] for line in lines if ".jsonl" in line and line != lines[0]]
    assert len(rows) == 5
    assert len(set(rows)) == 5  # each row tells its file apart
    for row, name in zip(rows, names):
        assert row == name or (row[-8:] == name[-8:] and "…" in row)
    assert all(len(line) <= 80 for line in lines)


def test_lint_explains_its_other_rules() -> None:
    res = runner.invoke(app, ["lint", str(SAMPLE_LOGS), "--db", ":memory:"])
    assert res.exit_code == 0, res.output
    rows = [line for line in res.stdout.splitlines() if "more " in line and line.strip()[:1].isdigit()]
    assert rows, res.stdout  # the demo's templates match advice rules beside the verdict's
    assert all("+" in row for row in rows)
    assert "+N more: N other rules matched" in " ".join(res.stdout.split())


def test_triage_takes_a_unique_prefix(tau2_db: str) -> None:
    ids = _ids()
    target = "896b43d5-963c-461a-bf9b-dc7ce16a7ff0"
    assert sum(i.startswith(target[:8]) for i in ids) == 1
    res = runner.invoke(app, ["triage", target[:8], "--db", tau2_db, "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["conversation_id"] == target


def test_triage_lists_the_candidates_of_an_ambiguous_prefix(tau2_db: str) -> None:
    ids = _ids()
    matching = sorted(i for i in ids if i.startswith("8"))
    assert len(matching) >= 2
    res = runner.invoke(app, ["triage", "8", "--db", tau2_db])
    assert res.exit_code == 1
    flat = " ".join(res.output.split())
    assert f"'8' is the start of {len(matching)} conversation ids" in flat
    for cid in matching:
        assert cid in flat
    assert "Traceback" not in res.output


def test_recovery_context_does_not_repeat_the_error_label(tau2_db: str) -> None:
    # a2bc35d4: medical triage, its first unrecovered error starts with "Error: Patient"
    res = runner.invoke(app, ["triage", "a2bc35d4", "--db", tau2_db, "--format", "json"])
    assert res.exit_code == 0, res.output
    first: dict[str, Any] = json.loads(res.stdout)["first_unrecovered"]
    assert first["error_message"].startswith("Error: ")
    context = first["recovery_context"]
    assert "Error: Error:" not in context
    assert f"Error: {first['error_message'][len('Error: '):]}" in context.splitlines()


def test_review_pack_tells_what_a_parallel_sibling_did(tau2_db: str, tmp_path: Path) -> None:
    # 1717074d (LangGraph agent): one step asks for five calls at once; some fail, others succeed
    out = tmp_path / "pack"
    res = runner.invoke(app, ["review", "sample", "--db", tau2_db, "--n", "100", "--seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    page = next((out / "conversations").glob("*1717074d*.md")).read_text(encoding="utf-8")
    afters = [line for line in page.splitlines() if line.startswith("After it, the model")]
    assert afters
    parallel = [line for line in afters if "in the same step (parallel calls) also called" in line]
    assert parallel, afters
    # a sibling's outcome is named, and "no further tool call" comes only after it
    for line in parallel:
        assert "→ ok" in line or "→ error" in line
        if "made no further tool call" in line:
            assert line.index("parallel calls") < line.index("made no further tool call")


@pytest.mark.parametrize("logs", [SAMPLE_LOGS, Path(__file__).resolve().parent / "fixtures" / "audit" / "cohorts.jsonl"])
def test_audit_significant_in_names_weeks(logs: Path) -> None:
    res = runner.invoke(app, ["audit", str(logs), "--db", ":memory:", "--format", "json"])
    doc = json.loads(res.stdout)
    table = runner.invoke(app, ["audit", str(logs), "--db", ":memory:"])
    short = {"median_tool_calls_per_prompt": "median", "p99_tool_calls_per_prompt": "p99", "recovery_rate": "recov",
             "conversation_recovery_rate": "conv", "replay_rate": "replay"}
    for agent in doc["agents"]:
        flagged = [(w["week"], [short[m] for m, c in w["changes"].items() if c["significant"]]) for w in agent["weeks"]]
        flagged = [(week, names) for week, names in flagged if names]
        row = next(line for line in table.stdout.splitlines() if line.strip().startswith(agent["agent"] + " "))
        if not flagged:
            assert row.rstrip().endswith("-")
        else:
            week, names = flagged[-1]
            assert f"{week} {', '.join(names)}" in row
            assert "_rate" not in row and "_per_prompt" not in row  # short names, not the JSON keys
