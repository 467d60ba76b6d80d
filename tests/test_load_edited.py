"""A records file edited in its first 4 KiB and loaded again, through the CLI (``load``, then ``metrics``).

Its head (the SHA-256 of its first 4 KiB) is new, so it was taken for a new source and all of its
lines were stored a second time beside the old ones: every call was counted twice, half of them as
replays (metric 4), and nothing warned. Now a file at a path the store loaded before whose records are
mostly those of the earlier source replaces that source; a new file at the path after a rotation
shares none and replaces nothing; an earlier copy of an edited file does not bring its records back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

from loopscope.cli.app import app

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def call(i: int, conv: str = "c1", **fields: Any) -> dict[str, Any]:
    """The i-th tool call of a conversation without replays (each call its own arguments)."""
    base: dict[str, Any] = {
        "v": 1, "kind": "tool_call", "ts": f"2026-11-20T10:{i // 60:02d}:{i % 60:02d}.000Z", "conversation_id": conv,
        "prompt_id": f"{conv}-p1", "agent": "support", "tool_call_id": f"{conv}-t{i}", "tool_name": "search", "step": i,
        "input_shape": {"q": "string"}, "args_fingerprint": f"{conv}-fp{i}", "outcome": "ok", "is_error": False,
        "attempts": 1, "latency_ms": 3.5, "error_type": None, "error_message": None, "replayed": False,
    }
    base.update(fields)
    return base


def failed(i: int, message: str, conv: str = "c1") -> dict[str, Any]:
    return call(i, conv, outcome="permanent_fail", is_error=True, error_type="not_found", error_message=message)


def exit_of(conv: str, n: int) -> dict[str, Any]:
    return {"v": 1, "kind": "loop_exit", "ts": "2026-11-20T11:00:00.000Z", "conversation_id": conv, "prompt_id": f"{conv}-p1",
            "agent": "support", "exit_reason": "end_turn", "steps": n, "tool_calls": n, "tool_errors": 1,
            "max_tool_calls": None, "duration_ms": 10.0}


def write(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def load(path: Path, db: Path) -> dict[str, Any]:
    result = invoke("load", str(path), "--db", str(db), "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def metrics(db: Path) -> dict[str, Any]:
    result = invoke("metrics", "--db", str(db), "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fresh_metrics(path: Path, tmp_path: Path) -> dict[str, Any]:
    """The figures of the file as it is now, loaded into a store of its own."""
    n = 1
    while (tmp_path / f"fresh{n}.duckdb").exists():
        n += 1
    db = tmp_path / f"fresh{n}.duckdb"
    load(path, db)
    return metrics(db)


def twenty() -> list[dict[str, Any]]:
    """19 tool calls (one failed) and the loop exit of one replay-free conversation: under 4 KiB for
    the first records only, so an edit in line 2 changes the file's head."""
    return [call(0), failed(1, "no such order"), *(call(i) for i in range(2, 19)), exit_of("c1", 19)]


def test_an_edit_in_the_head_replaces_the_earlier_records(tmp_path: Path) -> None:
    log, db = tmp_path / "a.jsonl", tmp_path / "s.duckdb"
    records = twenty()
    write(log, records)
    assert log.stat().st_size > 4096  # the edit below is inside the first 4 KiB, not the whole file
    load(log, db)
    before = metrics(db)
    assert (before["tool_calls"], before["replays"], before["errors"]) == (19, 0, 1)
    records[1] = failed(1, "no such order (fixed by hand)")  # line 2, a value edited
    write(log, records)
    out = load(log, db)
    after = metrics(db)
    # was (38, 19, 0.5): every call stored twice, half of them counted as replays
    assert (after["tool_calls"], after["replays"], after["replay_rate"]) == (19, 0, 0.0)
    assert after == fresh_metrics(log, tmp_path)
    [detail] = out["details"]
    assert (detail["status"], detail["loaded"], detail["skipped"]) == ("replaced", 20, 0)
    assert "changed in its first 4 KiB" in detail["note"] and "20 record(s) loaded from it before were replaced" in detail["note"]
    # The store holds the file as it is now: the edited text, once; loading it again adds nothing.
    con = duckdb.connect(str(db), read_only=True)
    try:
        texts = con.execute("SELECT error_message FROM tool_calls WHERE is_error").fetchall()
    finally:
        con.close()
    assert texts == [("no such order (fixed by hand)",)]
    again = load(log, db)
    assert [(d["status"], d["loaded"], d["skipped"]) for d in again["details"]] == [("unchanged", 0, 20)]
    # The table on the terminal says so too (stderr), not only the JSON.
    log.write_text(log.read_text().replace("fixed by hand", "fixed twice"))
    said = invoke("load", str(log), "--db", str(db))
    assert said.exit_code == 0
    assert "changed in its first 4 KiB" in " ".join(said.stderr.split())
    assert metrics(db) == fresh_metrics(log, tmp_path)


