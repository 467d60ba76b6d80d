"""``loopscope quarantine``: list the lines load set aside, with a hint each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from loopscope.cli.app import command
from loopscope.cli.options import DbOption, FormatOption
from loopscope.cli.render.output import OutputFormat, write_csv, write_json

COLUMNS = ("path", "line_no", "reason", "hint", "raw")


@command("quarantine")
def quarantine(
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many lines.")] = 50,
    file: Annotated[
        Optional[str], typer.Option("--file", help="Only lines of this file (its path, or its name).", show_default=False)
    ] = None,
) -> None:
    """List the bad lines found while loading: file, line, reason and a hint to fix each."""
    from loopscope.analyses.quarantine import list_quarantine
    from loopscope.cli.common import analysis_store

    name = str(Path(file).resolve()) if file and Path(file).exists() else file
    with analysis_store(db, None, require_records=False) as (con, _selection, _summary):
        lines, total = list_quarantine(con, file=name, limit=limit)
    rows = [{"path": q.path, "line_no": q.line_no, "reason": q.reason, "hint": q.hint, "raw": q.raw} for q in lines]
    if fmt is OutputFormat.json:
        write_json(rows)
        return
    if fmt is OutputFormat.csv:
        write_csv(rows, COLUMNS)
        return
    from loopscope.cli.render.quarantine import render

    render(lines, total)
