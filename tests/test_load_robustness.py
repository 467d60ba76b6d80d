"""``loopscope load`` on hostile, odd and broken input: each case through the CLI.

Every case checks the three promises: a clear message naming file and line,
nothing good lost (the good lines around the bad one load), and the bad line
kept in the quarantine.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

from loopscope.cli.app import app

runner = CliRunner()


def rec(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "v": 1, "kind": "tool_call", "ts": "2026-11-20T10:00:00Z", "conversation_id": "c1", "prompt_id": "p1",
        "tool_call_id": "t1", "tool_name": "search", "step": 0, "outcome": "ok", "is_error": False,
    }
    base.update(fields)
    return base


def line(**fields: Any) -> str:
    return json.dumps(rec(**fields)) + "\n"


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def load_json(db: Path, *paths: Path | str) -> tuple[int, dict[str, Any]]:
    result = invoke("load", "--db", str(db), "--format", "json", *map(str, paths))
    return result.exit_code, (json.loads(result.stdout) if result.exit_code == 0 else {"output": result.output})


def quarantine(db: Path) -> list[dict[str, str]]:
    result = invoke("quarantine", "--db", str(db), "--format", "csv")
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def ids(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT tool_call_id FROM tool_calls ORDER BY seq").fetchall()]
    finally:
        con.close()


def test_out_of_range_and_non_json_numbers_unknown_kind_version_and_duplicate_keys(tmp_path: Path) -> None:
    bad = [
        line(tool_call_id="big").replace('"step": 0', '"step": 99999999999999999999999'),
        line(tool_call_id="nan").replace('"step": 0', '"step": NaN'),
        line(tool_call_id="inf", latency_ms=1).replace('"latency_ms": 1', '"latency_ms": Infinity'),
        line(tool_call_id="huge", latency_ms=1).replace('"latency_ms": 1', '"latency_ms": 1e400'),
        line(tool_call_id="neg", step=-1),
        line(tool_call_id="zero", attempts=0),
        line(tool_call_id="span", kind="span"),
        line(tool_call_id="v2", v=2),
        line(tool_call_id="dup").replace('"step": 0', '"step": 0, "step": 5'),
    ]
    log = tmp_path / "values.jsonl"
    log.write_text(line(tool_call_id="first") + "".join(bad) + line(tool_call_id="last"))
    code, out = load_json(tmp_path / "t.duckdb", log)
    assert code == 0
    assert (out["loaded"], out["quarantined"]) == (2, 9)
    assert ids(tmp_path / "t.duckdb") == ["first", "last"]
    rows = quarantine(tmp_path / "t.duckdb")
    assert [int(r["line_no"]) for r in rows] == list(range(2, 11))
    assert all(r["path"] == str(log.resolve()) for r in rows)
    reasons = [r["reason"] for r in rows]
    assert reasons == [
        "bad value for step: 99999999999999999999999, expected an integer >= 0",
        "bad value for step: NaN is not a JSON number (NaN and Infinity are not JSON)",
        "bad value for latency_ms: Infinity is not a JSON number (NaN and Infinity are not JSON)",
        "bad value for latency_ms: 1e400, expected a finite number",
        "bad value for step: -1, expected an integer >= 0",
        "bad value for attempts: 0, expected an integer >= 1",
        'unknown kind "span" (expected tool_call or loop_exit)',
        "unknown schema version v=2 (this loopscope reads v=1)",
        'duplicate key "step" in the object',
    ]
    assert "key appears twice" in rows[-1]["hint"]
    assert rows[-1]["raw"] == bad[-1].rstrip("\n")