def test_an_edit_that_adds_a_line_in_the_head_replaces_the_earlier_records(tmp_path: Path) -> None:
    log, db = tmp_path / "a.jsonl", tmp_path / "s.duckdb"
    records = twenty()
    write(log, records)
    load(log, db)
    # A bad line fixed by hand: one record more in line 2, the others shifted by one line.
    records.insert(1, call(30, tool_name="lookup"))
    write(log, records)
    out = load(log, db)
    after = metrics(db)
    assert (after["tool_calls"], after["replays"]) == (20, 0)
    assert after == fresh_metrics(log, tmp_path)
    assert [(d["status"], d["loaded"]) for d in out["details"]] == [("replaced", 21)]


def test_a_new_file_at_the_path_after_rotation_keeps_the_old_records(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    log, db = logs / "app.jsonl", tmp_path / "s.duckdb"
    old = twenty()
    write(log, old)
    load(log, db)
    # Rotation: app.jsonl -> app.jsonl.1, a new app.jsonl with other conversations. Only the new one is loaded.
    log.rename(logs / "app.jsonl.1")
    new = [call(0, "c2"), failed(1, "timeout", "c2"), call(2, "c2"), exit_of("c2", 3)]
    write(log, new)
    out = load(log, db)
    assert [(d["status"], d["loaded"], d["note"]) for d in out["details"]] == [("new", 4, None)]
    after = metrics(db)
    assert (after["tool_calls"], after["prompts"], after["errors"], after["replays"]) == (19 + 3, 2, 2, 0)
    # the old records, every one, from their source
    assert json.loads(invoke("metrics", str(logs / "app.jsonl.1"), "--db", str(db), "-f", "json").stdout)["tool_calls"] == 19
    # the rotated copy resumes the old source: nothing new, nothing lost
    rotated = load(logs / "app.jsonl.1", db)
    assert [(d["status"], d["loaded"], d["skipped"]) for d in rotated["details"]] == [("unchanged", 0, 20)]
    assert metrics(db)["tool_calls"] == 22


def test_a_new_file_at_the_path_sharing_a_few_records_replaces_nothing(tmp_path: Path) -> None:
    # Fewer than half of the smaller file's records in common: another file, not an edit of it.
    log, db = tmp_path / "a.jsonl", tmp_path / "s.duckdb"
    write(log, twenty())
    load(log, db)
    other = [call(i, "c3") for i in range(16)] + [call(0), call(1), exit_of("c3", 16)]
    write(log, other)
    out = load(log, db)
    assert [(d["status"], d["loaded"]) for d in out["details"]] == [("new", 19)]
    assert metrics(db)["tool_calls"] == 19 + 18


def test_an_earlier_copy_of_an_edited_file_does_not_bring_its_records_back(tmp_path: Path) -> None:
    log, db = tmp_path / "a.jsonl", tmp_path / "s.duckdb"
    records = twenty()
    write(log, records)
    backup = tmp_path / "backup" / "a.jsonl"
    backup.parent.mkdir()
    shutil.copy(log, backup)  # the pre-edit version
    load(log, db)
    records[0] = call(0, latency_ms=7.0)
    write(log, records)
    assert load(log, db)["details"][0]["status"] == "replaced"
    edited = fresh_metrics(log, tmp_path)
    # The backup copy, loaded afterwards from another path: not loaded, and said.
    out = load(backup, db)
    assert metrics(db) == edited
    [detail] = out["details"]
    assert (detail["status"], detail["loaded"]) == ("superseded", 0)
    assert str(log) in detail["note"] and "not loaded" in detail["note"]
    said = invoke("metrics", str(backup), "--db", str(db), "-f", "json")
    assert said.exit_code == 0 and "an earlier version of" in " ".join(said.stderr.split())
    assert json.loads(said.stdout)["replays"] == 0
    # Restored at its path: the file at the path is what the store holds (the latest load wins).
    shutil.copy(backup, log)
    restored = load(log, db)
    assert [(d["status"], d["loaded"]) for d in restored["details"]] == [("replaced", 20)]
    assert metrics(db) == fresh_metrics(backup, tmp_path)
    assert metrics(db)["replays"] == 0
