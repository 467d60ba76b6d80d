"""Small data runs DuckDB on one thread (analyses/store/__init__.py, issue 14), larger data on DuckDB's default.

A run on sample_logs/ is a few hundred small queries: a second thread only adds its scheduling.
Not a timing test (benchmarks/startup_bench.py times it): these check which runs get one thread,
and that the figures do not depend on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

import loopscope.analyses.store as store
from loopscope.analyses.store import open_for_analysis
from loopscope.cli.app import app

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
THREADS_SQL = "SELECT current_setting('threads')"


def _default_threads() -> int:
    con = duckdb.connect(":memory:")
    try:
        return int(con.execute(THREADS_SQL).fetchone()[0])
    finally:
        con.close()


def _threads(db: str, paths: list[str]) -> int:
    with open_for_analysis(db, paths) as opened:
        return int(opened.con.execute(THREADS_SQL).fetchone()[0])


def test_sample_logs_run_on_one_thread(tmp_path: Path) -> None:
    assert _threads(":memory:", [str(SAMPLE_LOGS)]) == 1
    db = str(tmp_path / "s.duckdb")
    assert _threads(db, [str(SAMPLE_LOGS)]) == 1
    assert _threads(db, []) == 1  # the store alone, later


def test_a_large_store_or_large_paths_keep_duckdbs_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = _default_threads()
    db = str(tmp_path / "s.duckdb")
    _threads(db, [str(SAMPLE_LOGS)])  # 114 tool calls in the store
    monkeypatch.setattr(store, "SMALL_STORE_ROWS", 100)
    assert _threads(db, []) == default  # a table past the limit
    monkeypatch.setattr(store, "SMALL_STORE_ROWS", 1_000_000)
    monkeypatch.setattr(store, "SMALL_LOAD_BYTES", 10_000)  # sample_logs/ is some 90 KB
    assert _threads(":memory:", [str(SAMPLE_LOGS)]) == default
    monkeypatch.setattr(store, "SMALL_LOAD_BYTES", 1_000_000)
    con = store.connect(":memory:")
    try:  # sizes it cannot tell count as large: the loader then reports the missing file itself
        assert store._small_data(con, [str(SAMPLE_LOGS)])
        assert not store._small_data(con, [str(tmp_path / "no-such-file.jsonl"), str(SAMPLE_LOGS)])
        assert not store._small_data(con, [str(SAMPLE_LOGS / "*.jsonl")])
    finally:
        con.close()


def test_a_path_that_does_not_exist_is_still_the_loaders_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["metrics", str(tmp_path / "missing.jsonl"), "--db", ":memory:"])
    assert res.exit_code == 1 and "no such file or directory" in res.output


def test_the_figures_do_not_depend_on_the_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def audit() -> dict:
        res = CliRunner().invoke(app, ["audit", str(SAMPLE_LOGS), "--db", ":memory:", "--format", "json"])
        assert res.exit_code == 0, res.output
        report = json.loads(res.stdout)
        report.pop("generated_at", None)
        return report

    one = audit()
    monkeypatch.setattr(store, "SMALL_LOAD_BYTES", 0)  # every run "large": DuckDB's threads
    assert audit() == one


def test_small_data_builds_its_facts_without_lowering_the_memory_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The facts of small data take a few MB: no reading, lowering and restoring of the limit (facts.small_store)."""
    from loopscope.analyses.metrics import compute_metrics
    from loopscope.analyses.store import facts

    asked: list[int] = []
    read = facts._memory_limit_bytes
    monkeypatch.setattr(facts, "_memory_limit_bytes", lambda con: asked.append(1) or read(con))
    with open_for_analysis(":memory:", [str(SAMPLE_LOGS)]) as (con, selection, _):
        small = compute_metrics(con, selection)
        before = con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert asked == []
    monkeypatch.setattr(store, "_small_data", lambda con, paths: False)
    with open_for_analysis(":memory:", [str(SAMPLE_LOGS)]) as (con, selection, _):
        assert compute_metrics(con, selection) == small
        assert con.execute("SELECT current_setting('memory_limit')").fetchone() == before
    assert asked == [1]  # larger data: capped while the facts are built, then restored
