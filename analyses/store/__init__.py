"""Open the loopscope DuckDB store.

``connect(path)`` opens (or creates) a DuckDB file, sets the session to UTC
and migrates the schema. ``":memory:"`` gives a throwaway in-memory store.
The default path is ``./loopscope.duckdb``, or ``$LOOPSCOPE_DB`` when set.

Two checks protect what is already on disk. An existing file that is not a
DuckDB database (a log passed as ``--db`` by mistake) is refused before
DuckDB touches it. A store written by a newer loopscope (a migration or a
column this one does not know) is refused for writing, and opened for
reading with a ``NewerStoreWarning``: the figures may miss what the newer
version added.

Memory is bounded by construction: every connection sets DuckDB's
``memory_limit`` (default: a quarter of the machine's memory, at least 1 GiB;
``$LOOPSCOPE_MEMORY_LIMIT`` overrides it with a DuckDB size such as ``4GB``
or a share such as ``50%``) and a ``temp_directory`` where DuckDB spills what
does not fit (default: DuckDB's own, ``STORE.tmp`` next to the store file, or
``$XDG_CACHE_HOME/loopscope/tmp`` for ``:memory:``; ``$LOOPSCOPE_TEMP_DIR``
overrides it). A query over more data than the limit then spills to disk
instead of failing or swapping (docs/performance.md).

``open_for_analysis(db, paths, ...)`` is how every analysis (CLI command or
notebook) opens the store: it loads PATHs first, limits the selection to those
files, and always closes the connection.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import duckdb

from loopscope.analyses.errors import DatabaseError, LoopscopeError
from loopscope.analyses.selection import Selection
from loopscope.analyses.store.migrations import applied_migrations, migrate, newer_store
from loopscope.analyses.store.transaction import transaction

__all__ = [
    "DB_ENV", "DEFAULT_DB", "Analysis", "NewerStoreWarning", "connect", "default_db_path", "open_for_analysis",
    "transaction",
]

if TYPE_CHECKING:
    from loopscope.analyses.ingest import LoadSummary

DEFAULT_DB = "loopscope.duckdb"
DB_ENV = "LOOPSCOPE_DB"
MEMORY_LIMIT_ENV = "LOOPSCOPE_MEMORY_LIMIT"
TEMP_DIR_ENV = "LOOPSCOPE_TEMP_DIR"
DEFAULT_MEMORY_SHARE = 0.25
"""The share of physical memory DuckDB may use by default (it spills the rest to its temp directory)."""
MIN_MEMORY_LIMIT = 1 << 30
SET_MEMORY_LIMIT_SQL = "SET memory_limit = ?"
SET_TEMP_DIRECTORY_SQL = "SET temp_directory = ?"
SMALL_STORE_ROWS = 122_880
"""DuckDB's row group: a table this small is scanned by one task, so more threads only cost."""
SMALL_LOAD_BYTES = 4 << 20
"""PATHs of at most this many bytes (some 6,000 records) load into a small store."""
LARGEST_TABLE_SQL = """
SELECT coalesce(max(estimated_size), 0) FROM duckdb_tables() WHERE database_name = current_database()
"""
ONE_THREAD_SQL = "SET threads = 1"
READ_AS_IS_SQL = "SET VARIABLE loopscope_read_as_is = true"
"""Marks a connection to a store written by a newer loopscope: read as it is, never written."""
DUCKDB_MAGIC = b"DUCK"
"""DuckDB's file format: a checksum (8 bytes), then these 4 bytes."""
DUCKDB_MAGIC_OFFSET = 8


class NewerStoreWarning(UserWarning):
    """The store was written by a newer loopscope; it is read as it is."""


def default_db_path() -> str:
    """The database the CLI uses when ``--db`` is not given."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None  # not a POSIX system: DuckDB's own default (80% of memory)


def memory_limit() -> str | None:
    """The ``memory_limit`` for DuckDB: ``$LOOPSCOPE_MEMORY_LIMIT``, else a quarter of memory (>= 1 GiB)."""
    wanted = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    total = _physical_memory()
    if wanted.endswith("%"):
        try:
            share = float(wanted[:-1]) / 100
        except ValueError:
            share = None
        if share and 0 < share <= 1 and total:
            return f"{max(int(total * share), 64 << 20) >> 20}MiB"
        wanted = ""
    if wanted:
        return wanted
    if not total:
        return None
    return f"{max(int(total * DEFAULT_MEMORY_SHARE), MIN_MEMORY_LIMIT) >> 20}MiB"


def temp_directory(target: str) -> str | None:
    """Where DuckDB spills: ``$LOOPSCOPE_TEMP_DIR``; for ``:memory:`` the user cache; else DuckDB's default."""
    wanted = os.environ.get(TEMP_DIR_ENV, "").strip()
    if wanted:
        return wanted
    if target == ":memory:":
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(cache, "loopscope", "tmp")
    return None  # DuckDB's default: STORE.tmp next to the store file


