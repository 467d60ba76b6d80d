"""The native scanner (analyses/native/linescan.c via loader_native) on what the property test cannot write.

tests/test_loader_fast_path.py runs its differential tests on both fast paths
(SQL and native). These add what its text-based generator does not reach:
raw bytes (invalid UTF-8, NUL, CR), lines over the length limit, deep nesting,
numbers that overflow, buffers big enough for the scan to run on several
threads, chunk boundaries, and many left-over lines at once. Each loads the
same bytes with the native path and with the full validation alone and
compares everything stored, through ``loopscope load`` (the path a user
takes) and the library.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from loopscope.analyses.ingest import native as loader_native
from loopscope.analyses.ingest import jsonl as loader_records
from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.ingest.records import MAX_LINE_BYTES
from loopscope.analyses.store import connect
from loopscope.cli import app
from typer.testing import CliRunner

runner = CliRunner()
native_only = pytest.mark.skipif(not loader_native.available(), reason="the native scanner is not built")


def test_the_native_scanner_is_built_where_a_compiler_is() -> None:
    """With a C compiler at install time (CI has one) the native path must not silently fall back."""
    if os.environ.get("CI") and (shutil.which("cc") or shutil.which("gcc")):
        assert loader_native.available()


def tool_call(i: int, **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "v": 1, "kind": "tool_call", "ts": f"2026-11-22T00:{i // 60 % 60:02d}:{i % 60:02d}.5Z",
        "conversation_id": f"c{i // 7}", "prompt_id": f"c{i // 7}-p{i // 3}", "agent": "a", "trace_id": None,
        "span_id": None, "tool_call_id": f"t{i}", "tool_name": "search", "step": i % 5,
        "input_shape": {"q": "string"}, "args_fingerprint": "ab" * 32, "outcome": "ok", "is_error": False,
        "attempts": 1, "latency_ms": 12.5, "error_type": None, "error_message": None, "replayed": False,
    }  # fmt: skip
    rec.update(over)
    return rec


def loop_exit(i: int, **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "v": 1, "kind": "loop_exit", "ts": f"2026-11-22T01:{i // 60 % 60:02d}:{i % 60:02d}Z",
        "conversation_id": f"c{i // 7}", "prompt_id": f"c{i // 7}-p{i // 3}", "agent": None, "trace_id": None,
        "span_id": None, "exit_reason": "end_turn", "steps": 3, "tool_calls": 2, "tool_errors": 0,
        "max_tool_calls": None, "input_tokens": 100, "output_tokens": 20, "duration_ms": 1500.0,
        "error_type": None, "error_message": None,
    }  # fmt: skip
    rec.update(over)
    return rec


def compact(rec: dict[str, Any]) -> bytes:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@contextmanager
def paths(native: bool) -> Iterator[None]:
    saved = loader_records.FAST_PATH, loader_records.NATIVE
    loader_records.FAST_PATH, loader_records.NATIVE = native, native
    try:
        yield
    finally:
        loader_records.FAST_PATH, loader_records.NATIVE = saved


def stored(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    def rows(query: str) -> list[tuple[Any, ...]]:
        return [tuple(float.hex(v) if isinstance(v, float) else v for v in r) for r in con.execute(query).fetchall()]

    return {
        "tool_calls": rows(
            "SELECT * REPLACE (tags::VARCHAR AS tags, input_shape::VARCHAR AS input_shape, extra::VARCHAR AS extra) "
            "FROM tool_calls ORDER BY seq"
        ),
        "loop_exits": rows("SELECT * REPLACE (tags::VARCHAR AS tags, extra::VARCHAR AS extra) FROM loop_exits ORDER BY seq"),
        "quarantine": rows("SELECT * EXCLUDE (quarantined_at) FROM quarantine ORDER BY line_no, reason, raw"),
        "sources": rows(
            "SELECT source_id, path, input_format, head_hash, head_len, bytes_loaded, lines_loaded "
            "FROM sources ORDER BY source_id"
        ),
    }


def load_both(tmp_path: Path, data: bytes, name: str = "log.jsonl", chunk: int | None = None) -> dict[str, Any]:
    """Load ``data`` natively and with the full validation only; assert both store the same; return that."""
    log = tmp_path / name
    log.write_bytes(data)
    results = {}
    for native in (True, False):
        con = connect(tmp_path / f"{'native' if native else 'full'}.duckdb")
        saved = loader_records.NATIVE_CHUNK_BYTES
        if chunk is not None:
            loader_records.NATIVE_CHUNK_BYTES = chunk
        try:
            with paths(native):
                summary = load_paths(con, [log]).as_dict()
            results[native] = (summary, stored(con))
        finally:
            loader_records.NATIVE_CHUNK_BYTES = saved
            con.close()
    assert results[True][0] == results[False][0], "load summary: native (left) vs full validation (right)"
    for table in results[False][1]:
        assert results[True][1][table] == results[False][1][table], f"{table}: native (left) vs full validation (right)"
    return results[True][1]


HOSTILE_LINES: list[bytes] = [
    compact(tool_call(1, error_message="bad \xff byte")).replace("\xff".encode(), b"\xff"),  # not UTF-8
    compact(tool_call(2)).replace(b'"search"', b'"se\xc0\xafrch"'),  # overlong UTF-8 encoding
    compact(tool_call(3)).replace(b'"search"', b'"se\x00rch"'),  # a raw NUL in a string
    compact(tool_call(4, error_message="a\u2028b\U0001f600")),  # fine: must be taken
    compact(tool_call(5, tags={"d": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]})),
    compact(tool_call(6)).replace(b'"input_shape":{"q":"string"}', b'"input_shape":{"q":1e999}'),
    compact(tool_call(7)).replace(b'"input_shape":{"q":"string"}', b'"input_shape":{"q":12345678901234567890123}'),
    compact(tool_call(8)).replace(b'"search"', b'"\\ud800"'),  # a lone surrogate
    compact(tool_call(9)).replace(b'"search"', b'"\\udc00\\ud800"'),
    compact(tool_call(10)).replace(b'"step":0', b'"step":-0'),
    compact(tool_call(11)).replace(b'"step":1', b'"step":1.0'),
    compact(tool_call(12)).replace(b'"latency_ms":12.5', b'"latency_ms":1E+2'),
    compact(tool_call(13)).replace(b'"latency_ms":12.5', b'"latency_ms":9.99e307'),
    compact(tool_call(14)).replace(b'{"v":1,', b'{ "v" : 1 ,\t'),  # whitespace: taken
    compact(tool_call(15)).replace(b"}", b",}"),  # a trailing comma (DuckDB reads it; JSON does not)
    compact(tool_call(16)).replace(b'"step":1', b'"step":1,"step":2'),  # a key twice
    compact(tool_call(17)) + b"\r",  # a CRLF line
    b"   ",
    b"",
    b"\t{}",
    b"[1,2]",
    compact(tool_call(18, x_new={"deep": [1, {"a": None}]}, x_other="\u00e9")),  # unknown fields: taken
    compact(tool_call(19, steps=4)),  # the other kind's field: extra
    compact(loop_exit(20, error_message="x" * 1000)),
    compact(tool_call(21, ts="2026-11-22T00:00:00+05:30")),
    compact(tool_call(21, ts="2026-11-22T00:00:00.123456789Z")),  # past microseconds: cut off, as DuckDB's cast
    compact(tool_call(21, ts="2026-11-22T23:59:59.9999999-00:30")),
    compact(tool_call(21, ts="2026-11-22t00:00:00.1234567890123456789012345678901z")),  # too many digits
    compact(tool_call(21, ts="2024-02-29 12:00:00")),  # no offset: UTC
    compact(tool_call(21, ts="2023-02-29T12:00:00Z")),  # no such day
    compact(tool_call(21, ts="2026-11-22T24:00:00Z")),
    compact(tool_call(21, ts="2026-11-22T23:59:60Z")),
    compact(tool_call(21, ts="0000-01-01T00:00:00Z")),
    compact(tool_call(21, ts="2026-11-22T00:00:00+24:00")),
    compact(tool_call(21, ts="2026-11-22T00:00:00.Z")),
    compact(tool_call(21)).replace(b'"ts":"2026', b'"ts":"\\u0032026'),  # an escape in ts
    compact(tool_call(22, ts="infinity")),  # value check refuses: full validation names it
    compact(tool_call(23, outcome="failed")),
    compact(tool_call(24, attempts=0)),
    compact(loop_exit(25, input_tokens=2**63)),
    json.dumps(tool_call(26)).encode(),  # Python's default separators: taken
    json.dumps(dict(reversed(list(tool_call(27).items())))).encode(),  # any key order: taken
    compact(tool_call(28)).replace(b'"kind":"tool_call"', b'"kind":"tool\\u005fcall"'),  # escaped value
    compact(tool_call(29)).replace(b'"step"', b'"st\\u0065p"'),  # escaped key
    # -0 as an integer spelling is 0 to a JSON reader, not -0.0 (found by review)
    compact(loop_exit(30)).replace(b'"duration_ms":1500.0', b'"duration_ms":-0'),
    compact(tool_call(31)).replace(b'"latency_ms":12.5', b'"latency_ms":  -0'),
    compact(tool_call(32)).replace(b'"latency_ms":12.5', b'"latency_ms":-0.0'),
    compact(tool_call(33)).replace(b'"latency_ms":12.5', b'"latency_ms":-0e0'),
]


@native_only
@pytest.mark.parametrize("ending", [b"\n", b""])
def test_hostile_bytes_store_what_the_full_validation_stores(tmp_path: Path, ending: bytes) -> None:
    data = b"\n".join(HOSTILE_LINES) + ending
    got = load_both(tmp_path, data)
    assert len(got["tool_calls"]) >= 15 and len(got["quarantine"]) >= 10  # both kinds of outcome happened


@pytest.mark.parametrize("native", [True, False])
def test_a_last_line_cut_inside_a_character_is_read_again_whole(tmp_path: Path, native: bool) -> None:
    """A writer cut off inside a multi-byte character: the line is not consumed, so the next load stores it."""
    if native and not loader_native.available():
        pytest.skip("the native scanner is not built")
    full = compact(tool_call(2, error_message="h\u00e9llo"))
    cut = full.index("\u00e9".encode()) + 1  # after the first byte of the two-byte character
    log = tmp_path / "log.jsonl"
    log.write_bytes(compact(tool_call(1)) + b"\n" + full[:cut])
    con = connect(tmp_path / "s.duckdb")
    try:
        with paths(native):
            first = load_paths(con, [log])
            log.write_bytes(compact(tool_call(1)) + b"\n" + full + b"\n")
            second = load_paths(con, [log])
        assert (first.loaded, first.quarantined) == (1, 1)
        assert (second.loaded, second.quarantined) == (1, 0)
        assert con.execute("SELECT line_no, error_message FROM tool_calls ORDER BY line_no").fetchall() == [
            (1, None),
            (2, "h\u00e9llo"),
        ]
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
    finally:
        con.close()


@native_only
@pytest.mark.parametrize("filler", [b"x" * 400 + b"\xff", b" ", b"\t"])
def test_a_line_over_the_limit_is_too_long_whatever_else_it_is(tmp_path: Path, filler: bytes) -> None:
    """Not UTF-8, or only blanks: over the limit, the reason is the length on every path (found by review)."""
    long = filler * (MAX_LINE_BYTES // len(filler) + 2)
    data = compact(tool_call(0)) + b"\n" + long + b"\n" + compact(tool_call(2)) + b"\n"
    got = load_both(tmp_path, data)
    assert [(q[2], q[3]) for q in got["quarantine"]] == [(2, f"line too long (over {MAX_LINE_BYTES} bytes)")]


def reload(tmp_path: Path, native: bool, versions: list[bytes]) -> tuple[duckdb.DuckDBPyConnection, list[Any]]:
    """Load ``log.jsonl`` once per version of its content; returns the store and the summaries."""
    if native and not loader_native.available():
        pytest.skip("the native scanner is not built")
    log = tmp_path / "log.jsonl"
    con = connect(tmp_path / "s.duckdb")
    summaries = []
    with paths(native):
        for data in versions:
            log.write_bytes(data)
            summaries.append(load_paths(con, [log]))
    return con, summaries


@pytest.mark.parametrize("native", [True, False])
def test_reloading_a_file_that_ends_without_its_newline_changes_nothing(tmp_path: Path, native: bool) -> None:
    """A complete last record without newline: reloads leave numbering and quarantine as they are (found by review)."""
    l1, l2, l3 = (compact(tool_call(i)) for i in (1, 2, 3))
    bad = b'{"v":1,"kind":"tool_call"}'
    con, summaries = reload(tmp_path, native, [l1 + b"\n" + l2, l1 + b"\n" + l2, l1 + b"\n" + l2, l1 + b"\n" + l2 + b"\n" + l3 + b"\n"])
    try:
        assert [s.details[0].status for s in summaries] == ["new", "unchanged", "unchanged", "grown"]
        assert con.execute("SELECT line_no FROM tool_calls ORDER BY seq").fetchall() == [(1,), (2,), (3,)]
        assert con.execute("SELECT lines_loaded FROM sources").fetchone() == (3,)
    finally:
        con.close()
    other = tmp_path / "other"
    other.mkdir()
    con, summaries = reload(other, native, [l1 + b"\n" + bad, l1 + b"\n" + bad])
    try:
        assert [s.quarantined for s in summaries] == [1, 0]
        assert con.execute("SELECT line_no, reason FROM quarantine").fetchall() == [(2, "missing required field ts")]
    finally:
        con.close()


@pytest.mark.parametrize("native", [True, False])
def test_a_first_line_cut_after_a_byte_order_mark_is_line_one_when_completed(tmp_path: Path, native: bool) -> None:
    l1, l2 = (compact(tool_call(i)) for i in (1, 2))
    bom = b"\xef\xbb\xbf"
    con, _ = reload(tmp_path, native, [bom + l1[:50], bom + l1 + b"\n" + l2 + b"\n"])
    try:
        assert con.execute("SELECT line_no FROM tool_calls ORDER BY seq").fetchall() == [(1,), (2,)]
        assert con.execute("SELECT lines_loaded FROM sources").fetchone() == (2,)
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
    finally:
        con.close()


@native_only
def test_a_line_over_the_limit_is_quarantined_with_its_start_only(tmp_path: Path) -> None:
    long = compact(tool_call(1, error_message="y" * (MAX_LINE_BYTES + 10)))
    data = compact(tool_call(0)) + b"\n" + long + b"\n" + compact(tool_call(2)) + b"\n"
    got = load_both(tmp_path, data)
    assert [r[2] for r in got["tool_calls"]] == [1, 3]
    (q,) = got["quarantine"]
    assert q[2] == 2 and "line too long" in q[3]


@native_only
def test_an_over_long_unterminated_last_line_is_read_again_later(tmp_path: Path) -> None:
    data = compact(tool_call(0)) + b"\n" + b'{"v":1,"kind":"tool_call","error_message":"' + b"z" * (MAX_LINE_BYTES + 5)
    got = load_both(tmp_path, data)
    (source,) = got["sources"]
    assert source[5:] == (len(compact(tool_call(0))) + 1, 1)  # bytes and lines loaded stop before the long line
    assert "line too long" in got["quarantine"][0][3]


def big_log(n: int, seed: int) -> tuple[bytes, set[int]]:
    """``n`` lines, mostly good, some bad at random places; returns the data and the bad line numbers."""
    rnd = random.Random(seed)
    lines, bad = [], set()
    for i in range(n):
        pick = rnd.random()
        if pick < 0.01:
            lines.append(b'{"v":1,"kind":"tool_call","ts":"nope"' + (b"}" if i % 2 else b""))
            bad.add(i + 1)
        elif pick < 0.15:
            lines.append(compact(loop_exit(i)))
        else:
            lines.append(compact(tool_call(i, error_message=None if i % 4 else f'HTTP 500 {{"e":"\\"{i}\\""}}')))
    return b"\n".join(lines) + b"\n", bad


@native_only
def test_a_buffer_scanned_on_several_threads_numbers_its_lines_right(tmp_path: Path) -> None:
    # Over a MiB per thread: the scan splits the buffer; line numbers must run on across the cut.
    data, bad = big_log(12_000, seed=1)
    assert len(data) > 2 * 1024 * 1024 * max(1, loader_native.THREADS // 2)
    got = load_both(tmp_path, data)
    assert {q[2] for q in got["quarantine"]} == bad
    stored_lines = sorted([r[2] for r in got["tool_calls"]] + [r[2] for r in got["loop_exits"]])
    assert stored_lines == [i for i in range(1, 12_001) if i not in bad]


@native_only
def test_chunks_of_the_file_meet_inside_lines_and_numbering_holds(tmp_path: Path) -> None:
    data, bad = big_log(800, seed=2)
    got = load_both(tmp_path, data, chunk=4096)
    assert {q[2] for q in got["quarantine"]} == bad
    assert len(got["tool_calls"]) + len(got["loop_exits"]) == 800 - len(bad)


@native_only
@pytest.mark.parametrize("chunk", [4096, 5000, 1 << 20])
def test_chunks_of_several_sizes_and_a_cut_off_last_line(tmp_path: Path, chunk: int) -> None:
    data, bad = big_log(700, seed=3)
    got = load_both(tmp_path, data[:-7], chunk=chunk)  # and a cut-off last line
    assert {q[2] for q in got["quarantine"]} == bad | {700}
    assert len(got["tool_calls"]) + len(got["loop_exits"]) == 699 - len(bad - {700})


@native_only
def test_a_line_longer_than_a_chunk_hands_over_to_the_block_path(tmp_path: Path) -> None:
    lines = [compact(tool_call(i)) for i in range(30)]
    lines[12] = compact(tool_call(12, error_message="w" * 9000))  # longer than a 4 KiB chunk, under the limit
    lines[20] = b"{broken"
    got = load_both(tmp_path, b"\n".join(lines) + b"\n", chunk=4096)
    assert [r[2] for r in got["tool_calls"]] == [i for i in range(1, 31) if i != 21]
    assert [q[2] for q in got["quarantine"]] == [21]


@native_only
def test_many_left_over_lines_go_to_the_full_validation_as_one_block(tmp_path: Path) -> None:
    # More than REST_LIST_MAX lines the scanner leaves (a trailing comma in each): one text block.
    n = loader_native.REST_LIST_MAX + 500
    lines = [compact(tool_call(i)).replace(b"}", b",}") for i in range(n)]
    lines[n // 2] = compact(tool_call(n // 2))  # one the scanner takes, among them
    lines[n // 3] = b'{"v":1,"kind":"tool_call","ts":"\xff"}'  # not UTF-8
    got = load_both(tmp_path, b"\n".join(lines) + b"\n")
    assert len(got["tool_calls"]) == n - 1 and [q[2] for q in got["quarantine"]] == [n // 3 + 1]


@native_only
def test_many_left_over_lines_in_several_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_records, "CHUNK_BYTES", 5000)  # the blocks they go to the full validation in
    n = loader_native.REST_LIST_MAX + 100
    lines = [compact(loop_exit(i)).replace(b"}", b",}") for i in range(n)]
    lines[7] = compact(loop_exit(7))
    got = load_both(tmp_path, b"\n".join(lines) + b'\n{"v":1,"kind":"loop_exit","ts":"2026-11')  # a cut-off last line
    assert len(got["loop_exits"]) == n and [q[2] for q in got["quarantine"]] == [n + 1]


@native_only
def test_gzip_and_a_grown_file_through_the_cli(tmp_path: Path) -> None:
    import gzip

    zipped = b"".join(compact(tool_call(i)) + b"\n" for i in range(100, 150))
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(zipped))
    first = b"".join(compact(tool_call(i)) + b"\n" for i in range(50))
    plain = tmp_path / "b.jsonl"
    plain.write_bytes(first[:-40])  # the last record cut off mid-line
    db = str(tmp_path / "s.duckdb")
    out = runner.invoke(app, ["load", str(tmp_path), "--db", db, "--format", "json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["tool_calls"] == 99 and summary["quarantined"] == 1
    plain.write_bytes(first + compact(loop_exit(1)) + b"\n")  # the writer finished the line and went on
    out = runner.invoke(app, ["load", str(plain), "--db", db, "--format", "json"], catch_exceptions=False)
    summary = json.loads(out.stdout)
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (1, 1, 0), summary
    con = duckdb.connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
        assert con.execute("SELECT count(*), count(DISTINCT tool_call_id) FROM tool_calls").fetchone() == (100, 100)
    finally:
        con.close()
