"""``loopscope compare`` on logs with known answers (tests/fixtures/audit/cohorts.jsonl).

Blind sets (W45, W46): 12 errors / 3 recovered, 33 tool calls / 1 replay, 20 prompts each.
Corrective sets (2 in W47): 9 errors / 8 recovered, 35 tool calls / 1 replay, 19 prompts each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.analyses import stats
from loopscope.analyses.compare import parse_cohort
from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.store import connect
from loopscope.cli.app import app

FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "cohorts.jsonl"
runner = CliRunner()


@pytest.fixture
def db(loaded_store) -> Path:  # noqa: ANN001  (tests/conftest.py: the fixture loaded once, copied per test)
    return loaded_store(FIXTURE)


def test_compare_blind_vs_corrective_json(db: Path) -> None:
    res = runner.invoke(app, ["compare", "--db", str(db), "--a", "tag:mode=blind", "--b", "tag:mode=corrective", "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["a"]["errors"] == 24 and out["a"]["recovered_errors"] == 6
    assert out["b"]["errors"] == 18 and out["b"]["recovered_errors"] == 16
    assert out["a"]["prompts"] == 40 and out["b"]["prompts"] == 38
    assert out["a"]["open_prompts"] == 2 and out["b"]["open_prompts"] == 0
    m = {row["metric"]: row for row in out["metrics"]}
    assert m["recovery_rate"]["a"] == pytest.approx(6 / 24)
    assert m["recovery_rate"]["b"] == pytest.approx(16 / 18)
    assert m["recovery_rate"]["difference"] == pytest.approx(16 / 18 - 6 / 24)
    expected = stats.two_proportion_test(6, 24, 16, 18)
    assert m["recovery_rate"]["test"]["p_value"] == pytest.approx(expected.p_value)
    assert m["recovery_rate"]["significant"] is True
    assert m["replay_rate"]["a"] == pytest.approx(2 / 66) and m["replay_rate"]["b"] == pytest.approx(2 / 70)
    assert m["replay_rate"]["significant"] is False
    assert m["median_tool_calls_per_prompt"]["test"]["test"] == stats.MANN_WHITNEY
    # blind prompt sizes: 2x16+... ; median 2 in both
    assert m["median_tool_calls_per_prompt"]["a"] == 2 and m["median_tool_calls_per_prompt"]["b"] == 2
    assert out["overlap_prompts"] == 0 and res.stderr == ""


def test_compare_table_shows_significance(db: Path) -> None:
    res = runner.invoke(app, ["compare", "--db", str(db), "--a", "week:2026-W46", "--b", "week:2026-W47"])
    assert res.exit_code == 0, res.output
    line = next(l for l in res.stdout.splitlines() if "recovery_rate" in l)
    assert "25.0%" in line and "88.9%" in line and "+63.9 pts" in line and "yes" in line


def test_compare_csv(db: Path) -> None:
    res = runner.invoke(app, ["compare", "--db", str(db), "--a", "agent:researcher,week:2026-W45", "--b", "agent:researcher", "--format", "csv"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "metric,a,b,difference,test,p_value,significant"
    prompts = next(l for l in lines if l.startswith("prompts,"))
    assert prompts.startswith("prompts,2,8,6")


def test_compare_file_cohort(db: Path) -> None:
    res = runner.invoke(app, ["compare", "--db", str(db), "--a", f"file:{FIXTURE}", "--b", "tag:deploy=v2", "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["a"]["prompts"] == 78 and out["b"]["prompts"] == 38
    assert out["overlap_prompts"] == 38
    assert "38 prompt(s) are in both cohorts" in " ".join(res.stderr.split())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mode=blind", "is not a cohort term"),
        ("colour:red", "is not a cohort term"),
        ("week:2026-47", "is not an ISO week"),
        ("week:2026-W46,since:2026-11-01", "already set"),
        ("since:yesterday", "is not a date"),
        ("tag:mode", "is not KEY=VALUE"),
        ("file:/nowhere/x.jsonl", "matches no loaded file"),
        ("tag:mode=nothing", "selects no prompt"),
    ],
)
def test_compare_bad_specs_are_user_errors(db: Path, spec: str, message: str) -> None:
    res = runner.invoke(app, ["compare", "--db", str(db), "--a", spec, "--b", "tag:mode=blind"])
    assert res.exit_code == 1
    assert message in " ".join(res.output.split())
    assert "Traceback" not in res.output


def test_parse_cohort_terms() -> None:
    con = connect(":memory:")
    sel = parse_cohort(["agent:a, agent:b", "tag:k=v", "since:2026-11-01", "until:2026-11-08T12:00:00Z"], con)
    assert sel.agents == ("a", "b") and sel.tags == (("k", "v"),)
    assert sel.since.isoformat() == "2026-11-01T00:00:00" and sel.until.isoformat() == "2026-11-08T12:00:00"
    with pytest.raises(LoopscopeError):
        parse_cohort(["  ,  "], con)


SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"


def test_compare_demo_blind_vs_corrective_on_sample_logs() -> None:
    # sample_logs/EXPECTED.md "By mode": blind 7/15 recovered, corrective 7/9.
    res = runner.invoke(app, ["compare", str(SAMPLE_LOGS), "--db", ":memory:", "--a", "tag:mode=blind",
                              "--b", "tag:mode=corrective", "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (out["a"]["prompts"], out["a"]["tool_calls"], out["a"]["errors"], out["a"]["recovered_errors"]) == (17, 41, 15, 7)
    assert (out["b"]["prompts"], out["b"]["tool_calls"], out["b"]["errors"], out["b"]["recovered_errors"]) == (22, 71, 9, 7)
    rec = {m["metric"]: m for m in out["metrics"]}["recovery_rate"]
    assert rec["b"] > rec["a"] and rec["difference"] == pytest.approx(7 / 9 - 7 / 15)
    # the demo is small: the difference is real in the data but not significant at 0.05
    assert rec["test"]["p_value"] == pytest.approx(stats.two_proportion_test(7, 15, 7, 9).p_value)
    assert rec["significant"] is False


def test_compare_bad_spec_fails_before_loading(tmp_path: Path) -> None:
    """The cohort syntax is checked before PATHs are loaded: the error names the term, not the missing file."""
    res = runner.invoke(app, ["compare", str(tmp_path / "missing.jsonl"), "--db", ":memory:",
                              "--a", "colour:red", "--b", "tag:mode=blind"])
    assert res.exit_code == 1 and "is not a cohort term" in " ".join(res.output.split())


@pytest.mark.parametrize("width", [72, 80, 100])
def test_compare_table_keeps_every_figure_name_whole(db: Path, width: int) -> None:
    # One vocabulary: the terminal table names each figure exactly as JSON does. At 100 columns
    # rich used to cut them ("median_tool_calls_pe…", "conversation_recover…").
    names = [m["metric"] for m in json.loads(runner.invoke(
        app, ["compare", "--db", str(db), "--a", "tag:mode=blind", "--b", "tag:mode=corrective", "--format", "json"]
    ).stdout)["metrics"]]
    res = runner.invoke(app, ["compare", "--db", str(db), "--a", "tag:mode=blind", "--b", "tag:mode=corrective"],
                        env={"COLUMNS": str(width)})
    assert res.exit_code == 0, res.output
    first_cells = [re.split(r"[│┃]", line.strip("│ "))[0].strip() for line in res.stdout.splitlines() if "│" in line]
    assert [c for c in first_cells if c] == names
    assert "…" not in res.stdout


def test_compare_file_term_outside_the_paths_given(tmp_path: Path) -> None:
    # A file loaded earlier but not among this command's PATHs: the cohorts lie
    # within the PATHs, so the term would select nothing; say why, not "selects no prompt".
    for name in ("back_office.jsonl", "concierge.jsonl"):
        (tmp_path / name).write_bytes((SAMPLE_LOGS / name).read_bytes())
    db = str(tmp_path / "s.duckdb")
    back, conc = str(tmp_path / "back_office.jsonl"), str(tmp_path / "concierge.jsonl")
    assert runner.invoke(app, ["load", back, conc, "--db", db]).exit_code == 0
    res = runner.invoke(app, ["compare", back, "--db", db, "--a", f"file:{back}", "--b", f"file:{conc}"])
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.split())
    assert "--b file:" in said and "not among the PATHs given" in said and "give that file as a PATH too" in said
    assert "selects no prompt" not in said and "Traceback" not in said
    both = runner.invoke(app, ["compare", back, conc, "--db", db, "--a", f"file:{back}", "--b", f"file:{conc}", "--format", "json"])
    assert both.exit_code == 0, both.output
    out = json.loads(both.stdout)
    assert out["a"]["prompts"] > 0 and out["b"]["prompts"] > 0 and out["overlap_prompts"] == 0
