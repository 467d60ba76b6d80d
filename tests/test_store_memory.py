"""Bounded memory: every store connection sets DuckDB's memory limit and spill folder (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.analyses.store import MEMORY_LIMIT_ENV, TEMP_DIR_ENV, connect
from loopscope.cli.app import app

SETTINGS_SQL = "SELECT current_setting('memory_limit'), current_setting('temp_directory')"


def _gib(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"MiB": 1 / 1024, "GiB": 1.0, "TiB": 1024.0}[unit]


def test_default_limit_is_a_quarter_of_memory_and_spills_next_to_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    monkeypatch.delenv(TEMP_DIR_ENV, raising=False)
    import os

    total_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    con = connect(tmp_path / "s.duckdb")
    limit, temp = con.execute(SETTINGS_SQL).fetchone()
    con.close()
    assert _gib(limit) == pytest.approx(max(total_gib / 4, 1.0), rel=0.02)
    assert temp == str(tmp_path / "s.duckdb") + ".tmp"


def test_environment_overrides_limit_and_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "512MB")
    monkeypatch.setenv(TEMP_DIR_ENV, str(tmp_path / "spill"))
    con = connect(":memory:")
    limit, temp = con.execute(SETTINGS_SQL).fetchone()
    con.close()
    assert _gib(limit) == pytest.approx(512e6 / (1 << 30), rel=0.02)
    assert temp == str(tmp_path / "spill")


def test_a_bad_limit_is_a_user_error_naming_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "lots")
    result = CliRunner().invoke(app, ["metrics", "--db", ":memory:"])  # (a missing file store is refused first)
    assert result.exit_code == 1
    assert MEMORY_LIMIT_ENV in result.output and "Traceback" not in result.output


def test_an_analysis_over_the_limit_spills_instead_of_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grouping far larger than a small limit completes, using the spill folder."""
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "64MB")
    monkeypatch.setenv(TEMP_DIR_ENV, str(tmp_path / "spill"))
    con = connect(":memory:")
    con.execute("SET threads = 1")
    distinct = con.execute(
        "SELECT count(*) FROM (SELECT i::VARCHAR || repeat('x', 40) AS k, count(*) FROM range(3000000) t(i) GROUP BY k)"
    ).fetchone()[0]
    con.close()
    assert distinct == 3_000_000
