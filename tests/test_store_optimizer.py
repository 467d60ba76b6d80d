"""Tiny data runs DuckDB without its optimizer (analyses/store/__init__.py, issue 14); anything larger keeps it.

On sample_logs/ (154 records) planning is a third of the audit's query time and the plans gain
nothing from the optimizer; from some 10,000 rows a one-conversation triage pays for the missing
filter pushdown. Not a timing test (benchmarks/startup_bench.py times it): these check which runs
go without the optimizer, and that the figures and their order do not depend on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import loopscope.analyses.store as store
from loopscope.analyses.store import open_for_analysis
from loopscope.cli.app import app

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
OPTIMIZER_SQL = "SELECT current_setting('enable_optimizer')"
runner = CliRunner()


def _optimizer(db: str, paths: list[str]) -> bool:
    with open_for_analysis(db, paths) as opened:
        return bool(opened.con.execute(OPTIMIZER_SQL).fetchone()[0])


def test_sample_logs_run_without_the_optimizer(tmp_path: Path) -> None:
    assert _optimizer(":memory:", [str(SAMPLE_LOGS)]) is False
    db = str(tmp_path / "s.duckdb")
    assert _optimizer(db, [str(SAMPLE_LOGS)]) is False
    assert _optimizer(db, []) is False  # the store alone, later


def test_a_larger_store_or_larger_paths_keep_the_optimizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "s.duckdb")
    _optimizer(db, [str(SAMPLE_LOGS)])  # 114 tool calls in the store
    monkeypatch.setattr(store, "TINY_STORE_ROWS", 100)
    assert _optimizer(db, []) is True  # a table past the limit
    monkeypatch.setattr(store, "TINY_STORE_ROWS", 10_000)
    monkeypatch.setattr(store, "TINY_LOAD_BYTES", 10_000)  # sample_logs/ is some 90 KB
    assert _optimizer(":memory:", [str(SAMPLE_LOGS)]) is True
    monkeypatch.setattr(store, "SMALL_STORE_ROWS", 100)  # not small at all: threads and optimizer as DuckDB sets them
    monkeypatch.setattr(store, "TINY_LOAD_BYTES", 1 << 20)
    assert _optimizer(db, []) is True


@pytest.mark.parametrize("command", [["audit", "--format", "json"], ["audit"], ["triage", "c02-date-blind"],
                                     ["unrecovered", "--format", "json"], ["lint"], ["metrics", "--by", "week"],
                                     ["review", "sample", "--n", "9", "--seed", "1"]])
def test_the_output_does_not_depend_on_the_optimizer(command: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    without = runner.invoke(app, [*command, str(SAMPLE_LOGS), "--db", ":memory:"])
    monkeypatch.setattr(store, "TINY_STORE_ROWS", -1)  # no store is that small: the optimizer runs
    with_it = runner.invoke(app, [*command, str(SAMPLE_LOGS), "--db", ":memory:"])
    assert without.exit_code == with_it.exit_code == 0, without.output + with_it.output
    assert without.stdout == with_it.stdout
    assert len(without.stdout) > 200
