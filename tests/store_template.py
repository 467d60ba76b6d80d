"""A migrated, empty store to copy: what ``connect`` on a new file makes, made once per test process.

Creating a store runs every migration (tables, the model's views); copying the
file a first ``connect`` wrote gives the same store in a fraction of the time,
and ``connect`` on the copy still checks it as it checks any store. For tests
that open a new store per generated example.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import duckdb

from loopscope.analyses.store import connect

_made: list[Path] = []


def _template() -> Path:
    if not _made:
        folder = Path(tempfile.mkdtemp(prefix="loopscope-template-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "empty.duckdb"
        connect(path).close()
        _made.append(path)
    return _made[0]


def new_store(path: Path) -> duckdb.DuckDBPyConnection:
    """``connect(path)`` for a ``path`` that does not exist yet, from a copy of the empty store."""
    if path.exists():
        raise FileExistsError(path)
    shutil.copyfile(_template(), path)
    return connect(path)
