"""Records files into the store: the ways lines reach the store.

``read_native`` (the default when the C extension is built): the file is read
into one reused buffer in chunks of whole lines (a file up to 1 GiB in one)
and each chunk goes to ``native_insert``: the scanner (``loader_native``)
inserts the plain records, the full validation (``loader_sql``) takes the
rest. Without the extension, ``read_whole_file``: DuckDB's parallel CSV reader
reads a plain file as one text column, one row per line; the row's position
is the line number, which the newline count checked in Python guarantees.
``read_in_blocks`` (what neither takes: a resumed gzip file, a broken gzip
stream, the rest of a file after a line longer than a chunk; without the
extension also resumed files, CR or control bytes, invalid UTF-8): Python
cuts the file into blocks of whole lines; each block takes the native path,
or else DuckDB splits it. The SQL routes end in ``check_and_insert``: lines
exactly as the collector writes them go straight in (``loader_fast_sql``),
the rest through the full validation.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from loopscope.analyses.ingest import fast_sql
from loopscope.analyses.ingest import native
from loopscope.analyses.ingest import records as sql
from loopscope.analyses.ingest.files import (
    CHUNK_BYTES,
    Chunk,
    OverlongLine,
    StreamBreak,
    UnreadableFile,
    is_gzip,
    iter_chunks,
    open_bytes,
    read_some,
)


FAST_PATH = True
"""Whether lines exactly as the collector writes them skip the full validation (tests turn it off to compare)."""

NATIVE = native.available()
"""Whether the fast path is the C scanner (``loader_native``) rather than the SQL one (tests switch it)."""

NATIVE_CHUNK_BYTES = 1024 * 1024 * 1024
"""How much of a plain file one native scan and insert takes (whole lines; a longer line makes a longer chunk)."""

GZIP_FAST_MAX_BYTES = 1024 * 1024 * 1024
"""A new .gz file decompressing to at most this much takes the fast path via a temporary copy."""


def read_whole_file(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[int, bool, int, int] | None:
    """Fast path: DuckDB's parallel CSV reader reads the lines of a file.

    Returns (lines, last line unterminated, bytes of that last line, bytes of
    content), or None when the file needs the block path: a byte-order mark,
    not UTF-8, a byte the CSV reader treats differently from the line
    splitter (so its row numbers would not be line numbers), or a gzip file
    that is broken or decompresses to more than ``GZIP_FAST_MAX_BYTES``.

    A gzip file is decompressed to a temporary file first (read once, then
    deleted): the parallel reader on plain text beats decompressing into
    blocks for the single-threaded block path by about 2x.

    Exact line numbers rest on two checks. Before the read, the file is
    searched (memory-mapped, no copy) for the bytes that make rows differ
    from lines: CR is a line break to the CSV reader, and \x01 its column
    separator. After it, the rows' bytes plus one newline each must add up to
    the file's size, so a row the reader split, merged or cut short shows.
    """
    if not is_gzip(path):
        return _read_plain(con, path)
    with tempfile.TemporaryDirectory(prefix="loopscope-") as tmp:
        plain = Path(tmp) / "content.jsonl"
        if not _decompress(path, plain):
            return None
        return _read_plain(con, plain)


def _decompress(path: Path, target: Path) -> bool:
    """Write ``path``'s gzip content to ``target``; False if the stream is broken or too big."""
    # The trailer's ISIZE (content size mod 4 GiB) tells most big files apart
    # before any work; the running count below catches the rest.
    try:
        with open(path, "rb") as f:
            f.seek(-4, os.SEEK_END)
            if int.from_bytes(f.read(4), "little") > GZIP_FAST_MAX_BYTES:
                return False
    except OSError:
        return False  # shorter than a trailer: a broken stream, for the block path to report
    with open_bytes(path) as src:
        try:
            dst = open(target, "wb")
        except OSError:
            return False
        with dst:
            written = 0
            while True:
                try:
                    block, broken = read_some(src, CHUNK_BYTES, True)
                except OSError as exc:
                    raise UnreadableFile(f"cannot read {path}: {exc.strerror or exc}", hint="check the file and the disk") from None
                if broken is not None:
                    return False  # the block path loads what comes before the break
                if not block:
                    return True
                written += len(block)
                if written > GZIP_FAST_MAX_BYTES:
                    return False
                try:
                    dst.write(block)
                except OSError:
                    return False  # no room for the copy (disk full): the block path needs none


