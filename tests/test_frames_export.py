"""The notebook API (polars DataFrames) and ``loopscope export`` (Parquet), on the sample logs.

The expected counts are taken from the JSONL files with the standard library, not from loopscope.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from loopscope.analyses import frames
from loopscope.analyses.selection import Selection
from loopscope.cli.app import app

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
runner = CliRunner()


def _records() -> list[dict]:
    out = []
    for path in sorted(SAMPLE_LOGS.glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def _counts(records: list[dict]) -> collections.Counter:
    return collections.Counter(r["kind"] for r in records)


def test_load_frames_are_polars_with_every_record() -> None:
    records = _records()
    counts = _counts(records)
    t = frames.load_frames([SAMPLE_LOGS])
    assert set(t) == {"tool_calls", "loop_exits"}
    assert all(isinstance(df, pl.DataFrame) for df in t.values())
    assert t["tool_calls"].height == counts["tool_call"] and t["loop_exits"].height == counts["loop_exit"]
    # the record's fields, not the store's bookkeeping
    assert {"seq", "source_id", "line_no"}.isdisjoint(t["tool_calls"].columns)
    assert {"conversation_id", "tool_call_id", "is_error", "tags"} <= set(t["tool_calls"].columns)
    per_tool = collections.Counter(r["tool_name"] for r in records if r["kind"] == "tool_call")
    got = dict(t["tool_calls"].group_by("tool_name").len().iter_rows())
    assert got == dict(per_tool)
    errors = sum(1 for r in records if r["kind"] == "tool_call" and r["is_error"])
    assert t["tool_calls"]["is_error"].sum() == errors


def test_frames_move_through_arrow_without_pyarrow() -> None:
    # the Arrow C stream interface: polars reads DuckDB's buffers; pyarrow is never imported
    import subprocess

    code = (
        "import sys; from loopscope.analyses import frames; "
        f"t = frames.load_frames([{str(SAMPLE_LOGS)!r}]); print(t['tool_calls'].height, 'pyarrow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd="/")
    assert out.stdout.split() == [str(_counts(_records())["tool_call"]), "False"]


def test_frames_follow_the_selection() -> None:
    records = _records()
    concierge = _counts([r for r in records if r["agent"] == "concierge"])
    t = frames.load_frames([SAMPLE_LOGS], selection=Selection(agents=("concierge",)))
    assert t["tool_calls"].height == concierge["tool_call"] and t["loop_exits"].height == concierge["loop_exit"]
    assert t["tool_calls"]["agent"].unique().to_list() == ["concierge"]


def test_metrics_frame_matches_metrics_json() -> None:
    df = frames.metrics_frame([SAMPLE_LOGS], by="agent")
    res = runner.invoke(app, ["metrics", str(SAMPLE_LOGS), "--db", ":memory:", "--by", "agent", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert df.to_dicts() == json.loads(res.stdout)


def test_export_writes_parquet_with_every_record(tmp_path: Path) -> None:
    counts = _counts(_records())
    out = tmp_path / "pq"
    res = runner.invoke(app, ["export", str(SAMPLE_LOGS), "--db", ":memory:", "--out", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    written = {w["table"]: w for w in json.loads(res.stdout)}
    assert written["tool_calls"]["rows"] == counts["tool_call"] and written["loop_exits"]["rows"] == counts["loop_exit"]
    tool_calls = pl.read_parquet(out / "tool_calls.parquet")
    loop_exits = pl.read_parquet(out / "loop_exits.parquet")
    assert (tool_calls.height, loop_exits.height) == (counts["tool_call"], counts["loop_exit"])
    assert tool_calls.equals(frames.load_frames([SAMPLE_LOGS])["tool_calls"])
    # a second export replaces the files (not appended)
    again = runner.invoke(app, ["export", str(SAMPLE_LOGS), "--db", ":memory:", "--out", str(out), "--agent", "back_office"])
    assert again.exit_code == 0, again.output
    back_office = _counts([r for r in _records() if r["agent"] == "back_office"])
    assert pl.read_parquet(out / "tool_calls.parquet").height == back_office["tool_call"]


def test_export_to_a_file_is_a_clear_error(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("x", encoding="utf-8")
    res = runner.invoke(app, ["export", "--db", ":memory:", "--out", str(taken)])
    assert res.exit_code == 1 and "is a file, not a folder" in res.output and "Traceback" not in res.output
