"""PATHs that are the whole (small) store: the "from these files" condition is left out, with the same figures.

``store.open_for_analysis`` limits an analysis with PATHs to the prompts of
those files, a join per query. When every record in a small store comes from
those files the condition holds for every prompt, so the selection carries
``store_sources`` and ``Selection.where`` leaves it out. These tests run the
same analyses through the CLI on a store that holds only the PATHs and on one
that also holds another file (the condition applies), and compare.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.analyses import selection as selection_module
from loopscope.analyses.selection import Selection
from loopscope.cli.app import app

runner = CliRunner()
SAMPLE = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.fixture
def wheres(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL conditions every analysis query was given."""
    seen: list[str] = []
    real = Selection.where

    def watched(self: Selection, alias: str = "p") -> tuple[str, list[object]]:
        sql, params = real(self, alias)
        seen.append(sql)
        return sql, params

    monkeypatch.setattr(selection_module.Selection, "where", watched)
    return seen


def _json(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("command", [["audit"], ["metrics", "--by", "week"], ["unrecovered"], ["lint"],
                                     ["check", "--min-recovery-rate", "0.1"]])
def test_whole_store_paths_give_the_figures_of_a_store_holding_more(tmp_path: Path, wheres: list[str],
                                                                    command: list[str]) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE, logs)
    other = tmp_path / "other"
    other.mkdir()
    (logs / "back_office.jsonl").rename(other / "back_office.jsonl")  # a file the PATHs leave out
    only = tmp_path / "only.duckdb"
    # a store that also holds the other file, the PATHs' file loaded first (the same source id as in `only`)
    more_first = tmp_path / "more_first.duckdb"
    assert runner.invoke(app, ["load", str(logs), "--db", str(more_first)]).exit_code == 0
    assert runner.invoke(app, ["load", str(other), "--db", str(more_first)]).exit_code == 0

    wheres.clear()
    whole = _json(*command, str(logs), "--db", str(only))
    assert wheres and not any("EXISTS" in w for w in wheres)  # the condition was left out
    wheres.clear()
    part = _json(*command, str(logs), "--db", str(more_first))
    assert any("EXISTS" in w for w in wheres)  # a store holding more: the condition applies
    assert whole == part
    # and the PATHs' condition matters there: without PATHs the other file's prompts count too
    if command == ["audit"]:
        everything = _json(*command, "--db", str(more_first))
        assert everything["overall"]["prompts"] > whole["overall"]["prompts"] == part["overall"]["prompts"]


def test_a_narrower_selection_keeps_the_condition() -> None:
    whole = Selection(source_ids=(1, 2), store_sources=frozenset({1, 2}))
    assert whole.where("p") == ("TRUE", [])
    from dataclasses import replace

    narrowed = replace(whole, source_ids=(1,))  # e.g. compare's file: term
    sql, params = narrowed.where("p")
    assert "EXISTS" in sql and params == [[1], [1]]
    assert Selection(source_ids=(1, 2)).where("p")[0] != "TRUE"
