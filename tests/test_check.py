"""``loopscope check`` on logs with known answers (tests/fixtures/audit/cohorts.jsonl).

Whole fixture: 78 prompts (2 open), 42 errors of which 22 recovered (52.4%),
136 tool calls of which 4 replays (2.9%), 2 of them double executions, 2 retry
loops; tool calls per prompt: median 2, p99 3. Lint calls 4 templates generic
("failed", "Error", "timeout" and the blind date message without the expected format).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "cohorts.jsonl"
SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
runner = CliRunner()


def _check(*args: str) -> object:
    return runner.invoke(app, ["check", str(FIXTURE), "--db", ":memory:", *args])


def test_check_passes_within_thresholds() -> None:
    res = _check("--min-recovery-rate", "0.52", "--max-median-tool-calls", "2", "--max-p99-tool-calls", "3",
                 "--max-replay-rate", "0.03", "--max-open-prompts", "2", "--max-retry-loops", "2",
                 "--max-double-executions", "2")
    assert res.exit_code == 0, res.output
    assert res.stdout.count("OK ") == 7
    assert "check passed" in res.stdout


def test_check_fails_one_line_per_violation() -> None:
    res = _check("--min-recovery-rate", "0.53", "--max-median-tool-calls", "1.5", "--max-p99-tool-calls", "2.9",
                 "--max-replay-rate", "0.029", "--max-open-prompts", "1", "--max-retry-loops", "1",
                 "--max-double-executions", "1")
    assert res.exit_code == 3, res.output
    violated = [line for line in res.stdout.splitlines() if line.startswith("VIOLATED")]
    assert violated == [
        "VIOLATED recovery_rate 52.4% is below the minimum 53.0% (--min-recovery-rate)",
        "VIOLATED median_tool_calls_per_prompt 2 is above the maximum 1.5 (--max-median-tool-calls)",
        "VIOLATED p99_tool_calls_per_prompt 3 is above the maximum 2.9 (--max-p99-tool-calls)",
        "VIOLATED replay_rate 2.9% is above the maximum 2.9% (--max-replay-rate)",
        "VIOLATED open_prompts 2 is above the maximum 1 (--max-open-prompts)",
        "VIOLATED retry_loops 2 is above the maximum 1 (--max-retry-loops)",
        "VIOLATED double_executions 2 is above the maximum 1 (--max-double-executions)",
    ]
    assert "7 threshold(s) violated" in res.stdout


def test_check_generic_templates_either_side() -> None:
    assert _check("--max-generic-templates", "4").exit_code == 0
    res = _check("--max-generic-templates", "3")
    assert res.exit_code == 3
    assert "VIOLATED generic_templates 4 is above the maximum 3 (--max-generic-templates)" in res.stdout


def test_check_json() -> None:
    res = _check("--min-recovery-rate", "0.9", "--max-open-prompts", "5", "--format", "json")
    assert res.exit_code == 3
    out = json.loads(res.stdout)
    assert out["passed"] is False and out["violations"] == 1
    rec = out["outcomes"][0]
    assert rec["threshold"] == "min_recovery_rate" and rec["status"] == "violated"
    assert rec["value"] == pytest.approx(22 / 42) and rec["limit"] == 0.9
    assert out["outcomes"][1]["status"] == "ok"
    assert out["figures"]["errors"] == 42 and out["figures"]["prompts"] == 78


def test_check_window_and_skipped_metric(tmp_path: Path) -> None:
    # W47 is corrective: 16/18 recovered; the replay-only researcher agent has no errors.
    res = _check("--since", "2026-11-16", "--min-recovery-rate", "0.85")
    assert res.exit_code == 0, res.output
    assert "recovery_rate 88.9%" in res.stdout
    res = _check("--agent", "researcher", "--min-recovery-rate", "0.85", "--max-replay-rate", "0.6")
    assert res.exit_code == 0, res.output
    assert "SKIPPED  recovery_rate has no value" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no threshold given"),
        (["--min-recovery-rate", "1.5"], "is above 1"),
        (["--max-open-prompts", "-1"], "is negative"),
        (["--min-recovery-rate", "-0.5"], "is negative"),
        (["--max-p99-tool-calls", "-3"], "is negative"),
        (["--max-replay-rate", "nan"], "is not a finite number"),
        (["--max-p99-tool-calls", "inf"], "is not a finite number"),
        (["--min-recovery-rate", "0.5", "--since", "2030-01-01"], "no prompt to check"),
    ],
)
def test_check_user_errors(args: list[str], message: str) -> None:
    res = _check(*args)
    assert res.exit_code == 1
    assert message in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    ("option", "passing", "failing"),
    [
        # sample_logs/EXPECTED.md: recovery 14/26 = 53.8%, p99 16.6, median 2, replay 3/114 = 2.6%, 1 open prompt
        ("--min-recovery-rate", "0.538", "0.539"),
        ("--max-p99-tool-calls", "16.6", "16.5"),
        ("--max-median-tool-calls", "2", "1.9"),
        ("--max-replay-rate", "0.027", "0.026"),
        ("--max-open-prompts", "1", "0"),
    ],
)
def test_check_on_sample_logs_either_side(option: str, passing: str, failing: str) -> None:
    ok = runner.invoke(app, ["check", str(SAMPLE_LOGS), "--db", ":memory:", option, passing])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["check", str(SAMPLE_LOGS), "--db", ":memory:", option, failing, "--format", "json"])
    assert bad.exit_code == 3, bad.output
    assert json.loads(bad.stdout)["violations"] == 1


@pytest.mark.parametrize("verb", [["audit"], ["sample"], ["review", "import"], ["compare"], ["check"]])
def test_help_teaches_with_examples(verb: list[str]) -> None:
    res = runner.invoke(app, [*verb, "--help"], env={"COLUMNS": "100"})
    assert res.exit_code == 0
    assert "Examples:" in res.output and f"loopscope {' '.join(verb)} " in res.output


def test_check_help_explains_exit_codes() -> None:
    res = runner.invoke(app, ["check", "--help"], env={"COLUMNS": "100"})
    text = " ".join(res.output.split())
    assert "Exit codes: 0 every threshold met (or skipped) 1 a user error" in text and "3 a threshold violated" in text
