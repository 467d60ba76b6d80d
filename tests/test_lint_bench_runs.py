"""benchmarks/lint_bench.py runs against the current store and ranking (it once broke silently when the
ranking's SQL changed: a benchmark nobody can run measures nothing). Not a timing test."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "benchmarks" / "lint_bench.py"


def test_lint_bench_runs_and_both_sides_see_the_same_messages(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [str(BENCH), "2100"])
    runpy.run_path(str(BENCH), run_name="__main__")
    out = capsys.readouterr().out
    # 2,100 errors, i = 0..2099, tool i % 7: i % 3 == 0 gives 700 distinct patient ids; i % 3 == 1 gives
    # "Failed" once per tool (7); i % 3 == 2 gives (i % 7, i % 50), which by the Chinese remainder theorem
    # takes all 350 of its values in each period of 1,050: 700 + 7 + 350 distinct pairs, 3 templates a tool
    assert "errors: 2100, distinct (tool, message): 1057," in out
    assert "templates: 21" in out
    assert "ratio baseline / current:" in out
