"""Analyses over no store, or a store with no record, say so (exit 1) instead of printing zeros.

A mistyped ``--db`` used to create an empty store and print zeros with exit 0; ``check`` passed its
gate on it. Each case runs through the CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

runner = CliRunner()
SAMPLE = Path(__file__).resolve().parent.parent / "sample_logs" / "concierge.jsonl"


def said(result) -> str:  # noqa: ANN001
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", [["metrics"], ["audit"], ["unrecovered"], ["lint"], ["check"], ["quarantine"]])
def test_no_store_at_the_path_is_said_and_no_file_is_made(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "typo.duckdb"
    result = runner.invoke(app, [*command, "--db", str(db)])
    assert result.exit_code == 1, result.output
    assert f"no store at {db}" in said(result) and "loopscope load PATH" in said(result)
    assert "Traceback" not in result.output
    assert not db.exists()


def test_a_store_with_no_record_is_nothing_to_analyse(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    otlp = tmp_path / "chat.jsonl"
    otlp.write_text('{"resourceSpans":[]}\n', encoding="utf-8")
    assert runner.invoke(app, ["load", str(otlp), "--db", str(db)]).exit_code == 1  # gave no record
    assert db.exists()
    for command in (["metrics"], ["check"], ["unrecovered", "--format", "json"]):
        result = runner.invoke(app, [*command, "--db", str(db)])
        assert result.exit_code == 1, (command, result.output)
        assert f"the store {db} holds no records" in said(result)


def test_a_store_whose_lines_were_all_quarantined_points_at_them(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"v": 1, "kind": "tool_call", oops}\n{"v": 2}\n', encoding="utf-8")
    runner.invoke(app, ["load", str(bad), "--db", str(db), "--input-format", "records"])
    result = runner.invoke(app, ["metrics", "--db", str(db)])
    assert result.exit_code == 1
    assert "holds no records; the 2 line(s) its loads read were all set aside" in said(result)
    assert f"loopscope quarantine --db {db}" in said(result)
    listed = runner.invoke(app, ["quarantine", "--db", str(db)])
    assert listed.exit_code == 0 and "2 quarantined lines" in said(listed)


def test_a_store_with_records_is_analysed_as_before(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["load", str(SAMPLE), "--db", str(db)]).exit_code == 0
    result = runner.invoke(app, ["metrics", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0 and '"tool_calls"' in result.stdout
