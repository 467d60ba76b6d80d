"""Records files into the store: two ways lines reach the one validator.

``read_whole_file`` (a new plain file, or a new .gz through a temporary plain
copy): DuckDB's CSV reader reads the file as one text column, one
row per line; the row's position is the line number, which two checks
guarantee. ``read_in_blocks`` (what that reader cannot number exactly: a
resumed file, a broken gzip stream, CR or control bytes, invalid UTF-8, a
line over the length limit): Python cuts the file into blocks of whole
lines, which DuckDB splits. Both end in ``check_and_insert``: lines exactly
as the collector writes them go straight in (``fast_sql``, proven equal to
the validator by tests/test_loader_fast_path.py), the rest through the
record validator (``records``), which stores good lines and quarantines the
others with a reason.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from loopscope.analyses.ingest import fast_sql
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

GZIP_FAST_MAX_BYTES = 1024 * 1024 * 1024
"""A new .gz file decompressing to at most this much takes the whole-file reader via a temporary copy."""

CR_SEARCH_WINDOW = 64 * 1024 * 1024
"""The CR search reads the mapped file this much at a time and unmaps each window's pages after it.

Searched whole, every page of the file stays in the process's resident set until the map is
closed: 610 MB per million records, on top of what DuckDB holds from the files before, which was
the peak of a 10M load (docs/loading.md, eighth pass). A multiple of the page size.
"""


@dataclass(frozen=True)
class Target:
    """Where a file's rows go: its source, its path as stored, and the seq its line 1 is numbered from."""

    source_id: int
    display: str
    seq_base: int
    on_one_thread: Callable[[], None] | None = None
    """Called once the file's one statement on DuckDB's threads (the ``tool_call`` insert) is done:
    the rest of the file runs on one thread, and the loader reads the next file meanwhile."""
    tolerant: bool = False
    """Parse a whole file's lines so that one which is no JSON at all cannot fail the statement.

    Off, the fast path parses without ``try()`` (a fifth less CPU in the parse) and such a line
    fails its statement with ``MalformedLine``: the caller rolls the file back and loads it again
    with this on. Blocks of lines are always parsed tolerantly."""


class MalformedLine(Exception):
    """A whole file's strict parse met a line that is no JSON (its transaction is aborted): load the file again, tolerant."""


@dataclass(frozen=True)
class Counts:
    """What a piece of a file gave: rows per kind, lines quarantined, and whether its last line was whole."""

    tool_calls: int = 0
    loop_exits: int = 0
    quarantined: int = 0
    last_line_whole: bool = True

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.tool_calls + other.tool_calls,
            self.loop_exits + other.loop_exits,
            self.quarantined + other.quarantined,
            other.last_line_whole,
        )


@dataclass(frozen=True)
class WholeFile:
    """A file DuckDB's reader numbered exactly: its lines, the last one's state, its content size."""

    lines: int
    unterminated: bool
    """The last line has no newline."""
    tail_bytes: int
    """Bytes of that unterminated last line (0 when terminated)."""
    content_bytes: int
    """Bytes of content (decompressed for .gz): the offset a later load resumes from."""
    lines_from: str = "file"
    """Where the lines are (``records.WHOLE_FILE_LINES``): ``file``, read by the loading connection;
    ``read_ahead``, read by the loader's second connection while the file before finished."""


@dataclass(frozen=True)
class LineSpan:
    """Lines ``first``..``last`` of the lines table; ``unterminated``: the last one has no newline."""

    first: int
    last: int
    unterminated: bool


@dataclass(frozen=True)
class BlocksRead:
    """How far the block path consumed a file, and what it stored."""

    end_offset: int
    last_line: int
    counts: Counts


def read_whole_file(con: duckdb.DuckDBPyConnection, path: Path, *, ahead: bool = False) -> WholeFile | None:
    """DuckDB's CSV reader reads the lines of a file into ``_ls_raw`` (on one thread).

    ``ahead``: into the read-ahead table instead (``ingest.readahead``: ``con`` is the
    loader's second connection, and the loading one holds DuckDB to one thread meanwhile).

    Returns None when the file needs the block path: a byte-order mark, not
    UTF-8, a byte the CSV reader treats differently from the line splitter
    (so its row numbers would not be line numbers), or a gzip file that is
    broken or decompresses to more than ``GZIP_FAST_MAX_BYTES``.

    A gzip file is decompressed to a temporary file first (read once, then
    deleted): the CSV reader on plain text beat decompressing into blocks
    for the single-threaded block path by about 2x (measured when the read
    ran on two threads).

    Exact line numbers rest on two checks. Before the read, the file is
    searched (memory-mapped, no copy) for CR, a line break to the CSV reader
    (a lone CR would split one line into two rows without changing their
    bytes). After it, the rows' bytes plus one newline each must add up to
    the file's size, so a row the reader merged or cut short shows: a line
    holding \\x01, the reader's column separator, becomes a row cut at that
    byte (or an error), never a longer one, and with no CR rows are never
    split, so the sum equals the size only if every row is its whole line.
    """
    if not is_gzip(path):
        return _read_plain(con, path, ahead)
    with tempfile.TemporaryDirectory(prefix="loopscope-") as tmp:
        plain = Path(tmp) / "content.jsonl"
        if not _decompress(path, plain):
            return None
        return _read_plain(con, plain, ahead)


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


