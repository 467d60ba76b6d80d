"""Read the next records file while the current one finishes: the loader's second connection.

A new records file loads in four steps: DuckDB's CSV reader reads its lines (one thread), the
``tool_call`` insert (all of DuckDB's threads), the ``loop_exit`` insert and the commit (one
thread each; docs/loading.md says why each runs where it does). On a load of ten files of a
million records each, the one-thread steps were 14.6 s of 38.4 s of wall time with a core idle.
``ReadAhead`` fills that core: while file *k* finishes on one thread, a second connection (a
cursor of the same DuckDB instance) reads file *k + 1* into an in-memory database both
connections see (``records.READ_AHEAD_DB``), so when *k* commits, *k + 1*'s lines are there.

The read is speculative and changes nothing in the store: the loader still decides everything
for *k + 1* when it gets there (whether the store knows the file, whether the whole-file reader
can take it) and uses the lines read ahead only if that decision asks for exactly this read and
the file is unchanged since (size, modification time, inode). Anything the read ahead meets
(an unreadable file, a read DuckDB refuses, an interrupt) just leaves no lines: the loader then
reads the file itself, as without a read-ahead, and reports what it finds.

DuckDB's ``threads`` setting belongs to the database instance, so the loading connection holds it
at one thread from the moment the ``tool_call`` insert is done until the read is finished
(``jsonl.hold_one_thread``): the read runs on one thread as it would on the loading connection,
and the statements of the file finishing run on one thread as they already did.

Only loads of several files that are not small use it, and one at a time per process (the
in-memory database has one name).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from loopscope.analyses.ingest import records as sql
from loopscope.analyses.ingest.jsonl import WholeFile, hold_one_thread, quietly, read_whole_file, release_threads

_ONE_AT_A_TIME = threading.Lock()
"""Held by the load that uses the read-ahead database (one name per DuckDB instance)."""

Wanted = Callable[[duckdb.DuckDBPyConnection, Path], bool]
"""Whether the loader will want the whole-file read of this file (asked on the read-ahead connection)."""


def _identity(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


@dataclass
class _Read:
    path: Path
    identity: tuple[int, int, int] | None = None
    whole: WholeFile | None = None


class ReadAhead:
    """The next file's lines, read by a second connection while the loading one finishes a file."""

    def __init__(self, con: duckdb.DuckDBPyConnection, files: list[Path], wanted: Wanted) -> None:
        self._con = con
        self._cur = con.cursor()
        self._files = files
        self._wanted = wanted
        self._at = -1
        self._thread: threading.Thread | None = None
        self._read: _Read | None = None

    @classmethod
    def open(cls, con: duckdb.DuckDBPyConnection, files: list[Path], wanted: Wanted) -> ReadAhead | None:
        """A read-ahead for loading ``files`` in order, or None where it cannot help or cannot run."""
        if len(files) < 2 or (os.cpu_count() or 1) < 2:
            return None
        if not _ONE_AT_A_TIME.acquire(blocking=False):
            return None  # another load of this process uses it
        try:
            con.execute(sql.ATTACH_READ_AHEAD_SQL)
            return cls(con, files, wanted)
        except duckdb.Error:
            _ONE_AT_A_TIME.release()
            return None  # (a DuckDB that cannot attach: the loader reads every file itself)
        except BaseException:
            _ONE_AT_A_TIME.release()
            raise

    def arrive(self, index: int) -> None:
        """The loader is at ``files[index]``: any read is finished and DuckDB has its threads back."""
        self._finish()
        self._at = index

    def read_next(self) -> None:
        """Start reading the file after the current one, holding DuckDB to one thread meanwhile."""
        after = self._at + 1
        if self._thread is not None or after >= len(self._files):
            return
        read = _Read(self._files[after])
        hold_one_thread(self._con)
        self._read = read
        self._thread = threading.Thread(target=self._run, args=(read,), name="loopscope-read-ahead", daemon=True)
        self._thread.start()

    def take(self, path: Path) -> WholeFile | None:
        """The lines of ``path`` read ahead, now in ``records.WHOLE_FILE_LINES['read_ahead']``; None if there are none.

        Call between transactions (the lines move tables in the read-ahead database).
        """
        read, self._read = self._read, None
        if read is None or read.whole is None or read.path != path:
            return None
        try:
            if _identity(path) != read.identity:
                return None  # changed since: the loader reads it again
        except OSError:
            return None
        self._con.execute(sql.PROMOTE_READ_AHEAD_SQL)
        return read.whole

    def close(self) -> None:
        """Stop a read still running, give DuckDB its threads back, drop the lines and the database."""
        try:
            if self._thread is not None and self._thread.is_alive():
                self._cur.interrupt()
            self._finish()
            for statement in (sql.DROP_READ_AHEAD_SQL, sql.DETACH_READ_AHEAD_SQL):
                quietly(self._con, statement)  # (refused: the database goes with the instance)
            self._cur.close()
        finally:
            _ONE_AT_A_TIME.release()

    def _finish(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        release_threads(self._con)

    def _run(self, read: _Read) -> None:
        try:
            identity = _identity(read.path)
            if self._wanted(self._cur, read.path):
                read.whole = read_whole_file(self._cur, read.path, ahead=True)
                read.identity = identity
        except BaseException:  # noqa: BLE001 - whatever it was, the loader reads the file itself and reports it
            read.whole = None
