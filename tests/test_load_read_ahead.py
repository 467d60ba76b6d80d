"""The loader's read-ahead (analyses/ingest/readahead.py): the next file read while the current one finishes.

A load with it stores exactly what a load without it stores, whatever the files (the collector's,
with bad lines, gzip, a copy of the file before, CR bytes, loop exits only, an unterminated last
line), uses the lines it read only for the file they are from and as it was then, and leaves
DuckDB's threads and catalog as it found them, also when the load fails half way.
"""

from __future__ import annotations

import gzip
import importlib.util
import shutil
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import duckdb
import pytest

from loopscope.analyses.ingest import load as load_module
from loopscope.analyses.ingest import readahead
from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.ingest.records import READ_AHEAD_DB
from loopscope.collectors import Collector, JsonlSink

_spec = importlib.util.spec_from_file_location("loopscope_test_store_template", Path(__file__).parent / "store_template.py")
assert _spec and _spec.loader
_store_template = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_store_template)
new_store = _store_template.new_store

THREADS_SQL = "SELECT current_setting('threads')"


def collector_file(path: Path, prompts: int, seed: int, tool_calls: bool = True) -> None:
    """A real collector writing ``prompts`` prompts: ok, failed and retried calls, each prompt's exit."""
    clock = count()
    collector = Collector(JsonlSink(path), wall_clock=lambda: 1_795_305_600.0 + seed * 1000 + next(clock) * 0.01)
    for p in range(prompts):
        with collector.prompt(conversation_id=f"conv-{seed}-{p % 7}", agent=f"agent-{seed % 2}") as loop:
            loop.model_response(stop_reason="tool_use", input_tokens=10 + p, output_tokens=3)
            for c in range(3 if tool_calls else 0):
                with loop.tool_call(f"call-{seed}-{p}-{c}", ["search", "book", "pay"][c], {"q": p, "n": [c]}) as call:
                    if (p + c) % 5 == 0:
                        call.fail(f"no room for guest {p}", "not_found")
                    elif (p + c) % 7 == 0:
                        call.attempt_failed(TimeoutError("slow"))
            loop.model_response(stop_reason="end_turn", input_tokens=5, output_tokens=1)
    collector.close()


def stored(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: con.execute(query).fetchall()
        for table, query in {
            "tool_calls": "SELECT * REPLACE (tags::VARCHAR AS tags, input_shape::VARCHAR AS input_shape, "
            "extra::VARCHAR AS extra) FROM tool_calls ORDER BY seq",
            "loop_exits": "SELECT * REPLACE (tags::VARCHAR AS tags, extra::VARCHAR AS extra) FROM loop_exits ORDER BY seq",
            "quarantine": "SELECT * EXCLUDE (quarantined_at) FROM quarantine ORDER BY source_id, line_no",
            "sources": "SELECT * EXCLUDE (first_loaded_at, last_loaded_at) FROM sources ORDER BY source_id",
        }.items()
    }


