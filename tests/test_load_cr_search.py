"""The whole-file reader's search for CR, one window of the mapped file at a time (docs/loading.md, eighth pass)."""

from __future__ import annotations

import json
import mmap
import sys
from pathlib import Path

import duckdb
import pytest

from loopscope.analyses.ingest import jsonl

LINE = json.dumps(
    {"v": 1, "kind": "loop_exit", "ts": "2026-11-20T10:00:00Z", "conversation_id": "c1", "prompt_id": "p1", "agent": "a"}
).encode() + b"\n"


def _file_of(tmp_path: Path, name: str, lines: int) -> tuple[Path, bytes]:
    data = LINE * lines
    path = tmp_path / name
    path.write_bytes(data)
    return path, data


def test_a_cr_in_any_window_sends_the_file_to_the_block_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows of one page: a file of several windows, a CR at each edge of a window and at the end.
    monkeypatch.setattr(jsonl, "CR_SEARCH_WINDOW", mmap.PAGESIZE)
    path, data = _file_of(tmp_path, "clean.jsonl", (5 * mmap.PAGESIZE) // len(LINE))
    assert len(data) > 4 * mmap.PAGESIZE
    con = duckdb.connect()
    whole = jsonl.read_whole_file(con, path)
    assert whole is not None and whole.lines == len(data) // len(LINE)
    for at in (0, mmap.PAGESIZE - 1, mmap.PAGESIZE, 3 * mmap.PAGESIZE + 7, len(data) - 2):
        spoiled = bytearray(data)
        spoiled[at] = ord("\r")
        bad = tmp_path / f"cr-{at}.jsonl"
        bad.write_bytes(bytes(spoiled))
        with open(bad, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            assert jsonl._has_cr(mm, len(spoiled)), at
        assert jsonl.read_whole_file(con, bad) is None, at


def _rss_file_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssFile:"):
                return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the resident set from /proc (Linux)")
def test_the_search_does_not_keep_the_file_resident(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Searched whole, the mapped file's pages stayed resident until the map closed: the peak of a
    # 10M load. Windows of 1 MiB over a 32 MiB file leave at most about a window mapped.
    monkeypatch.setattr(jsonl, "CR_SEARCH_WINDOW", 1024 * 1024)
    path, data = _file_of(tmp_path, "big.jsonl", (32 * 1024 * 1024) // len(LINE))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        before = _rss_file_kb()
        assert not jsonl._has_cr(mm, len(data))
        grown_kb = _rss_file_kb() - before
    assert grown_kb < 8 * 1024, f"the search left {grown_kb} KiB of the 32 MiB file resident"
