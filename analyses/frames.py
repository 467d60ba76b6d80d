"""The Python API for notebooks: the store's v1 tables and the metrics as polars DataFrames, and Parquet export.

DuckDB hands query results to polars through the Arrow C stream interface (the relation's
``__arrow_c_stream__``, read by ``pl.DataFrame``): the columns move as Arrow buffers, never
row by row through Python, and pyarrow is not needed.

    >>> from loopscope.analyses import frames
    >>> t = frames.load_frames(["sample_logs/"])          # loads into a throwaway store
    >>> t["tool_calls"].group_by("tool_name").len()       # a polars DataFrame

``export_parquet`` writes the same tables with DuckDB's ``COPY ... TO ... (FORMAT parquet)``
for other tools (``loopscope export``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.selection import Selection

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# The two tables of v1 records (docs/records.md), one row per record.
V1_TABLES = ("tool_calls", "loop_exits")

# A v1 table's records among the selected prompts, in time order, with the record's fields only
# (seq, source_id and line_no are the store's bookkeeping). ``{table}`` is one of V1_TABLES.
TABLE_ROWS_SQL = """
SELECT t.* EXCLUDE (seq, source_id, line_no)
FROM {table} t
WHERE EXISTS (
    SELECT 1 FROM prompts_v p
    WHERE p.conversation_id = t.conversation_id AND p.prompt_id = t.prompt_id AND {where}
)
ORDER BY t.ts, t.seq
"""


def _rows_sql(table: str, selection: Selection | None) -> tuple[str, list[object]]:
    if table not in V1_TABLES:
        raise LoopscopeError(f"{table!r} is not a v1 table", hint="one of: " + ", ".join(V1_TABLES))
    where, params = (selection or Selection()).where("p")
    return TABLE_ROWS_SQL.format(table=table, where=where), params


def table_frame(con: duckdb.DuckDBPyConnection, table: str, selection: Selection | None = None) -> pl.DataFrame:
    """One v1 table (``tool_calls`` or ``loop_exits``) of the selected prompts as a polars DataFrame (via Arrow).

    JSON columns (``tags``, ``input_shape``, ``extra``) are JSON text; decode them with
    ``pl.col("tags").str.json_decode()`` when needed.
    """
    import polars as pl

    sql, params = _rows_sql(table, selection)
    # a cursor of its own: a result the caller left unfinished on ``con`` does not block this read
    cursor = con.cursor()
    try:
        return pl.DataFrame(cursor.sql(sql, params=params))
    finally:
        cursor.close()


def load_frames(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    *,
    db: str | os.PathLike[str] | None = ":memory:",
    selection: Selection | None = None,
    input_format: str = "auto",
) -> dict[str, pl.DataFrame]:
    """Load ``paths`` (if any) into ``db`` and return every v1 table of the selected prompts as a DataFrame.

    Args:
        paths: log files, folders or globs, as for ``loopscope load``.
        db: the store; ``":memory:"`` (the default) loads into a throwaway one,
            ``None`` opens ``./loopscope.duckdb`` (or ``$LOOPSCOPE_DB``).
        selection: which prompts (time window, agents, tags); with PATHs it is
            further limited to those files.
        input_format: ``auto``, ``records``, ``messages`` or ``otlp``.

    Returns:
        ``{"tool_calls": DataFrame, "loop_exits": DataFrame}``; the store is closed.
    """
    from loopscope.analyses.store import open_for_analysis

    with open_for_analysis(db, paths, selection=selection, input_format=input_format) as opened:
        return {table: table_frame(opened.con, table, opened.selection) for table in V1_TABLES}


def metrics_frame(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    *,
    db: str | os.PathLike[str] | None = ":memory:",
    by: str | None = None,
    selection: Selection | None = None,
    input_format: str = "auto",
) -> pl.DataFrame:
    """The four dashboard metrics as a DataFrame: one row overall, or one per ``by`` group (day, week, agent).

    The columns are the figures' names of ``loopscope metrics --format json``.
    """
    import polars as pl

    from loopscope.analyses.metrics import metrics_by
    from loopscope.analyses.store import open_for_analysis

    with open_for_analysis(db, paths, selection=selection, input_format=input_format) as opened:
        rows = metrics_by(opened.con, opened.selection, by)
    return pl.DataFrame([m.as_dict() for m in rows])


@dataclass(frozen=True)
class ExportedTable:
    """One Parquet file written by ``export_parquet``."""

    table: str
    path: Path
    rows: int

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "path": str(self.path), "rows": self.rows}


def check_out_dir(out_dir: str | os.PathLike[str]) -> Path:
    """``out_dir`` as a Path, refused when it is a file (the CLI checks it before opening the store).

    Raises:
        LoopscopeError: ``out_dir`` is a file.
    """
    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():
        raise LoopscopeError(f"--out {folder} is a file, not a folder", hint="give a folder for the Parquet files")
    return folder


def export_parquet(
    con: duckdb.DuckDBPyConnection, out_dir: str | os.PathLike[str], selection: Selection | None = None
) -> list[ExportedTable]:
    """Write each v1 table of the selected prompts to ``out_dir/<table>.parquet`` (replaced if there).

    DuckDB writes the files itself (``COPY (query) TO file (FORMAT parquet)``); nothing passes
    through Python rows. The folder is created when missing.

    Raises:
        LoopscopeError: ``out_dir`` is a file, or cannot be created or written.
    """
    import duckdb

    folder = check_out_dir(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LoopscopeError(f"cannot create --out {folder}: {exc.strerror}", hint="give a writable folder") from None
    written = []
    for table in V1_TABLES:
        sql, params = _rows_sql(table, selection)
        path = folder / f"{table}.parquet"
        try:
            con.execute(f"COPY ({sql}) TO ? (FORMAT parquet, COMPRESSION zstd)", [*params, str(path)])
        except duckdb.IOException as exc:
            raise LoopscopeError(f"cannot write {path}: {exc}", hint="give a writable folder") from None
        rows = con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()[0]
        written.append(ExportedTable(table, path, rows))
    return written
