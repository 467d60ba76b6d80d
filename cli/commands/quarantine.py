"""``loopscope quarantine``: list the lines load set aside, with a hint each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from loopscope.cli.app import command
from loopscope.cli.options import DbOption, FormatOption
from loopscope.cli.render.output import OutputFormat, inert, stdout_console, write_csv, write_json

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
    from loopscope.cli.common import analysis_store, shown_path

    name = str(Path(file).resolve()) if file and Path(file).exists() else file
    with analysis_store(db, None) as (con, _selection, _summary):
        lines, total = list_quarantine(con, file=name, limit=limit)
    rows = [{"path": q.path, "line_no": q.line_no, "reason": q.reason, "hint": q.hint, "raw": q.raw} for q in lines]
    if fmt is OutputFormat.json:
        write_json(rows)
        return
    if fmt is OutputFormat.csv:
        write_csv(rows, COLUMNS)
        return
    out = stdout_console()
    if not rows:
        out.print("No quarantined lines." if total == 0 else "No quarantined lines for that file.")
        return
    for q in lines:
        where = f"{shown_path(q.path)}:{q.line_no}" if q.line_no is not None else shown_path(q.path)
        raw = q.raw if len(q.raw) <= 120 else q.raw[:117] + "..."
        out.print(f"[b]{inert(where)}[/b]  {inert(q.reason)}")
        out.print(f"  [dim]line:[/dim] {inert(raw)}")
        out.print(f"  [dim]hint:[/dim] {inert(q.hint)}")
    if total > len(lines):
        out.print(f"[dim]{len(lines)} of {total} shown; use --limit or --file to see others.[/dim]")
    else:
        out.print(f"[dim]{total} quarantined line{'s' if total != 1 else ''}.[/dim]")