def _read_plain(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[int, bool, int, int] | None:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                if mm[:3] == b"\xef\xbb\xbf" or mm.find(b"\r") != -1 or mm.find(b"\x01") != -1:
                    return None
                unterminated = mm[size - 1 : size] != b"\n"
    except (OSError, ValueError) as exc:
        raise UnreadableFile(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", hint="check the file's permissions") from None
    try:
        con.execute(sql.READ_LINES_SQL, [str(path)])
        row = con.execute(sql.COUNT_LINES_SQL).fetchone()
    except duckdb.Error:
        return None  # not UTF-8, a line over the limit, ...: the block path says which line
    if not row:
        return None
    lines, text_bytes, last_bytes = int(row[0]), int(row[1] or 0), int(row[2] or 0)
    if text_bytes + lines - (1 if unterminated else 0) != size:
        return None
    return lines, unterminated, (last_bytes if unterminated else 0), size


def read_in_blocks(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    start_offset: int,
    lines_before: int,
    source_id: int,
    display: str,
    seq_base: int,
    tick: Callable[[int], None],
) -> tuple[int, int, list[int]]:
    """Block path: whole lines from Python, from ``start_offset``.

    Returns the byte offset and line number consumed up to, and the counts
    [tool_calls, loop_exits, quarantined].
    """
    end_offset, last_line = start_offset, lines_before
    totals = [0, 0, 0]
    for piece in iter_chunks(path, start_offset, lines_before + 1):
        if isinstance(piece, StreamBreak):
            # Quarantined but not consumed: a completed file is read on from here.
            con.execute(sql.QUARANTINE_ONE_SQL, [source_id, display, piece.line_no, piece.reason, sql.raw_text(piece.partial)])
            totals[2] += 1
            break
        if isinstance(piece, OverlongLine):
            con.execute(
                sql.QUARANTINE_ONE_SQL, [source_id, display, piece.line_no, sql.TOO_LONG_REASON, sql.raw_text(piece.head)]
            )
            totals[2] += 1
            if not piece.unterminated:
                end_offset, last_line = piece.end_offset, piece.line_no
            continue
        counts = ingest_chunk(con, piece, source_id, display, seq_base - lines_before)
        for i in range(3):
            totals[i] += counts[i]
        n_lines = piece.data.count(b"\n") + (1 if piece.unterminated else 0)
        if not piece.unterminated or counts[3]:
            end_offset, last_line = piece.end_offset, piece.first_line + n_lines - 1
        else:
            # A truncated last line stays unconsumed: when the writer finishes
            # it, the next load reads it again (its quarantine row is dropped).
            end_offset = piece.end_offset - len(piece.data.rsplit(b"\n", 1)[-1])
            last_line = piece.first_line + n_lines - 2
        tick(end_offset - start_offset)
    return end_offset, last_line, totals


def ingest_chunk(
    con: duckdb.DuckDBPyConnection, piece: Chunk, source_id: int, display: str, seq_base: int
) -> tuple[int, int, int, bool]:
    """Validate and insert one block; returns (tool_calls, loop_exits, quarantined, last line whole)."""
    if FAST_PATH and NATIVE:
        return native_insert(con, piece.data, piece.first_line, piece.unterminated, source_id, display, seq_base)[:4]
    con.execute(sql.CREATE_LINES_SQL)
    bad_last = False
    try:
        text = piece.data.decode("utf-8")
        con.execute(sql.INSERT_CHUNK_SQL, [piece.first_line, text])
    except UnicodeDecodeError:
        bad_last = _insert_lines_checking_utf8(con, piece, source_id, display)
    n_lines = piece.data.count(b"\n") + (1 if piece.unterminated else 0)
    tc, le, bad, last_ok = check_and_insert(
        con, "block", piece.first_line, n_lines, piece.unterminated, source_id, display, seq_base
    )
    return tc, le, bad, last_ok and not bad_last


def check_and_insert(
    con: duckdb.DuckDBPyConnection,
    lines: str,
    first_line: int,
    n_lines: int,
    unterminated: bool,
    source_id: int,
    display: str,
    seq_base: int,
) -> tuple[int, int, int, bool]:
    """Check the lines in ``_ls_lines`` and store them: rows, or quarantine with a reason.

    Returns (tool_calls, loop_exits, quarantined, last line whole).
    """
    last_line = first_line + n_lines - 1
    fast = [0, 0]
    if FAST_PATH:
        # Lines exactly as the collector writes them go in directly; the
        # full validation below sees only the rest (loader_fast_sql).
        con.execute(fast_sql.UNORDERED_SQL)
        try:
            for i, statement in enumerate(fast_sql.FAST_INSERT_SQL[lines]):
                row = con.execute(statement, [seq_base, source_id]).fetchone()
                fast[i] = int(row[0]) if row else 0
        finally:
            con.execute(fast_sql.ORDERED_SQL)
        if fast[0] + fast[1] == n_lines:
            # A row for every line (one each: the two kinds' lines differ): nothing left over.
            con.execute(fast_sql.EMPTY_REST_SQL)
            return fast[0], fast[1], 0, True
        below = seq_base + first_line - 1  # the seq just below this chunk's rows
        rest = con.execute(fast_sql.REST_SQL[lines], [source_id, first_line, last_line, below]).fetchone()
        if not (rest and rest[0]):
            return fast[0], fast[1], 0, True  # every line went in (a blank or bad line would be left over)
        lines = "rest"
    tc, le, bad, last_ok = full_validation(con, lines, first_line, last_line, unterminated, source_id, display, seq_base)
    return tc + fast[0], le + fast[1], bad, last_ok


def full_validation(
    con: duckdb.DuckDBPyConnection,
    lines: str,
    first_line: int,
    last_line: int,
    unterminated: bool,
    source_id: int,
    display: str,
    seq_base: int,
) -> tuple[int, int, int, bool]:
    """Check every line of ``lines`` (``loader_sql``), store the good ones and quarantine the rest with a reason.

    Returns (tool_calls, loop_exits, quarantined in the chunk's lines, last line whole).
    """
    con.execute(sql.CHECK_SQL[lines], [last_line if unterminated else -1])
    con.execute(sql.EXTRA_SQL)
    con.execute(sql.QUARANTINE_CHECKED_SQL, [source_id, display])
    con.execute(sql.INSERT_TOOL_CALLS_SQL, [seq_base, source_id])
    con.execute(sql.INSERT_LOOP_EXITS_SQL, [seq_base, source_id])
    row = con.execute(sql.COUNT_CHECKED_SQL, [source_id, first_line, last_line]).fetchone()
    tc, le, bad = (int(x) for x in row) if row else (0, 0, 0)
    last_ok = True
    if unterminated:
        flag = con.execute(sql.LAST_LINE_TRUNCATED_SQL, [last_line]).fetchone()
        last_ok = not (flag and flag[0])
    return tc, le, bad, last_ok


def _insert_lines_checking_utf8(con: duckdb.DuckDBPyConnection, piece: Chunk, source_id: int, display: str) -> bool:
    """Rare path: the block is not valid UTF-8. Find the bad lines one by one,
    quarantine them, and blank them so line numbers stay in step.

    Returns whether the block's unterminated last line is one of them: a writer
    cut off inside a multi-byte character, so the line is not consumed (a later
    load reads it again, whole).
    """
    bad_last = False
    lines = piece.data.split(b"\n")
    if not piece.unterminated:
        lines = lines[:-1]
    good: list[str] = []
    for i, raw in enumerate(lines):
        try:
            good.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            good.append("")
            # Too long comes first, as everywhere: the rest of such a line is not read.
            reason = sql.TOO_LONG_REASON if len(raw) > sql.MAX_LINE_BYTES else sql.not_utf8_reason(raw, exc)
            con.execute(sql.QUARANTINE_ONE_SQL, [source_id, display, piece.first_line + i, reason, sql.raw_text(raw)])
            bad_last = piece.unterminated and i == len(lines) - 1
    con.execute(sql.INSERT_CHUNK_SQL, [piece.first_line, "\n".join(good)])
    return bad_last


def native_insert(
    con: duckdb.DuckDBPyConnection,
    buf: bytes | memoryview,
    first_line: int,
    unterminated: bool,
    source_id: int,
    display: str,
    seq_base: int,
) -> tuple[int, int, int, bool, int]:
    """Native fast path for whole lines in ``buf``, the full validation for what it leaves.

    Returns (tool_calls, loop_exits, quarantined, last line whole, lines in ``buf``).
    """
    out = native.scan_and_insert(con, buf, first_line, source_id, seq_base)
    last_line = first_line + out.lines - 1
    tc, le, last_ok = out.tool_calls, out.loop_exits, True
    if out.rest:
        if len(out.rest) > native.REST_LIST_MAX and max(e - s for _, s, e in out.rest) <= sql.MAX_LINE_BYTES:
            # Many lines left (another writer's format, a broken file): hand
            # them over in blocks, split in SQL, rather than a string each.
            counts = _rest_in_blocks(con, buf, first_line, unterminated, source_id, display, seq_base)
            tc, le, last_ok = tc + counts[0], le + counts[1], counts[3]
        else:
            has_rest, last_ok = native.rest_to_table(con, buf, out.rest, last_line, unterminated, source_id, display)
            if has_rest:
                counts = full_validation(con, "rest", first_line, last_line, unterminated, source_id, display, seq_base)
                tc, le, last_ok = tc + counts[0], le + counts[1], last_ok and counts[3]
    bad = native.count_quarantined(con, source_id, first_line, last_line) if out.rest else 0
    return tc, le, bad, last_ok, out.lines


def _fill(f: Any, view: memoryview) -> tuple[int, bool]:
    """Read on from the file's position into ``view`` until it is full; returns (bytes read, end of file reached)."""
    done = 0
    while done < len(view):
        n = f.readinto(view[done:])
        if not n:
            return done, True
        done += n
    return done, False


_buffer: list[bytearray] = []


def _read_buffer(size: int) -> bytearray:
    """A buffer of at least ``size`` bytes, the same one from file to file (fresh pages cost a fault each)."""
    if not _buffer or len(_buffer[0]) < size:
        _buffer.clear()
        _buffer.append(bytearray(size))
    return _buffer[0]


def release_buffer() -> None:
    """Give the read buffer back (the end of a load)."""
    _buffer.clear()


def _rest_in_blocks(
    con: duckdb.DuckDBPyConnection,
    buf: bytes | memoryview,
    first_line: int,
    unterminated: bool,
    source_id: int,
    display: str,
    seq_base: int,
) -> tuple[int, int, int, bool]:
    """The full validation for the lines of ``buf`` not stored yet, in blocks of at most ``CHUNK_BYTES``.

    Every line is at most ``MAX_LINE_BYTES`` long (the caller checked), so a
    block always ends at a newline or at the end of ``buf``.
    """
    tc = le = 0
    last_ok = True
    start, line, size = 0, first_line, len(buf)
    while start < size:
        data = bytes(buf[start : min(size, start + CHUNK_BYTES)])
        if start + len(data) < size:
            data = data[: data.rfind(b"\n") + 1]
        last = start + len(data) == size
        piece = Chunk(data, line, unterminated and last, 0)
        n_lines = data.count(b"\n") + (1 if piece.unterminated else 0)
        con.execute(sql.CREATE_LINES_SQL)
        bad_last = False
        try:
            con.execute(sql.INSERT_CHUNK_SQL, [line, data.decode("utf-8")])
        except UnicodeDecodeError:
            bad_last = _insert_lines_checking_utf8(con, piece, source_id, display)
        end_line = line + n_lines - 1
        con.execute(fast_sql.REST_SQL["block"], [source_id, line, end_line, seq_base + line - 1])
        counts = full_validation(con, "rest", line, end_line, piece.unterminated, source_id, display, seq_base)
        tc, le = tc + counts[0], le + counts[1]
        last_ok = counts[3] and not bad_last if last else last_ok
        start, line = start + len(data), end_line + 1
    return tc, le, 0, last_ok


def read_native(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    start_offset: int,
    lines_before: int,
    source_id: int,
    display: str,
    seq_base: int,
    tick: Callable[[int], None],
) -> tuple[int, int, list[int]] | None:
    """Native path over a file from ``start_offset``, in chunks of whole lines read into one reused buffer.

    A gzip file is decompressed to a temporary file first (offsets count
    content bytes, as everywhere). A line longer than a chunk is over the
    length limit anyway: from there on the block path (``read_in_blocks``)
    takes over, which skips such lines without holding them. Returns what
    ``read_in_blocks`` returns, or None for a gzip file that is broken or too
    big to copy (the block path reports the break).
    """
    if not is_gzip(path):
        return _read_native_then_blocks(con, path, path, start_offset, lines_before, source_id, display, seq_base, tick)
    with tempfile.TemporaryDirectory(prefix="loopscope-") as tmp:
        plain = Path(tmp) / "content.jsonl"
        if not _decompress(path, plain):
            return None
        return _read_native_then_blocks(con, plain, path, start_offset, lines_before, source_id, display, seq_base, tick)


def _read_native_then_blocks(
    con: duckdb.DuckDBPyConnection,
    plain: Path,
    path: Path,
    start_offset: int,
    lines_before: int,
    source_id: int,
    display: str,
    seq_base: int,
    tick: Callable[[int], None],
) -> tuple[int, int, list[int]]:
    end_offset, last_line, totals, done = _read_native_plain(
        con, plain, start_offset, lines_before, source_id, display, seq_base, tick
    )
    if done:
        return end_offset, last_line, totals
    # seq stays base + line number: the block path gets the same base back.
    base = seq_base - lines_before + last_line
    more_end, more_line, more = read_in_blocks(
        con, path, end_offset, last_line, source_id, display, base, lambda n: tick(end_offset - start_offset + n)
    )
    return more_end, more_line, [a + b for a, b in zip(totals, more)]


def _read_native_plain(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    start_offset: int,
    lines_before: int,
    source_id: int,
    display: str,
    seq_base: int,
    tick: Callable[[int], None],
) -> tuple[int, int, list[int], bool]:
    """Returns (offset and line consumed up to, counts, whether the file was read to its end)."""
    totals = [0, 0, 0]
    end_offset, last_line = start_offset, lines_before
    try:
        f = open(path, "rb", buffering=0)
        f.seek(start_offset)
        remaining = os.fstat(f.fileno()).st_size - start_offset
    except OSError as exc:
        raise UnreadableFile(f"cannot read {path}: {exc.strerror or exc}", hint="check the file's permissions") from None
    with f:
        # No bigger than the file needs (it may grow meanwhile: then the loop reads on).
        cap = min(NATIVE_CHUNK_BYTES, max(64 * 1024, remaining + 1))
        buf = _read_buffer(cap)
        view = memoryview(buf)
        have, pos, eof = 0, start_offset, False  # bytes in buf; the file offset of buf[0]
        try:
            while True:
                if not eof and have < cap:
                    try:
                        n, eof = _fill(f, view[have:cap])
                    except OSError as exc:
                        raise UnreadableFile(
                            f"cannot read {path} past byte {pos + have}: {exc.strerror or exc}", hint="check the file and the disk"
                        ) from None
                    have += n
                skip = 3 if pos == 0 and have >= 3 and buf[:3] == b"\xef\xbb\xbf" else 0  # a byte-order mark
                if have <= skip:
                    return end_offset, last_line, totals, True
                end = have if eof else buf.rfind(b"\n", 0, have) + 1
                if end <= skip:
                    return end_offset, last_line, totals, False  # a line longer than the buffer
                unterminated = buf[end - 1] != 0x0A
                first = last_line + 1
                counts = native_insert(
                    con, view[skip:end], first, unterminated, source_id, display, seq_base - lines_before
                )
                for i in range(3):
                    totals[i] += counts[i]
                if not unterminated or counts[3]:
                    end_offset, last_line = pos + end, first + counts[4] - 1
                else:
                    # A truncated last line stays unconsumed (as in read_in_blocks).
                    end_offset, last_line = pos + max(skip, buf.rfind(b"\n", 0, end) + 1), first + counts[4] - 2
                tick(end_offset - start_offset)
                if eof:
                    return end_offset, last_line, totals, True
                buf[: have - end] = buf[end:have]  # the start of the next line to the front
                have, pos = have - end, pos + end
        finally:
            view.release()
