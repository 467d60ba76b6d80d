"""``loopscope load`` on hostile, odd and broken input: each case through the CLI.

Every case checks the three promises: a clear message naming file and line,
nothing good lost (the good lines around the bad one load), and the bad line
kept in the quarantine.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

_spec = importlib.util.spec_from_file_location("loopscope_test_load_cli_support", Path(__file__).parent / "load_cli_support.py")
assert _spec and _spec.loader
_support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_support)
rec, line, invoke = _support.rec, _support.line, _support.invoke


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

    from loopscope.analyses.ingest import files as loader_files

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


def test_bom_crlf_empty_and_blank_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a_bom.jsonl").write_bytes(b"\xef\xbb\xbf" + (line(tool_call_id="bom1") + line(tool_call_id="bom2")).encode())
    (logs / "b_crlf.jsonl").write_bytes((line(tool_call_id="crlf1") + "{oops}\n" + line(tool_call_id="crlf2")).replace("\n", "\r\n").encode())
    (logs / "c_empty.jsonl").write_bytes(b"")
    (logs / "d_blank.jsonl").write_text("\n\n   \n\t\n")
    db = tmp_path / "t.duckdb"
    code, out = load_json(db, logs)
    assert code == 0
    assert [(d["path"].rsplit("/", 1)[1], d["status"], d["loaded"], d["quarantined"]) for d in out["details"]] == [
        ("a_bom.jsonl", "new", 2, 0),
        ("b_crlf.jsonl", "new", 2, 1),
        ("c_empty.jsonl", "empty", 0, 0),
        ("d_blank.jsonl", "new", 0, 0),
    ]
    assert ids(db) == ["bom1", "bom2", "crlf1", "crlf2"]
    (row,) = quarantine(db)
    assert (row["path"].rsplit("/", 1)[1], row["line_no"], row["reason"], row["raw"]) == ("b_crlf.jsonl", "2", "malformed JSON", "{oops}")
    # Loading again adds nothing, blank and empty files included.
    code, out = load_json(db, logs)
    assert (out["loaded"], out["quarantined"]) == (0, 0) or (out["loaded"], out["quarantined"]) == (0, 1)
    assert len(ids(db)) == 4 and len(quarantine(db)) == 1


def test_folder_with_other_files_and_a_symlink_loop(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "app.jsonl").write_text(line(tool_call_id="app"))
    (logs / "README.md").write_text("# notes\n")
    (logs / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1\x00")
    (logs / "blob.json").write_bytes(bytes(range(256)) * 4)  # binary, but named like a log
    (logs / "sub" / "loop").symlink_to("..")  # logs/sub/loop -> logs: a cycle
    (logs / "sub" / "dangling.jsonl").symlink_to(tmp_path / "missing.jsonl")
    db = tmp_path / "t.duckdb"
    result = invoke("load", "--db", str(db), str(logs))
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "Not log files (not *.jsonl, *.ndjson, *.json or .gz), left out: 2 files," in flat
    assert ".DS_Store" in flat and "README.md" in flat
    assert ids(db) == ["app"]  # once, although the loop leads back to it
    rows = quarantine(db)
    assert rows and all(r["path"].endswith("blob.json") for r in rows)
    assert all(r["reason"].startswith(("not UTF-8", "malformed JSON", "not a JSON object")) for r in rows)
    code, out = load_json(db, logs)
    assert sorted(Path(p).name for p in out["ignored"]) == [".DS_Store", "README.md"]


def test_a_50mb_line_and_a_10000_deep_unknown_field(tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    deep = '{"a":' * 10_000 + "1" + "}" * 10_000
    with open(log, "w") as f:
        f.write(line(tool_call_id="before"))
        f.write(line(tool_call_id="huge", error_message="x" * 50_000_000))
        f.write(line(tool_call_id="deep")[:-2] + ', "junk": ' + deep + "}\n")
        f.write(line(tool_call_id="after"))
    db = tmp_path / "t.duckdb"
    code, out = load_json(db, log)
    assert code == 0
    (row,) = quarantine(db)
    assert (row["line_no"], row["reason"]) == ("2", "line too long (over 1048576 bytes)")
    assert len(row["raw"]) == 2000
    assert ids(db) == ["before", "deep", "after"]
    con = duckdb.connect(str(db), read_only=True)
    try:
        (extra,) = con.execute("SELECT extra FROM tool_calls WHERE tool_call_id = 'deep'").fetchone()
    finally:
        con.close()
    assert extra.replace(" ", "") == '{"junk":' + deep + "}"  # the unknown field is kept whole


def test_hostile_text_is_inert_in_quarantine_and_load_output(tmp_path: Path) -> None:
    hostile = "\x1b[31mRED\x1b]8;;http://evil\x07[bold]x[/bold]\u202e"
    log = tmp_path / "evil\x1b[2J.jsonl"
    raw = lambda **f: json.dumps(rec(**f), ensure_ascii=False) + "\n"  # noqa: E731 (control characters unescaped)
    log.write_text(
        raw(tool_call_id="h1", conversation_id=hostile, is_error=True, outcome="permanent_fail", error_message="=cmd|'/C calc'!A0")
        + raw(tool_call_id="h2", conversation_id=hostile, step="1\x1b[31m")
        + "=HYPERLINK(\"http://evil\")\n"
    )
    db = tmp_path / "t.duckdb"
    for args in ((), ("--format", "json"), ("--format", "csv")):
        result = invoke("load", "--db", str(db), *args, str(log))
        assert result.exit_code == 0
        assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    for args in ((), ("--format", "json"), ("--format", "csv")):
        result = invoke("quarantine", "--db", str(db), *args)
        assert result.exit_code == 0
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\u202e" not in result.stdout, args
    table = invoke("quarantine", "--db", str(db)).stdout
    assert "[bold]" in table or "\\u001b" in table  # markup shown as text, not applied
    rows = quarantine(db)
    assert [r["line_no"] for r in rows] == ["2", "3"]
    assert rows[1]["raw"] == "'=HYPERLINK(\"http://evil\")"  # a spreadsheet formula, defused
    # The stored record keeps the text exactly; only output neutralises it.
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT conversation_id FROM tool_calls").fetchall() == [(hostile,)]
    finally:
        con.close()


def test_db_is_a_folder_or_not_a_duckdb_file(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_text(line())
    folder = tmp_path / "dbdir"
    folder.mkdir()
    result = invoke("load", "--db", str(folder), str(log))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "--db takes a file" in " ".join(result.output.split())
    other = tmp_path / "notes.duckdb"
    other.write_text("hello, not a database\n")
    result = invoke("load", "--db", str(other), str(log))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "not a loopscope database" in " ".join(result.output.split())
    assert other.read_text() == "hello, not a database\n"  # left alone


def test_read_only_db_file(tmp_path: Path) -> None:
    import os

    import pytest

    if os.geteuid() == 0:
        pytest.skip("root writes read-only files")
    log = tmp_path / "app.jsonl"
    log.write_text(line())
    db = tmp_path / "t.duckdb"
    assert invoke("load", "--db", str(db), str(log)).exit_code == 0
    db.chmod(0o444)
    result = invoke("load", "--db", str(db), str(log))
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_two_loads_on_one_db_at_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    log = tmp_path / "app.jsonl"
    log.write_text(line())
    db = tmp_path / "t.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = subprocess.run(
            [sys.executable, "-c", "from loopscope.cli import main; main()", "load", "--db", str(db), str(log)], capture_output=True, text=True
        )
    finally:
        holder.communicate("")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    text = " ".join(result.stderr.split())
    assert "Could not set lock" in text and "another loopscope (or DuckDB) process has it open" in text


def test_unknown_fields_are_kept_even_when_null_or_of_the_other_kind(tmp_path: Path) -> None:
    # The fast path counts keys; these lines must still reach the key list and keep their extras.
    log = tmp_path / "extra.jsonl"
    log.write_text(
        line(tool_call_id="plain")
        + line(tool_call_id="foreign_null", exit_reason=None)
        + line(tool_call_id="foreign", steps=3, note=None)
        + json.dumps({"v": 1, "kind": "loop_exit", "ts": "2026-11-20T10:00:01Z", "conversation_id": "c1",
                      "prompt_id": "p1", "exit_reason": "end_turn", "tool_name": None, "error_type": None}) + "\n"
    )
    db = tmp_path / "t.duckdb"
    code, out = load_json(db, log)
    assert code == 0 and (out["loaded"], out["quarantined"]) == (4, 0)
    con = duckdb.connect(str(db), read_only=True)
    try:
        tc = con.execute("SELECT tool_call_id, extra FROM tool_calls ORDER BY line_no").fetchall()
        le = con.execute("SELECT extra FROM loop_exits").fetchall()
    finally:
        con.close()
    assert [(i, json.loads(e) if e else None) for i, e in tc] == [
        ("plain", None),
        ("foreign_null", {"exit_reason": None}),
        ("foreign", {"steps": 3, "note": None}),
    ]
    assert [json.loads(e) for (e,) in le] == [{"tool_name": None}]


def test_metrics_on_paths_names_an_unreadable_file_and_reports_the_rest(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (tmp_path / "good.jsonl").write_text(line(tool_call_id="good"))
    result = invoke("metrics", "--db", ":memory:", "--format", "json", str(tmp_path))
    assert result.exit_code == 0
    assert "skipped" in result.output and "bad.jsonl.gz" in result.output
    assert json.loads(result.stdout)["tool_calls"] == 1


def test_gzip_file_loads_exactly_like_the_plain_file(tmp_path: Path, monkeypatch: Any) -> None:
    import gzip

    from loopscope.analyses.ingest import jsonl as loader_records

    body = (
        "".join(line(tool_call_id=f"t{i}", step=i % 7) for i in range(500))
        + "\n{oops}\n"
        + line(tool_call_id="x", step="1")
        + line(tool_call_id="last")[:-1]  # a complete last record without its newline
    )
    plain_dir, gz_dir = tmp_path / "plain", tmp_path / "gz"
    plain_dir.mkdir()
    gz_dir.mkdir()
    (plain_dir / "app.jsonl").write_text(body)
    (gz_dir / "app.jsonl.gz").write_bytes(gzip.compress(body.encode()))
    read: list[str] = []
    real = loader_records._read_plain
    monkeypatch.setattr(loader_records, "_read_plain", lambda con, p, *rest: read.append(p.name) or real(con, p, *rest))
    tables = {}
    for name, folder in (("plain", plain_dir), ("gz", gz_dir)):
        db = tmp_path / f"{name}.duckdb"
        code, out = load_json(db, folder)
        assert code == 0 and (out["loaded"], out["quarantined"]) == (501, 2)
        con = duckdb.connect(str(db), read_only=True)
        try:
            tables[name] = (
                con.execute("SELECT * EXCLUDE (source_id) FROM tool_calls ORDER BY seq").fetchall(),
                con.execute("SELECT line_no, reason, raw FROM quarantine ORDER BY line_no").fetchall(),
                con.execute("SELECT bytes_loaded, lines_loaded FROM sources").fetchall(),
            )
        finally:
            con.close()
    assert tables["gz"] == tables["plain"]
    assert [q[0] for q in tables["gz"][1]] == [502, 503]
    # Both took the whole-file reader (DuckDB's parallel one), the .gz via a temporary copy.
    assert read == ["app.jsonl", "content.jsonl"]


def test_timestamps_that_are_not_rfc_3339_are_quarantined_on_both_paths(tmp_path: Path) -> None:
    """DuckDB's timestamp cast takes 'infinity', 'epoch', a bare date or single-digit fields; the loader does not.

    Each value once in a line as the collector writes it (the fast path) and once as json.dumps writes it.
    """
    from loopscope.analyses.ingest.fast_sql import TOOL_CALL_ORDER

    def collector_line(ts: str, call_id: str) -> str:
        rec = dict.fromkeys(TOOL_CALL_ORDER) | rec_fields(ts=ts, tool_call_id=call_id)
        del rec["tags"]  # the collector leaves out empty tags
        return json.dumps(rec, separators=(",", ":")) + "\n"

    def rec_fields(**fields: Any) -> dict[str, Any]:
        return rec(**fields) | {"attempts": 1, "replayed": False}

    bad_ts = ["infinity", "-infinity", "epoch", "2026-11-20", "2026-11-20 10:00", "2026-1-2T3:4:5Z", " 2026-11-20T10:00:00Z"]
    good = collector_line("2026-11-20T10:00:00.123456Z", "good-fast") + line(tool_call_id="good-slow", ts="2026-11-20t11:00:00+01:00")
    body = "".join(collector_line(ts, f"fast-{i}") + line(tool_call_id=f"slow-{i}", ts=ts) for i, ts in enumerate(bad_ts))
    log = tmp_path / "ts.jsonl"
    log.write_text(good + body)
    code, out = load_json(tmp_path / "t.duckdb", log)
    assert code == 0
    assert (out["loaded"], out["quarantined"]) == (2, 2 * len(bad_ts))
    assert ids(tmp_path / "t.duckdb") == ["good-fast", "good-slow"]
    reasons = [r["reason"] for r in quarantine(tmp_path / "t.duckdb")]
    assert reasons == [f"bad timestamp ts: {json.dumps(ts)} is not RFC 3339" for ts in bad_ts for _ in (1, 2)]


def test_a_statement_that_fails_mid_file_is_the_error_reported_and_leaves_no_setting_behind(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # A failed or interrupted statement aborts its transaction: DuckDB then refuses every statement
    # until the rollback, so putting a setting back there must not replace the error that happened.
    from loopscope.analyses.ingest import fast_sql
    from loopscope.analyses.ingest.load import load_paths
    from loopscope.analyses.store import connect

    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    first.write_text(line(tool_call_id="t1"))
    second.write_text(line(conversation_id="c2", tool_call_id="t2"))
    con = connect(str(tmp_path / "s.duckdb"))
    try:
        settings = "SELECT current_setting('threads'), current_setting('preserve_insertion_order')"
        before = con.execute(settings).fetchone()
        real = dict(fast_sql.FAST_INSERT_SQL)
        strict, tolerant = real["file", False], real["file", True]
        # The second file's first statement fails, in the strict parse and again in the tolerant one it retries with.
        failing = ("SELECT error('disk on fire'), $1, $2, $3", tolerant[1])
        calls = iter([strict, failing, failing])
        monkeypatch.setattr(fast_sql, "FAST_INSERT_SQL", _Each(real, calls))
        with pytest.raises(duckdb.InvalidInputException, match="disk on fire"):
            load_paths(con, [first, second])
        assert con.execute(settings).fetchone() == before
        assert con.execute("SELECT tool_call_id FROM tool_calls").fetchall() == [("t1",)]  # file 1 committed, 2 rolled back
        monkeypatch.setattr(fast_sql, "FAST_INSERT_SQL", real)
        summary = load_paths(con, [first, second])
        assert [d.status for d in summary.details] == ["unchanged", "new"] and summary.loaded == 1
    finally:
        con.close()


class _Each(dict):  # type: ignore[type-arg]
    """``FAST_INSERT_SQL`` whose ``file`` entries are the next of ``calls`` each time one is read."""

    def __init__(self, real: dict[tuple[str, bool], Any], calls: Any) -> None:
        super().__init__(real)
        self._calls = calls

    def __getitem__(self, key: tuple[str, bool]) -> Any:
        return next(self._calls) if key[0] == "file" else super().__getitem__(key)


def test_ctrl_c_inside_duckdb_is_an_interruption_not_an_internal_error(monkeypatch: Any) -> None:
    # Ctrl-C during a statement ends it with DuckDB's own error ("Query interrupted"), not KeyboardInterrupt.
    import loopscope.analyses.ingest as ingest

    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(ingest, "load_paths", interrupted)
    result = invoke("load", "--db", ":memory:", str(Path(__file__).parent.parent / "sample_logs"))
    assert result.exit_code == 130
    assert "interrupted" in result.stderr and "internal error" not in result.stderr


def test_a_folder_of_inspect_eval_logs_says_how_to_convert_them(tmp_path: Path) -> None:
    # Inspect AI writes .eval (zip) logs by default: a logs folder of them used to end in
    # "0 files: 0 records loaded" and "Not log files ... left out" with nothing on what to do.
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "2025-02-11T15-17-00-05-00_popularity_dPiJ.eval").write_bytes(b"PK\x03\x04" + b"\x00" * 60)
    (logs / "notes.txt").write_text("x\n")
    result = invoke("load", "--db", str(tmp_path / "t.duckdb"), str(logs))
    flat = " ".join(result.output.split())
    assert "left out: 2 files" in flat
    assert "Inspect AI .eval logs (zip) among them: 1;" in flat and "inspect log convert" in flat