def _bound_memory(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """Set the memory limit and the spill folder of a new connection (docs/performance.md)."""
    limit = memory_limit()
    if limit:
        try:
            con.execute(SET_MEMORY_LIMIT_SQL, [limit])
        except duckdb.Error as exc:
            con.close()
            raise DatabaseError(
                f"${MEMORY_LIMIT_ENV}={limit!r} is not a memory size DuckDB accepts: {exc}",
                hint="use a size such as 4GB or 512MB, or a share of memory such as 50%",
            ) from None
    folder = temp_directory(target)
    if folder:
        con.execute(SET_TEMP_DIRECTORY_SQL, [folder])


def _open_hint(error: str) -> str:
    """What to do about a database DuckDB would not open, by the cause it names."""
    if "lock" in error:
        return "another loopscope (or DuckDB) process has it open: wait for it to finish, or pass another --db FILE"
    if "Is a directory" in error:
        return "--db takes a file: name one inside that folder, e.g. --db FOLDER/loopscope.duckdb"
    if "not a valid DuckDB database" in error:
        return "that file is not a loopscope database (loopscope never overwrites it): pass another --db FILE"
    if "ermission denied" in error or "read-only" in error:
        return "the file or its folder is not writable: fix the permissions, or pass another --db FILE"
    return "pass another --db FILE, or --db :memory:"


def _refuse_foreign_file(target: str) -> None:
    """Raise unless ``target`` is absent, empty, a folder (DuckDB names that) or a DuckDB database."""
    path = Path(target).expanduser()
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return
        with open(path, "rb") as f:
            head = f.read(DUCKDB_MAGIC_OFFSET + len(DUCKDB_MAGIC))
    except OSError:
        return  # DuckDB reports what it cannot open, with a hint by cause
    if head[DUCKDB_MAGIC_OFFSET:] != DUCKDB_MAGIC:
        raise DatabaseError(
            f"cannot open the database {target}: the file exists and is not a DuckDB database",
            hint="that file is not a loopscope database (loopscope never overwrites it): check the order of the "
            "arguments (loopscope load PATH... --db FILE), or pass another --db FILE",
        )


def connect(
    path: str | os.PathLike[str] | None = None, *, read_only: bool = False, writes: bool = True
) -> duckdb.DuckDBPyConnection:
    """Open the store at ``path`` (default: ``default_db_path()``) and migrate it.

    Args:
        path: the DuckDB file, or ``":memory:"``.
        read_only: open the file read-only (no migration).
        writes: the caller will write (load, import). A store written by a
            newer loopscope is refused then; otherwise it is opened as it is,
            without migrating, with a ``NewerStoreWarning``.

    Raises:
        DatabaseError: the file is not a DuckDB database, is locked by another
            process, its folder does not exist, or (for writes) it was written
            by a newer loopscope.
    """
    target = str(path) if path is not None else default_db_path()
    if _is_clickhouse(target):  # clickhouse://, clickhouses://, chdb:// (store/clickhouse.py)
        try:
            from loopscope.analyses.store.clickhouse import connect_clickhouse
        except ImportError as exc:  # sqlglot, from the optional extra
            raise DatabaseError(
                f"cannot open {target.split('://', 1)[0]}:// stores: {exc.name or exc} is not installed",
                hint="install the ClickHouse extra: pip install 'loopscope[clickhouse]'",
            ) from None
        return connect_clickhouse(target)  # type: ignore[return-value]
    if target != ":memory:":
        folder = Path(target).expanduser().resolve().parent
        if not folder.is_dir():
            raise DatabaseError(
                f"cannot create the database {target}: folder {folder} does not exist",
                hint="create the folder, or pass another --db FILE (or --db :memory:)",
            )
        _refuse_foreign_file(target)
    try:
        con = duckdb.connect(target, read_only=read_only)
    except (duckdb.IOException, duckdb.InvalidInputException, duckdb.SerializationException) as exc:
        raise DatabaseError(f"cannot open the database {target}: {exc}", hint=_open_hint(str(exc))) from None
    con.execute("SET TimeZone = 'UTC'")
    _bound_memory(con, target)
    # what the store records is read once, for both checks; a new in-memory database holds nothing
    applied = None if target == ":memory:" else applied_migrations(con)
    newer = [] if target == ":memory:" else newer_store(con, applied)
    if newer:
        what = ", ".join(newer[:5]) + (f" and {len(newer) - 5} more" if len(newer) > 5 else "")
        message = f"the database {target} was written by a newer loopscope ({what} unknown to this version)"
        if writes and not read_only:
            con.close()
            raise DatabaseError(
                message + ": not writing to it",
                hint="upgrade loopscope (pip install -U loopscope), or pass another --db FILE",
            )
        warnings.warn(
            NewerStoreWarning(message + "; reading it as it is: upgrade loopscope to see everything it holds"),
            stacklevel=2,
        )
        con.execute(READ_AS_IS_SQL)  # nothing writes to it, not even the facts' cache (store.facts)
        return con
    if not read_only:
        migrate(con, applied=applied, empty=target == ":memory:")
    return con


def _is_clickhouse(target: str) -> bool:
    """``--db`` names a ClickHouse store (a URL) rather than a DuckDB file."""
    return "://" in target and target.split("://", 1)[0].lower() in ("clickhouse", "clickhouses", "chdb")


class Analysis(NamedTuple):
    """An open store for one analysis: the connection, what to count, and the load of PATHs (None without)."""

    con: duckdb.DuckDBPyConnection
    selection: Selection
    summary: LoadSummary | None


def _refuse_when_nothing_was_read(summary: Any) -> None:
    """Every PATH was unreadable, or read and gave no record: an analysis of nothing prints zeros, and misleads."""
    from loopscope.analyses.ingest.formats import NO_RECORD_HINT, fruitless_before, fruitless_files

    unreadable = [d for d in summary.details if d.status == "unreadable"]
    fruitless = fruitless_files(summary.details)
    # The same files again: unchanged since a load that gave no record from them (their lines
    # were quarantined then), so this run reads nothing new; the analysis would still be of nothing.
    before = fruitless_before(summary.details)
    if not summary.details or len(unreadable) + len(fruitless) + len(before) < len(summary.details):
        return
    n = len(summary.details)
    more = f" (and {n - 1} more file(s) that gave no record)" if n > 1 else ""
    if unreadable:
        first = unreadable[0]
        raise LoopscopeError(
            f"nothing to analyse: {first.path} could not be read{more}: {first.error or 'unreadable'}",
            hint="`loopscope load PATH` shows what each file is read as; docs/inputs.md lists the formats loopscope reads",
        )
    if fruitless:
        raise LoopscopeError(f"nothing to analyse: {fruitless[0].message()}{more}", hint=fruitless[0].hint)
    raise LoopscopeError(
        f"nothing to analyse: {before[0].path} gave no record when it was loaded before, and has not changed since{more}",
        hint=NO_RECORD_HINT,
    )


STORE_CONTENT_SQL = """
SELECT (SELECT count(*) FROM (SELECT 1 FROM tool_calls LIMIT 1))
     + (SELECT count(*) FROM (SELECT 1 FROM loop_exits LIMIT 1)),
       (SELECT count(*) FROM quarantine)
"""
"""Whether the store holds a record (0 or more), and how many lines its loads set aside."""


def _refuse_missing_store(db: str | os.PathLike[str] | None) -> None:
    """No PATH and no database file at ``db``: opening it would create an empty store and report zeros.

    A mistyped ``--db`` (or a command run in another folder than the load) is the usual cause.
    """
    target = str(db) if db is not None else default_db_path()
    if target == ":memory:" or _is_clickhouse(target) or Path(target).expanduser().exists():
        return
    raise LoopscopeError(
        f"nothing to analyse: no store at {target}, so it holds no records (a mistyped --db, or another folder "
        "than the load's?)",
        hint=f"load logs into it first (loopscope load PATH --db {target}), or give the logs as PATHs to this command",
    )


def _refuse_empty_store(con: Any, db: str | os.PathLike[str] | None) -> None:
    """The store holds no record: every figure would be zero or empty, and mislead."""
    row = con.execute(STORE_CONTENT_SQL).fetchone()
    records, quarantined = (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)
    if records:
        return
    target = str(db) if db is not None else default_db_path()
    if quarantined:
        raise LoopscopeError(
            f"nothing to analyse: the store {target} holds no records; the {quarantined} line(s) its loads "
            "read were all set aside (quarantined)",
            hint=f"see why with: loopscope quarantine --db {target}",
        )
    where = "" if target == ":memory:" else f" --db {target}"
    raise LoopscopeError(
        f"nothing to analyse: the store {target} holds no records",
        hint=f"load logs into it first (loopscope load PATH{where}), or give the logs as PATHs to this command",
    )


def _bytes_within(path: Path, budget: int) -> int:
    """The bytes of the files at ``path`` (a file, or a folder's files), counted up to just past ``budget``."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except OSError:
                continue
            if total > budget:
                return total
    return total


def _small_data(con: duckdb.DuckDBPyConnection, paths: Sequence[str | os.PathLike[str]]) -> bool:
    """The store holds less than a row group per table and PATHs add at most ``SMALL_LOAD_BYTES``.

    Such a run (``sample_logs/``, a day of one agent) is a few hundred small queries' fixed
    costs: DuckDB's second thread only adds its scheduling (about 14% of the CPU of a load and
    an audit of sample_logs/, issue 14). Unknown sizes (a glob, a path that does not exist)
    count as large.

    DuckDB's optimizer stays on whatever the size: turning it off on tiny data saved some 30 ms of
    planning on sample_logs/ (2026-11-27), but every test runs on tiny data and would then no longer
    run the plans users' data gets.
    """
    row = con.execute(LARGEST_TABLE_SQL).fetchone()
    if not row or row[0] > SMALL_STORE_ROWS:
        return False
    budget = SMALL_LOAD_BYTES
    for item in paths:
        path = Path(item).expanduser()
        try:
            if not path.exists():
                return False
            budget -= _bytes_within(path, budget)
        except OSError:
            return False
        if budget < 0:
            return False
    return True


# Whether every record in the store comes from the sources $1 (then the PATHs' condition selects every prompt).
ALL_FROM_SOURCES_SQL = """
SELECT NOT EXISTS (SELECT 1 FROM tool_calls WHERE source_id IS NULL OR NOT list_contains($1, source_id))
   AND NOT EXISTS (SELECT 1 FROM loop_exits WHERE source_id IS NULL OR NOT list_contains($1, source_id))