def read_ahead_databases(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?", [READ_AHEAD_DB]).fetchone()
    return int(row[0]) if row else -1


@pytest.fixture
def large_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every input loads as large input would (the read-ahead is for loads that are not small)."""
    monkeypatch.setattr(load_module, "SMALL_INPUT_BYTES", 0)


@pytest.fixture
def takes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bool]]]:
    """Each ``ReadAhead.take``: the file's name and whether it gave lines read ahead."""
    seen: list[tuple[str, bool]] = []
    original = readahead.ReadAhead.take

    def take(self: readahead.ReadAhead, path: Path) -> Any:
        whole = original(self, path)
        seen.append((path.name, whole is not None))
        return whole

    monkeypatch.setattr(readahead.ReadAhead, "take", take)
    yield seen


def mixed_files(folder: Path) -> list[Path]:
    """Files in load order, each a different way for a file to meet the read-ahead."""
    folder.mkdir()
    a = folder / "a.jsonl"
    collector_file(a, 40, 1)
    copy = folder / "a-copy.jsonl"  # a's head: known once a is committed, read ahead while it was not
    shutil.copyfile(a, copy)
    bad = folder / "b.jsonl"
    collector_file(bad, 40, 2)
    lines = bad.read_text(encoding="utf-8").split("\n")
    lines[5] = lines[5][:-1] + ',"new_field":{"x":1}}'  # an unknown field after the known ones
    lines[9] = lines[9].replace('"outcome":"ok"', '"outcome":"maybe"')
    lines.insert(12, "")
    lines.insert(20, "not json at all")
    bad.write_text("\n".join(lines), encoding="utf-8")
    gz = folder / "c.jsonl.gz"
    collector_file(folder / "c.tmp", 40, 3)
    gz.write_bytes(gzip.compress((folder / "c.tmp").read_bytes()))
    (folder / "c.tmp").unlink()
    cr = folder / "d.jsonl"  # CR bytes: the block path
    collector_file(cr, 20, 4)
    cr.write_bytes(cr.read_bytes().replace(b"\n", b"\r\n"))
    exits = folder / "e.jsonl"  # loop exits only: the tool_call insert takes none, nothing is read ahead
    collector_file(exits, 30, 5, tool_calls=False)
    after_exits = folder / "f.jsonl"
    collector_file(after_exits, 30, 6)
    cut = folder / "g.jsonl"  # an unterminated last line
    collector_file(cut, 30, 7)
    cut.write_bytes(cut.read_bytes()[:-40])
    return [a, copy, bad, gz, cr, exits, after_exits, cut]


def load_into(db: Path, files: list[Path], read_ahead: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    with monkeypatch.context() as m:
        if not read_ahead:
            m.setattr(load_module.ReadAhead, "open", classmethod(lambda cls, *a: None))
        con = new_store(db)
        try:
            threads = con.execute(THREADS_SQL).fetchone()
            summary = load_paths(con, [str(f) for f in files])
            assert con.execute(THREADS_SQL).fetchone() == threads
            assert read_ahead_databases(con) == 0
            return summary.as_dict(), stored(con)
        finally:
            con.close()


def test_a_load_with_the_read_ahead_stores_what_one_without_it_stores(
    tmp_path: Path, large_path: None, takes: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = mixed_files(tmp_path / "logs")
    with_it = load_into(tmp_path / "with.duckdb", files, True, monkeypatch)
    served = list(takes)
    takes.clear()
    without = load_into(tmp_path / "without.duckdb", files, False, monkeypatch)
    assert not takes
    assert with_it[1] == without[1]
    assert with_it[0] == without[0]
    summary, rows = with_it
    assert summary["quarantined"] == 3 and len(rows["quarantine"]) == 3  # two in b, g's cut last line
    assert [d["status"] for d in summary["details"]] == ["new", "unchanged", "new", "new", "new", "new", "new", "new"]
    # The read-ahead gave c and g, each after a file the collector wrote. a-copy was read while a
    # was not committed and not used (the store knew it when the loader got there: no take); b came
    # after a-copy, which needed no read; d has CR bytes (the reader refuses it, ahead or not); e
    # came after d (the block path reads ahead nothing) and f after e (loop exits only: no
    # tool_call insert to overlap).
    assert served == [
        ("a.jsonl", False), ("b.jsonl", False), ("c.jsonl.gz", True), ("d.jsonl", False), ("e.jsonl", False), ("f.jsonl", False),
        ("g.jsonl", True),
    ]


def test_a_file_changed_after_it_was_read_ahead_is_read_again(
    tmp_path: Path, large_path: None, takes: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    first, second = folder / "1.jsonl", folder / "2.jsonl"
    collector_file(first, 30, 1)
    collector_file(second, 30, 2)
    extra = folder / "more.jsonl"
    collector_file(extra, 5, 3)
    original = readahead.ReadAhead.take  # (the fixture's: it records what the read-ahead gave)
    was_read: list[bool] = []

    def grow_then_take(self: readahead.ReadAhead, path: Path) -> Any:
        if path == second:  # appended to between its read ahead and its load
            read = self._read
            was_read.append(read is not None and read.path == second and read.whole is not None)
            with second.open("ab") as f:
                f.write(extra.read_bytes())
        return original(self, path)

    monkeypatch.setattr(readahead.ReadAhead, "take", grow_then_take)
    con = new_store(tmp_path / "s.duckdb")
    try:
        summary = load_paths(con, [str(first), str(second)])
        assert summary.quarantined == 0
        n = con.execute("SELECT count(*) FROM tool_calls WHERE source_id = 2").fetchone()
        lines = second.read_bytes().count(b"\n")
        exits = con.execute("SELECT count(*) FROM loop_exits WHERE source_id = 2").fetchone()
        assert n is not None and exits is not None and n[0] + exits[0] == lines == 35 * 4
    finally:
        con.close()
    assert was_read == [True] and takes == [("1.jsonl", False), ("2.jsonl", False)]


def test_a_load_failing_half_way_gives_back_the_threads_and_the_catalog(
    tmp_path: Path, large_path: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    files = []
    for i in range(3):
        files.append(folder / f"{i}.jsonl")
        collector_file(files[-1], 30, i)
    calls = count()
    original = load_module.redact_new_rows

    def fail_on_the_second_file(con: duckdb.DuckDBPyConnection, source_id: int, seq_base: int) -> None:
        if next(calls) == 1:  # while the third file is read ahead
            raise RuntimeError("disk on fire")
        original(con, source_id, seq_base)

    monkeypatch.setattr(load_module, "redact_new_rows", fail_on_the_second_file)
    con = new_store(tmp_path / "s.duckdb")
    try:
        threads = con.execute(THREADS_SQL).fetchone()
        with pytest.raises(RuntimeError, match="disk on fire"):
            load_paths(con, [str(f) for f in files])
        assert con.execute(THREADS_SQL).fetchone() == threads
        assert read_ahead_databases(con) == 0
        monkeypatch.setattr(load_module, "redact_new_rows", original)
        summary = load_paths(con, [str(f) for f in files])  # the read-ahead is free again: everything loads
        assert [d.status for d in summary.details] == ["unchanged", "new", "new"]
        assert summary.loaded == 2 * 30 * 4
    finally:
        con.close()
