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


def test_unreadable_file_is_skipped_named_and_the_rest_loads(tmp_path: Path, monkeypatch: Any) -> None:
    import builtins
    import os

    from loopscope.analyses import loader_files

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(line(tool_call_id="a"))
    locked = logs / "b.jsonl"
    locked.write_text(line(tool_call_id="b"))
    (logs / "c.jsonl").write_text(line(tool_call_id="c"))
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads anything: refuse the way the system would for anyone else

        def guarded(file: Any, *args: Any, **kwargs: Any) -> Any:
            if Path(file).name == "b.jsonl":
                raise PermissionError(13, "Permission denied", str(file))
            return builtins.open(file, *args, **kwargs)

        monkeypatch.setattr(loader_files, "open", guarded, raising=False)
    db = tmp_path / "t.duckdb"
    result = invoke("load", "--db", str(db), str(logs))
    assert result.exit_code == 1  # the others loaded; exit 1 says not everything was
    assert "Traceback" not in result.output
    flat = " ".join(result.output.split())
    assert "skipped" in flat and "b.jsonl: cannot read" in flat and "Permission denied" in flat
    assert "unreadable (not loaded)" in flat
    assert sorted(ids(db)) == ["a", "c"]
    result = invoke("load", "--db", str(db), "--format", "json", str(logs))
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["unreadable"] == 1
    (entry,) = [d for d in out["details"] if d["status"] == "unreadable"]
    assert entry["path"].endswith("b.jsonl") and "Permission denied" in entry["error"]


def test_truncated_gzip_loads_the_lines_before_the_break_and_reads_on_once_complete(tmp_path: Path) -> None:
    import gzip
    import os

    body = "".join(line(tool_call_id=f"t{i}", note=os.urandom(8).hex()) for i in range(3000)).encode()
    whole = gzip.compress(body)
    log = tmp_path / "app.jsonl.gz"
    log.write_bytes(whole[: len(whole) // 2])
    other = tmp_path / "other.jsonl"
    other.write_text(line(tool_call_id="other"))
    db = tmp_path / "t.duckdb"
    code, out = load_json(db, log, other)
    assert code == 0
    first = out["details"][0]
    assert first["quarantined"] == 1 and 0 < first["loaded"] < 3000
    assert out["details"][1]["loaded"] == 1  # the next file still loads
    (row,) = quarantine(db)
    assert int(row["line_no"]) == first["loaded"] + 1
    assert row["reason"].startswith("file cut off at this line: the gzip stream ends early or is corrupt")
    assert "incomplete" in row["hint"]
    # The copy completes: the next load reads on from the break, and the quarantine entry goes.
    log.write_bytes(whole)
    code, out = load_json(db, log)
    assert code == 0
    assert out["details"][0]["status"] == "grown"
    assert out["details"][0]["loaded"] == 3000 - first["loaded"]
    assert quarantine(db) == []
    assert sorted(ids(db)) == sorted([f"t{i}" for i in range(3000)] + ["other"])


def test_gzip_with_a_broken_header_is_unreadable_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (tmp_path / "good.jsonl").write_text(line(tool_call_id="good"))
    db = tmp_path / "t.duckdb"
    result = invoke("load", "--db", str(db), "--format", "json", str(tmp_path))
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert [d["status"] for d in out["details"]] == ["unreadable", "new"]
    assert "bad.jsonl.gz" in out["details"][0]["error"]
    assert ids(db) == ["good"]
