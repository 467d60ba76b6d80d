"""Open the loopscope DuckDB store.

``connect(path)`` opens (or creates) a DuckDB file, sets the session to UTC
and migrates the schema. ``":memory:"`` gives a throwaway in-memory store.
The default path is ``./loopscope.duckdb``, or ``$LOOPSCOPE_DB`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

# Importing model registers its migrations after those in migrations.py.
from loopscope.analyses import model  # noqa: F401
from loopscope.analyses.errors import DatabaseError
from loopscope.analyses.store.migrations import migrate
from loopscope.analyses.store.transaction import transaction

__all__ = ["DB_ENV", "DEFAULT_DB", "connect", "default_db_path", "transaction"]

DEFAULT_DB = "loopscope.duckdb"
DB_ENV = "LOOPSCOPE_DB"


def default_db_path() -> str:
    """The database the CLI uses when ``--db`` is not given."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


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


def connect(path: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the store at ``path`` (default: ``default_db_path()``) and migrate it.

    Raises:
        DatabaseError: the file is not a DuckDB database, is locked by another
            process, or its folder does not exist.
    """
    target = str(path) if path is not None else default_db_path()
    if target != ":memory:":
        folder = Path(target).expanduser().resolve().parent
        if not folder.is_dir():
            raise DatabaseError(
                f"cannot create the database {target}: folder {folder} does not exist",
                hint="create the folder, or pass another --db FILE (or --db :memory:)",
            )
    try:
        con = duckdb.connect(target, read_only=read_only)
    except (duckdb.IOException, duckdb.InvalidInputException, duckdb.SerializationException) as exc:
        raise DatabaseError(f"cannot open the database {target}: {exc}", hint=_open_hint(str(exc))) from None
    con.execute("SET TimeZone = 'UTC'")
    if not read_only:
        migrate(con)
    return con
