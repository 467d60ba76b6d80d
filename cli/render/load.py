"""Terminal rendering of ``loopscope load``: one row per file, then the totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopscope.cli.render.output import fmt_number, inert, stdout_console

if TYPE_CHECKING:
    from loopscope.analyses.ingest import LoadSummary


def render(summary: LoadSummary, db: str | None) -> None:
    """Print a ``LoadSummary``; ``db`` is named in the quarantine hint when given."""
    from loopscope.cli.render.output import shown_path
    from rich.table import Table

    out = stdout_console()
    table = Table(title=None, box=None, pad_edge=False)
    for col in ("file", "format", "status", "loaded", "skipped", "quarantined"):
        table.add_column(col, justify="right" if col in ("loaded", "skipped", "quarantined") else "left")
    for d in summary.details:
        table.add_row(
            inert(shown_path(d.path)), inert(d.input_format), inert(d.status),
            fmt_number(d.loaded), fmt_number(d.skipped), fmt_number(d.quarantined),
        )
    out.print(table)
    out.print(
        f"{summary.files} files: {summary.loaded} records loaded "
        f"({summary.tool_calls} tool calls, {summary.loop_exits} loop exits), "
        f"{summary.skipped} skipped as already loaded, {summary.quarantined} quarantined"
        + (f", {summary.protocol_violations} protocol violations" if summary.protocol_violations else "")
        + (f", {summary.unreadable} unreadable (not loaded)" if summary.unreadable else "")
    )
    if summary.skipped_types:
        counts = ", ".join(f"{inert(name)} {n}" for name, n in sorted(summary.skipped_types.items(), key=lambda kv: (-kv[1], kv[0])))
        total = sum(summary.skipped_types.values())
        out.print(f"Lines not read (not errors), per type: {total} ({counts})")
    if summary.ignored:
        names = ", ".join(inert(shown_path(p)) for p in summary.ignored[:3]) + (", ..." if len(summary.ignored) > 3 else "")
        n = len(summary.ignored)
        out.print(f"Not log files (not *.jsonl, *.ndjson, *.json or .gz), left out: {n} file{'s' if n != 1 else ''}, {names}")
    if summary.quarantined:
        out.print("See the bad lines with: [b]loopscope quarantine[/b]" + (f" --db {inert(db)}" if db else ""))