"""


def _all_from(con: duckdb.DuckDBPyConnection, source_ids: Sequence[int]) -> bool:
    """Whether every record in the store comes from one of ``source_ids``."""
    row = con.execute(ALL_FROM_SOURCES_SQL, [list(source_ids)]).fetchone()
    return bool(row and row[0])


@contextmanager
def open_for_analysis(
    db: str | os.PathLike[str] | None = None,
    paths: Sequence[str | os.PathLike[str]] | None = None,
    *,
    selection: Selection | None = None,
    input_format: str = "auto",
    reader_options: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    read_only: bool = False,
    require_records: bool = True,
    require_store: bool = True,
) -> Iterator[Analysis]:
    """Open ``db``, load ``paths`` into it first, and close it on the way out, whatever happens.

    With PATHs, the yielded selection is ``selection`` limited to the prompts of
    those files (so an analysis reports on exactly them even when the store
    holds more); without, it is ``selection`` (default: every prompt).

    ``require_records``: with PATHs of which none could be read or gave a record, or without
    PATHs over a store that holds no record, raise rather than analyse nothing (``load`` passes
    False: it reports such files itself; ``quarantine`` too: an all-quarantined store is its case).
    ``require_store``: without PATHs, raise when no database file is at ``db`` rather than create
    an empty one (a mistyped ``--db``).

    Raises:
        LoopscopeError: bad database, missing path, unreadable file, no PATH gave a record, no
            store at ``db`` or no record in it (without PATHs).
    """
    if not paths and require_store:
        _refuse_missing_store(db)
    con = connect(db, read_only=read_only, writes=bool(paths))
    stack = ExitStack()
    try:
        if (str(db) if db is not None else default_db_path()) == ":memory:":
            # this store dies with the connection: loop facts only if the analysis reads them
            from loopscope.analyses.store.facts import loops_on_demand

            stack.enter_context(loops_on_demand(con))
        small = getattr(con, "engine", "duckdb") == "duckdb" and _small_data(con, paths or ())
        if small:
            from loopscope.analyses.store.facts import small_store

            con.execute(ONE_THREAD_SQL)
            stack.enter_context(small_store(con))  # its facts need no lower memory limit
        wanted = selection or Selection()
        summary = None
        if paths and getattr(con, "engine", "duckdb") == "clickhouse":
            from loopscope.analyses.store.clickhouse import load_into_clickhouse

            summary = load_into_clickhouse(con, list(paths), input_format=input_format,  # type: ignore[arg-type]
                                           reader_options=reader_options, progress=progress)
            wanted = dataclasses.replace(wanted, source_ids=summary.source_ids)
        elif paths:
            from loopscope.analyses.ingest import load_paths

            summary = load_paths(con, list(paths), input_format=input_format, reader_options=reader_options,
                                 progress=progress)
            wanted = dataclasses.replace(wanted, source_ids=summary.source_ids)
            if small and _all_from(con, summary.source_ids):  # a scan of two small tables
                # The PATHs are the whole store: every query can leave their condition out (same rows).
                wanted = dataclasses.replace(wanted, store_sources=frozenset(summary.source_ids))
        if summary is not None and require_records:
            _refuse_when_nothing_was_read(summary)
        elif not paths and require_records:
            _refuse_empty_store(con, db)
        from loopscope.analyses.notices import check_selection

        check_selection(con, wanted)
        yield Analysis(con, wanted, summary)
    finally:
        stack.close()
        con.close()
