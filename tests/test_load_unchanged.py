"""A second load of unchanged files takes the quick check (``load._unchanged``) and reports what the per-file path reports.

Every analysis with PATHs loads them first; on the second run each file is
already in the store. The quick check answers that from one read of
``sources`` instead of a transaction per file. These tests run ``loopscope
load --format json`` (and an analysis) through the CLI with the quick check
on and with it switched off, on the same store, and compare the outputs; the
cases it must decline (a grown, rotated, gzipped or non-records file) go through the per-file path and load what is new.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from loopscope.analyses.ingest import load as load_module
from loopscope.cli.app import app

runner = CliRunner()
SAMPLE = Path(__file__).resolve().parent.parent / "sample_logs"


def _record(kind: str, conv: str, ts: str, **fields: Any) -> str:
    rec: dict[str, Any] = {"v": 1, "kind": kind, "ts": ts, "conversation_id": conv, "prompt_id": "p1", "agent": "a"}
    if kind == "tool_call":
        rec.update(tool_call_id=fields.pop("id"), tool_name="search", step=0, input_shape={"q": "string"},
                   args_fingerprint=None, outcome="ok", is_error=False, attempts=1, latency_ms=3.5,
                   error_type=None, error_message=None, replayed=False)
    else:
        rec.update(exit_reason="end_turn", steps=1, tool_calls=1, tool_errors=0, max_tool_calls=None,
                   duration_ms=10.0)
    rec.update(fields)
    return json.dumps(rec)


LINES = [
    _record("tool_call", "c1", "2026-11-20T10:00:00.000Z", id="t1"),
    _record("loop_exit", "c1", "2026-11-20T10:00:02.000Z"),
    _record("tool_call", "c2", "2026-11-20T11:00:00.000Z", id="t1"),
]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per load, whether the quick check answered (True) or declined (False)."""
    taken: list[bool] = []
    real = load_module._unchanged

    def watched(*args: Any, **kwargs: Any) -> Any:
        summary = real(*args, **kwargs)
        taken.append(summary is not None)
        return summary

    monkeypatch.setattr(load_module, "_unchanged", watched)
    return taken


def _load_json(paths: list[Path], db: Path, *extra: str) -> dict[str, Any]:
    result = runner.invoke(app, ["load", *map(str, paths), "--db", str(db), "--format", "json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _load_json_metrics(paths: list[Path], db: Path) -> dict[str, Any]:
    result = runner.invoke(app, ["metrics", *map(str, paths), "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_module, "_unchanged", lambda *args, **kwargs: None)


def _store_rows(db: Path) -> list[Any]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [con.execute(f"SELECT count(*), coalesce(max(seq), 0) FROM {t}").fetchone()
                for t in ("tool_calls", "loop_exits")] + \
               [con.execute("SELECT count(*) FROM quarantine").fetchone()] + \
               con.execute("SELECT source_id, path, head_hash, head_len, bytes_loaded, lines_loaded FROM sources "
                           "ORDER BY source_id").fetchall()
    finally:
        con.close()


def test_sample_logs_second_load_is_quick_and_reports_the_same(tmp_path: Path, spy: list[bool],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.duckdb"
    first = _load_json([SAMPLE], db)
    assert first["loaded"] == 154 and spy == [False]
    before = _store_rows(db)
    quick = _load_json([SAMPLE], db)
    assert spy == [False, True]
    assert quick["loaded"] == 0 and quick["skipped"] == 154
    assert [d["status"] for d in quick["details"]] == ["unchanged", "unchanged"]
    assert quick["ignored"] == [str((SAMPLE / "EXPECTED.md").resolve())]
    assert _store_rows(db) == before  # nothing written
    _per_file(monkeypatch)
    assert _load_json([SAMPLE], db) == quick  # the per-file path says exactly the same
    assert _store_rows(db) == before


def test_an_analysis_with_paths_reads_the_same_after_the_quick_check(tmp_path: Path, spy: list[bool],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.duckdb"
    _load_json([SAMPLE], db)
    quick = runner.invoke(app, ["audit", str(SAMPLE), "--db", str(db), "--format", "json"])
    assert quick.exit_code == 0 and spy[-1] is True
    _per_file(monkeypatch)
    slow = runner.invoke(app, ["audit", str(SAMPLE), "--db", str(db), "--format", "json"])
    assert slow.exit_code == 0
    assert quick.stdout == slow.stdout
    assert json.loads(quick.stdout)["overall"]["prompts"] == 41


def test_a_complete_last_record_without_newline_is_unchanged_both_ways(tmp_path: Path, spy: list[bool],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "a.jsonl"
    log.write_text("\n".join(LINES))  # no newline after the last record
    db = tmp_path / "s.duckdb"
    assert _load_json([log], db)["loaded"] == 3
    quick = _load_json([log], db)
    assert spy[-1] is True and quick["details"][0]["status"] == "unchanged" and quick["skipped"] == 3
    _per_file(monkeypatch)
    assert _load_json([log], db) == quick


@pytest.mark.parametrize("change", ["appended", "rotated", "gzip", "stale_facts", "tags"])
def test_what_the_quick_check_declines_goes_through_the_per_file_path(tmp_path: Path, spy: list[bool],
                                                                       change: str) -> None:
    log = tmp_path / "a.jsonl"
    log.write_text("\n".join(LINES[:2]) + "\n")
    db = tmp_path / "s.duckdb"
    paths = [log]
    if change == "gzip":
        log = tmp_path / "a.jsonl.gz"
        log.write_bytes(gzip.compress(("\n".join(LINES[:2]) + "\n").encode()))
        paths = [log]
    assert _load_json(paths, db)["loaded"] == 2
    if change == "appended":
        with log.open("a") as f:
            f.write(LINES[2] + "\n")
    elif change == "rotated":
        shutil.copy(log, tmp_path / "a.jsonl.1")
        paths = [tmp_path / "a.jsonl.1"]
    elif change == "stale_facts":
        con = duckdb.connect(str(db))
        con.execute("UPDATE prompt_facts_state SET tool_calls = tool_calls + 1")
        con.close()
    report = _load_json(paths, db, *(["--tag", "team=blue"] if change == "tags" else []))
    if change in ("tags", "stale_facts"):
        # tags on nothing new change nothing, and the facts are the analyses' business: the quick check answers
        assert spy[-1] is True and report["loaded"] == 0 and report["details"][0]["status"] == "unchanged"
        figures = _load_json_metrics(paths, db)  # the first analysis brings stale facts up to date
        assert (figures["prompts"], figures["tool_calls"]) == (1, 1)
        return
    assert spy[-1] is False
    if change == "appended":
        assert report["loaded"] == 1 and report["details"][0]["status"] == "grown"
    elif change == "rotated":
        assert report["loaded"] == 0 and report["details"][0]["status"] == "unchanged"
    else:  # gzip
        assert report["loaded"] == 0 and report["details"][0]["status"] == "unchanged"


def test_a_messages_file_is_not_for_the_quick_check(tmp_path: Path, spy: list[bool]) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}))
    db = tmp_path / "s.duckdb"
    _load_json([conv], db)
    again = _load_json([conv], db)
    assert spy[-1] is False and again["details"][0]["status"] == "unchanged"