def _read_plain(con: duckdb.DuckDBPyConnection, path: Path, ahead: bool) -> WholeFile | None:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                # (No search for \x01, the reader's column separator: it cuts its
                # line's row short, which the size check below catches.)
                if mm[:3] == b"\xef\xbb\xbf" or _has_cr(mm, size):
                    return None
                unterminated = mm[size - 1 : size] != b"\n"
    except (OSError, ValueError) as exc:
        raise UnreadableFile(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", hint="check the file's permissions") from None
    try:
        if ahead:  # (the loading connection holds DuckDB to one thread)
            con.execute(sql.READ_AHEAD_LINES_SQL, [str(path)])
            row = con.execute(sql.COUNT_READ_AHEAD_SQL).fetchone()
        else:
            with one_thread(con):
                con.execute(sql.READ_LINES_SQL, [str(path)])
                row = con.execute(sql.COUNT_LINES_SQL).fetchone()
    except duckdb.Error:
        return None  # not UTF-8, a line over the limit, ...: the block path says which line
    if not row:
        return None
    lines, text_bytes, last_bytes = int(row[0]), int(row[1] or 0), int(row[2] or 0)
    if text_bytes + lines - (1 if unterminated else 0) != size:
        return None
    return WholeFile(lines, unterminated, last_bytes if unterminated else 0, size, "read_ahead" if ahead else "file")


def _has_cr(mm: mmap.mmap, size: int) -> bool:
    """Whether the mapped file holds a CR, searched one ``CR_SEARCH_WINDOW`` at a time.

    Each window's pages are released from the mapping after its search (``MADV_DONTNEED``: on a
    read-only file mapping the data stays in the page cache, only this process's hold on it goes),
    so the search adds at most one window to the resident set instead of the whole file. Where
    ``madvise`` or the flag is missing (Windows), the windows are searched all the same.
    """
    drop = getattr(mmap, "MADV_DONTNEED", None) if hasattr(mm, "madvise") else None
    for start in range(0, size, CR_SEARCH_WINDOW):
        end = min(start + CR_SEARCH_WINDOW, size)
        if mm.find(b"\r", start, end) != -1:
            return True
        if drop is not None:
            mm.madvise(drop, start, end - start)
    return False


_KNOWN_THREADS: dict[int, int] = {}
"""Connections whose ``threads`` setting was read once for the whole block of ``threads_known``."""

_HELD: dict[int, int] = {}
"""Connections held to one thread by ``hold_one_thread``, with the setting to restore."""


@contextmanager
def threads_known(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inside this block ``one_thread`` takes ``con``'s threads setting as read once at its start.

    A load enters it: nothing in it but ``one_thread`` (which restores it) changes the setting,
    and asking for it at every use is two statements per file.
    """
    row = con.execute(sql.THREADS_SQL).fetchone()
    key = id(con)
    _KNOWN_THREADS[key] = threads = int(row[0]) if row else 1
    try:
        yield
    except BaseException:
        # A load that failed or was interrupted mid-statement may have left a setting it changes
        # for a statement behind (the transaction refused the reset; it is rolled back by now).
        quietly(con, sql.SET_THREADS_SQL, [threads])
        quietly(con, fast_sql.ORDERED_SQL)
        raise
    finally:
        _KNOWN_THREADS.pop(key, None)


@contextmanager
def one_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the statements of the block on one DuckDB thread, the connection's setting restored after.

    For the statements where DuckDB's second thread costs more CPU than it
    saves wall time (docs/loading.md, sixth and seventh passes).
    """
    if id(con) in _HELD:  # one thread already, until ``release_threads``
        yield
        return
    threads = _threads(con)
    if threads != 1:
        con.execute(sql.ONE_THREAD_SQL)
    try:
        yield
    except BaseException:
        if threads != 1:  # (in an aborted transaction this fails: threads_known restores it after the rollback)
            quietly(con, sql.SET_THREADS_SQL, [threads])
        raise
    if threads != 1:
        con.execute(sql.SET_THREADS_SQL, [threads])


def quietly(con: duckdb.DuckDBPyConnection, statement: str, params: list[Any] | None = None) -> bool:
    """Run a statement whose refusal is no news; whether it ran.

    For the resets that run while an error is on its way out (in a transaction a failed or
    interrupted statement aborted, DuckDB refuses everything until the rollback: raising there
    would hide the error that matters), and for settings an older DuckDB lacks.
    """
    try:
        con.execute(statement, params or [])
    except duckdb.Error:
        return False
    return True


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    threads = _KNOWN_THREADS.get(id(con))
    if threads is None:
        row = con.execute(sql.THREADS_SQL).fetchone()
        threads = int(row[0]) if row else 1
    return threads


def hold_one_thread(con: duckdb.DuckDBPyConnection) -> None:
    """Run DuckDB on one thread from now until ``release_threads`` (``one_thread`` blocks inside change nothing).

    The setting is the database instance's, so it holds for every connection of it: the loader's
    read-ahead runs its read on one thread this way (``ingest.readahead``).
    """
    if id(con) in _HELD:
        return
    threads = _threads(con)
    if threads != 1:
        con.execute(sql.ONE_THREAD_SQL)
    _HELD[id(con)] = threads


def release_threads(con: duckdb.DuckDBPyConnection) -> None:
    """End ``hold_one_thread``: the setting it found is back (nothing when there was no hold)."""
    threads = _HELD.pop(id(con), None)
    if threads is not None and threads != 1:
        con.execute(sql.SET_THREADS_SQL, [threads])


def read_in_blocks(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    start_offset: int,
    lines_before: int,
    target: Target,
    tick: Callable[[int], None],
) -> BlocksRead:
    """Block path: whole lines from Python, from byte ``start_offset`` (after line ``lines_before``)."""
    end_offset, last_line = start_offset, lines_before
    totals = Counts()
    # seq = seq_base + line number over the whole file.
    chunk_target = replace(target, seq_base=target.seq_base - lines_before)
    for piece in iter_chunks(path, start_offset, lines_before + 1):
        if isinstance(piece, StreamBreak):
            # Quarantined but not consumed: a completed file is read on from here.
            con.execute(
                sql.QUARANTINE_ONE_SQL, [target.source_id, target.display, piece.line_no, piece.reason, sql.raw_text(piece.partial)]
            )
            totals += Counts(quarantined=1)
            break
        if isinstance(piece, OverlongLine):
            con.execute(
                sql.QUARANTINE_ONE_SQL,
                [target.source_id, target.display, piece.line_no, sql.TOO_LONG_REASON, sql.raw_text(piece.head)],
            )
            totals += Counts(quarantined=1)
            if not piece.unterminated:
                end_offset, last_line = piece.end_offset, piece.line_no
            continue
        counts = ingest_chunk(con, piece, chunk_target)
        totals += counts
        n_lines = piece.data.count(b"\n") + (1 if piece.unterminated else 0)
        if not piece.unterminated or counts.last_line_whole:
            end_offset, last_line = piece.end_offset, piece.first_line + n_lines - 1
        else:
            # A truncated last line stays unconsumed: when the writer finishes
            # it, the next load reads it again (its quarantine row is dropped).
            end_offset = piece.end_offset - len(piece.data.rsplit(b"\n", 1)[-1])
            last_line = piece.first_line + n_lines - 2
        tick(end_offset - start_offset)
    return BlocksRead(end_offset, last_line, replace(totals, last_line_whole=True))


def ingest_chunk(con: duckdb.DuckDBPyConnection, piece: Chunk, target: Target) -> Counts:
    """Validate and insert one block of whole lines."""
    con.execute(sql.CREATE_LINES_SQL)
    bad_last = False
    try:
        text = piece.data.decode("utf-8")
        con.execute(sql.INSERT_CHUNK_SQL, [piece.first_line, text])
    except UnicodeDecodeError:
        bad_last = _insert_lines_checking_utf8(con, piece, target)
    n_lines = piece.data.count(b"\n") + (1 if piece.unterminated else 0)
    span = LineSpan(piece.first_line, piece.first_line + n_lines - 1, piece.unterminated)
    counts = check_and_insert(con, "block", span, target)
    return replace(counts, last_line_whole=counts.last_line_whole and not bad_last)


def check_and_insert(con: duckdb.DuckDBPyConnection, lines: str, span: LineSpan, target: Target) -> Counts:
    """Check the lines of ``lines`` (``file``: ``_ls_raw``, ``block``: ``_ls_lines``) and store them.

    Good lines become rows, the others go to the quarantine with a reason.
    """
    fast = Counts()
    if FAST_PATH:
        # Lines exactly as the collector writes them go in directly; the
        # full validation below sees only the rest (fast_sql).
        con.execute(fast_sql.UNORDERED_SQL)
        # A whole file parses strictly, its unterminated last line (a file still being
        # written) left to the validator: a line that is no JSON fails the statement then.
        strict = lines in sql.WHOLE_FILE_LINES and not target.tolerant
        left_out = span.last if strict and span.unterminated else 0
        try:
            tc_sql, le_sql = fast_sql.FAST_INSERT_SQL[lines, not strict]
            params = [target.seq_base, target.source_id, left_out]
            tc = con.execute(tc_sql, params).fetchone()
            if target.on_one_thread is not None and 2 * (int(tc[0]) if tc else 0) >= span.last - span.first + 1:
                # Most of the file was the collector's tool calls: what is left of it is
                # small enough for one thread (else the validator would take it on one).
                target.on_one_thread()
            # The loop_exit lines (about a sixth of a collector's) on one thread:
            # 0.2 s less CPU per million records for about 0.1 s more wall
            # time (docs/loading.md, seventh pass).
            with one_thread(con):
                le = con.execute(le_sql, params).fetchone()
        except BaseException as exc:
            # A statement failed or was interrupted: the transaction is aborted and refuses every
            # statement until its rollback (load_paths resets the setting after it).
            quietly(con, fast_sql.ORDERED_SQL)
            if strict and isinstance(exc, duckdb.Error) and not isinstance(exc, duckdb.InterruptException):
                raise MalformedLine(str(exc)) from exc
            raise
        con.execute(fast_sql.ORDERED_SQL)
        fast = Counts(int(tc[0]) if tc else 0, int(le[0]) if le else 0)
        if fast.tool_calls + fast.loop_exits == span.last - span.first + 1:
            # A row for every line (one each: the two kinds' lines differ): nothing left over.
            con.execute(fast_sql.EMPTY_REST_SQL)
            return fast
        below = target.seq_base + span.first - 1  # the seq just below this chunk's rows
        rest = con.execute(fast_sql.REST_SQL[lines], [target.source_id, span.first, span.last, below]).fetchone()
        if not (rest and rest[0]):
            return fast  # every line went in (a blank or bad line would be left over)
        lines = "rest"
    full = full_validation(con, lines, span, target)
    return replace(fast + full, quarantined=full.quarantined)


def full_validation(con: duckdb.DuckDBPyConnection, lines: str, span: LineSpan, target: Target) -> Counts:
    """Check every line of ``lines`` with the record validator (``records``), store the good ones, quarantine the rest.

    ``quarantined`` counts the quarantine rows within the span's lines.
    """
    con.execute(sql.CHECK_SQL[lines], [span.last if span.unterminated else -1])
    con.execute(sql.EXTRA_SQL)
    con.execute(sql.QUARANTINE_CHECKED_SQL, [target.source_id, target.display])
    con.execute(sql.INSERT_TOOL_CALLS_SQL, [target.seq_base, target.source_id])
    con.execute(sql.INSERT_LOOP_EXITS_SQL, [target.seq_base, target.source_id])
    row = con.execute(sql.COUNT_CHECKED_SQL, [target.source_id, span.first, span.last]).fetchone()
    tc, le, bad = (int(x) for x in row) if row else (0, 0, 0)
    last_ok = True
    if span.unterminated:
        flag = con.execute(sql.LAST_LINE_TRUNCATED_SQL, [span.last]).fetchone()
        last_ok = not (flag and flag[0])
    return Counts(tc, le, bad, last_ok)


def _insert_lines_checking_utf8(con: duckdb.DuckDBPyConnection, piece: Chunk, target: Target) -> bool:
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
            con.execute(
                sql.QUARANTINE_ONE_SQL, [target.source_id, target.display, piece.first_line + i, reason, sql.raw_text(raw)]
            )
            bad_last = piece.unterminated and i == len(lines) - 1
    con.execute(sql.INSERT_CHUNK_SQL, [piece.first_line, "\n".join(good)])
    return bad_last
