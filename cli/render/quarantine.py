"""Terminal rendering of ``loopscope quarantine``: each bad line with its reason and hint."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.output import inert, shown_path, stdout_console


def render(lines: list[Any], total: int) -> None:
    """Print the quarantined lines shown (``lines``) out of ``total``."""
    out = stdout_console()
    if not lines:
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
