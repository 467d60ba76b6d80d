"""Public coding-agent transcripts in versions the readers were not built on, through the CLI.

Fixtures: tests/fixtures/public_logs/ (sources, licences and what was trimmed in its
README). Every expected figure was counted from the raw lines, not by running loopscope.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

PUBLIC = Path(__file__).resolve().parent / "fixtures" / "public_logs"
# Codex Desktop 0.104.0-alpha.1, published with every text, argument and output replaced by
# "[REDACTED_OUTPUT len=N sha=...]": the exit codes went with the outputs.
CODEX_REDACTED = PUBLIC / "codex-desktop-0.104" / "sessions"

runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def raw_items(root: Path) -> list[dict[str, Any]]:
    items = []
    for path in sorted(root.rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            items.extend(json.loads(line).get("payload", {}) for line in handle if line.strip())
    return items


def test_codex_outputs_without_a_readable_exit_code_are_said_out_loud() -> None:
    items = raw_items(CODEX_REDACTED)
    names = {i["call_id"]: i["name"] for i in items if i.get("type") == "function_call"}
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    # 20 exec_command calls, each answered; no output says how its command ended.
    assert len(outputs) == 20 and {names[o["call_id"]] for o in outputs} == {"exec_command"}
    assert all(o["output"].startswith("[REDACTED_OUTPUT") for o in outputs)

    summary = json.loads(run("load", "--db", "s.duckdb", "--format", "json", str(CODEX_REDACTED)).stdout)
    assert summary["details"][0]["input_format"] == "codex"
    assert summary["tool_calls"] == 20
    notice = next(n for n in summary["notices"] if n["kind"] == "unread_exit_status")
    assert notice["count"] == 20
    assert "exec_command" in notice["message"] and "codex-desktop-0.104" in notice["message"]

    metrics = run("metrics", "--db", "s.duckdb", "--format", "json")
    figures = json.loads(metrics.stdout)
    assert (figures["tool_calls"], figures["errors"]) == (20, 0)
    assert "20 output(s) of command tools" in metrics.stderr

    # "no unrecovered error" would say more than the data does: the notice comes with it.
    unrecovered = run("unrecovered", "--db", "s.duckdb")
    assert "exit code" in unrecovered.stdout + unrecovered.stderr


def test_codex_outputs_with_exit_codes_raise_no_such_notice() -> None:
    fixture = Path(__file__).resolve().parent / "fixtures" / "transcripts" / "codex" / "sessions"
    summary = json.loads(run("load", "--db", "s.duckdb", "--format", "json", str(fixture)).stdout)
    assert summary["tool_calls"] > 0
    assert not [n for n in summary["notices"] if n["kind"] == "unread_exit_status"]
