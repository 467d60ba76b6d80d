"""``loopscope export``: the v1 tables as Parquet files, for other tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopscope.cli.app import command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, write_csv, write_json


@command("export")
@selection_options()
def export_command(
    scope: Scope,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for tool_calls.parquet and loop_exits.parquet (created if missing; the two files are replaced).")
    ] = Path("loopscope-export"),
    output: FormatOption = OutputFormat.table,
) -> None:
    """Write the v1 tables (tool_calls, loop_exits) of the selected prompts to Parquet.

    One file per table, one row per record, the record's fields as columns
    (JSON fields as JSON text), in time order. DuckDB writes the files itself
    (COPY ... TO ... FORMAT parquet). Read them with polars, pandas, DuckDB or
    any Parquet reader.

    \b
    Examples:
      loopscope export sample_logs/ --db :memory: --out parquet/
      loopscope export --db prod.duckdb --since 2026-11-01 --agent concierge --out nov/
    """
    from loopscope.analyses.frames import check_out_dir, export_parquet

    check_out_dir(out)  # before any loading
    with scope.open(status="exporting") as (con, selection, _summary):
        written = export_parquet(con, out, selection)
    rows = [w.to_dict() for w in written]
    if output is OutputFormat.json:
        write_json(rows)
    elif output is OutputFormat.csv:
        write_csv(rows, ("table", "path", "rows"))
    else:
        from loopscope.cli.render.export import render

        render(written)
