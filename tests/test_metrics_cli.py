"""``loopscope metrics`` through the CLI: sample_logs/EXPECTED.md figures, formats, filters, --by."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

runner = CliRunner()
SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
EXPECTED = SAMPLE_LOGS / "EXPECTED.md"

needs_samples = pytest.mark.skipif(not EXPECTED.exists(), reason="sample_logs/ not generated")


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def flat(text: str) -> str:
    return " ".join(text.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())


def expected_json(marker: str) -> Any:
    text = EXPECTED.read_text()
    block = text.split(f"<!-- {marker} -->", 1)[1]
    return json.loads(block.split("```json", 1)[1].split("```", 1)[0])


def expected_table(heading: str) -> list[list[str]]:
    rows: list[str] = []
    for line in EXPECTED.read_text().split(heading, 1)[1].splitlines():
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    return cells[2:]  # after the header and the |---| line


@needs_samples
def test_sample_logs_print_exactly_the_expected_figures() -> None:
    # A fresh folder (conftest chdirs into tmp): the default ./loopscope.duckdb is created.
    result = invoke("metrics", str(SAMPLE_LOGS), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == expected_json("metrics-json")
    assert Path("loopscope.duckdb").exists()

    # Again on the same database: nothing is loaded twice, same figures.
    again = invoke("metrics", str(SAMPLE_LOGS), "--format", "json")
    assert json.loads(again.stdout) == expected_json("metrics-json")

    table = invoke("metrics", str(SAMPLE_LOGS)).stdout
    want = expected_json("metrics-json")
    assert re.search(r"prompts\s+41\n", table)
    assert re.search(r"open prompts \(no loop_exit\)\s+1\n", table)
    assert re.search(r"p99 tool calls / prompt\s+16\.6\n", table)
    assert re.search(r"recovery rate\s+53\.8%\n", table)
    assert re.search(r"replay rate\s+2\.6%\n", table)
    assert want["tool_calls"] == 114

    rows = list(csv.DictReader(io.StringIO(invoke("metrics", str(SAMPLE_LOGS), "-f", "csv").stdout)))
    assert len(rows) == 1
    assert {k: rows[0][k] for k in ("prompts", "errors", "p99_tool_calls_per_prompt", "recovery_rate")} == {
        "prompts": "41",
        "errors": "26",
        "p99_tool_calls_per_prompt": "16.6",
        "recovery_rate": "0.5384615384615384",
    }


@needs_samples
def test_sample_logs_by_week_and_by_mode_match_expected() -> None:
    weeks = json.loads(invoke("metrics", str(SAMPLE_LOGS), "--by", "week", "--db", ":memory:", "-f", "json").stdout)
    got = [[w["group"], str(w["prompts"]), str(w["tool_calls"]), str(w["errors"]), str(w["recovered_errors"]), str(w["replays"])] for w in weeks]
    assert got == expected_table("### By ISO week")

    invoke("load", str(SAMPLE_LOGS))
    for mode, prompts, calls, errors, recovered, _ in expected_table("### By mode"):
        m = json.loads(invoke("metrics", "--tag", f"mode={mode}", "-f", "json").stdout)
        assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (
            int(prompts),
            int(calls),
            int(errors.split()[0]),
            int(recovered),
        ), mode


def rec(kind: str, conv: str, prompt: str, ts: str, agent: str, **fields: Any) -> str:
    base: dict[str, Any] = {"v": 1, "kind": kind, "ts": ts, "conversation_id": conv, "prompt_id": prompt, "agent": agent}
    if kind == "tool_call":
        is_error = fields.get("is_error", False)
        base.update(tool_call_id=fields.pop("id"), tool_name="search", step=0, outcome="permanent_fail" if is_error else "ok", is_error=is_error, attempts=1, replayed=False)
    else:
        base.update(exit_reason="end_turn")
    base.update(fields)
    return json.dumps(base) + "\n"


@pytest.fixture
def small_logs(tmp_path: Path) -> tuple[Path, Path]:
    """Two files with known figures.

    a.jsonl (support, 2026-11-16 = W47 Monday): c1/p1 error at step 0, success at
    step 1, end_turn (recovered); c1/p2 no tool calls, end_turn.
    b.jsonl (billing, 2026-11-09 = W46): c2/p1 two calls with the same id (one
    replay), max_tokens; c2/p2 an error and no exit (open).
    """
    a = tmp_path / "a.jsonl"
    a.write_text(
        rec("tool_call", "c1", "p1", "2026-11-16T09:00:00Z", "support", id="t1", is_error=True)
        + rec("tool_call", "c1", "p1", "2026-11-16T09:00:01Z", "support", id="t2", step=1)
        + rec("loop_exit", "c1", "p1", "2026-11-16T09:00:02Z", "support")
        + rec("loop_exit", "c1", "p2", "2026-11-16T10:00:00Z", "support")
    )
    b = tmp_path / "b.jsonl"
    b.write_text(
        rec("tool_call", "c2", "p1", "2026-11-09T09:00:00Z", "billing", id="t1")
        + rec("tool_call", "c2", "p1", "2026-11-09T09:00:01Z", "billing", id="t1")
        + rec("loop_exit", "c2", "p1", "2026-11-09T09:00:02Z", "billing", exit_reason="max_tokens")
        + rec("tool_call", "c2", "p2", "2026-11-09T11:00:00+01:00", "billing", id="t9", is_error=True)
    )
    return a, b


def test_metrics_json_figures_and_filters(small_logs: tuple[Path, Path]) -> None:
    a, b = small_logs
    assert invoke("load", str(a), str(b)).exit_code == 0
    m = json.loads(invoke("metrics", "-f", "json").stdout)
    assert m == {
        "prompts": 4,
        "open_prompts": 1,
        "tool_calls": 5,
        "median_tool_calls_per_prompt": 1.5,  # n = 0, 1, 2, 2
        "p99_tool_calls_per_prompt": 2.0,
        "errors": 2,
        "recovered_errors": 1,
        "recovery_rate": 0.5,
        "resolved_later_errors": 0,  # c2/p2's error is in the conversation's last prompt
        "conversation_recovery_rate": 0.5,
        "replays": 1,
        "replay_rate": 0.2,
        "error_classes": {"recovered": 1, "open": 1, "aborted": 0, "gave_up": 0},
    }
    support = json.loads(invoke("metrics", "--agent", "support", "-f", "json").stdout)
    assert (support["prompts"], support["tool_calls"], support["errors"], support["replays"]) == (2, 2, 1, 0)
    assert support["median_tool_calls_per_prompt"] == 1.0
    since = json.loads(invoke("metrics", "--since", "2026-11-16", "-f", "json").stdout)
    assert since["prompts"] == 2
    until = json.loads(invoke("metrics", "--until", "2026-11-09T10:00:00Z", "-f", "json").stdout)
    assert (until["prompts"], until["replays"], until["replay_rate"]) == (1, 1, 0.5)
    assert until["errors"] == 0 and until["recovery_rate"] is None
    # An agent no prompt has is a user error that lists the agents there are (not an all-zero table).
    none = invoke("metrics", "--agent", "nobody", "-f", "json")
    assert none.exit_code == 1 and none.stdout == ""
    assert "no prompt has agent 'nobody'" in none.stderr and "billing, support" in none.stderr
    # A window with no prompt of an existing agent is not an error: zeros, no rates.
    empty = json.loads(invoke("metrics", "--agent", "support", "--until", "2026-11-01", "-f", "json").stdout)
    assert empty["prompts"] == 0 and empty["median_tool_calls_per_prompt"] is None and empty["replay_rate"] is None


def test_metrics_by_day_week_agent(small_logs: tuple[Path, Path]) -> None:
    a, b = small_logs
    invoke("load", str(a), str(b))
    weeks = json.loads(invoke("metrics", "--by", "week", "-f", "json").stdout)
    assert [(w["group"], w["prompts"], w["errors"], w["replays"]) for w in weeks] == [("2026-W46", 2, 1, 1), ("2026-W47", 2, 1, 0)]
    days = json.loads(invoke("metrics", "--by", "day", "-f", "json").stdout)
    assert [d["group"] for d in days] == ["2026-11-09", "2026-11-16"]
    agents = list(csv.DictReader(io.StringIO(invoke("metrics", "--by", "agent", "-f", "csv").stdout)))
    assert [(r["group"], r["prompts"], r["recovery_rate"]) for r in agents] == [("billing", "2", "0.0"), ("support", "2", "1.0")]
    table = invoke("metrics", "--by", "agent").stdout
    assert re.search(r"billing\s+2\s+1\s+3\s+1\.5", table)
    bad = invoke("metrics", "--by", "month")
    assert bad.exit_code == 1 and "--by 'month' is not a grouping" in flat(bad.output)


def test_paths_limit_metrics_to_those_files(small_logs: tuple[Path, Path]) -> None:
    a, b = small_logs
    invoke("load", str(a), "--db", "both.duckdb")
    only_b = json.loads(invoke("metrics", str(b), "--db", "both.duckdb", "-f", "json").stdout)
    assert (only_b["prompts"], only_b["tool_calls"], only_b["replays"]) == (2, 3, 1)
    everything = json.loads(invoke("metrics", "--db", "both.duckdb", "-f", "json").stdout)
    assert everything["prompts"] == 4
    in_memory = json.loads(invoke("metrics", str(a), "--db", ":memory:", "-f", "json").stdout)
    assert (in_memory["prompts"], in_memory["recovered_errors"]) == (2, 1)
    assert not Path("loopscope.duckdb").exists()


def test_metrics_user_errors() -> None:
    bad_since = invoke("metrics", "--since", "last tuesday")
    assert bad_since.exit_code == 1 and "is not a date or timestamp" in flat(bad_since.output)
    missing = invoke("metrics", "nowhere/")
    assert missing.exit_code == 1 and "no such file or directory: nowhere" in flat(missing.output)
    assert "Traceback" not in missing.output


def test_metrics_see_records_written_after_the_last_load(small_logs: tuple[Path, Path]) -> None:
    # prompt_facts is rebuilt by load; rows that reach the store another way
    # make it stale, and metrics must notice rather than report old figures.
    import duckdb

    a, _ = small_logs
    invoke("load", str(a), "--db", "s.duckdb")
    con = duckdb.connect("s.duckdb")
    con.execute(
        "INSERT INTO loop_exits (seq, v, ts, conversation_id, prompt_id, agent, exit_reason) "
        "VALUES (1000, 1, TIMESTAMP '2026-11-17 00:00:00', 'c7', 'p1', 'support', 'end_turn')"
    )
    con.close()
    m = json.loads(invoke("metrics", "--db", "s.duckdb", "-f", "json").stdout)
    assert m["prompts"] == 3


@pytest.mark.parametrize("by", ["agent", "tool"])
def test_grouped_tables_keep_every_figure_on_a_narrow_terminal(by: str, tmp_path: Path) -> None:
    # 80 columns is narrower than the grouped tables: rich used to cut p99 ("18…") and drop the
    # replay columns without a word, and fold tool names ("check_availabilit" / "y")
    db = str(tmp_path / "s.duckdb")
    text = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["metrics", str(SAMPLE_LOGS), "--db", db, "--by", by])
    figures = CliRunner().invoke(app, ["metrics", "--db", db, "--by", by, "--format", "json"])
    assert text.exit_code == 0 and figures.exit_code == 0, text.output + figures.output
    assert "…" not in text.stdout
    lines = text.stdout.split("\n\n")[0].splitlines()  # the figures (--by tool: then its error templates)
    assert "replays" in lines[0]
    for row in json.loads(figures.stdout):
        name = row["tool_name"] if by == "tool" else row["group"]
        (line,) = [x for x in lines if x.split() and x.split()[0] == name]  # the whole name, on one line
        assert str(row["replays"]) in line.split()[1:]


def test_the_audit_keeps_every_figure_on_a_narrow_terminal(tmp_path: Path) -> None:
    # at 80 columns the audit's figure tables used to read "83.…", "+26.…", "p=…"
    res = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["audit", str(SAMPLE_LOGS), "--db", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 0, res.output
    figures_part = res.stdout.split("Most frequent error template")[0]  # long texts after it may be cut on purpose
    assert "…" not in figures_part
    assert "83.3%" in figures_part and "+26.2pt p=.31" in figures_part  # sample_logs: the last week, 2026-W47
