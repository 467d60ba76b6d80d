"""Terminal rendering of ``loopscope demo``: the logs written, and what to run next."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from loopscope.cli.render.output import inert, stdout_console


def render(described: dict[str, dict[str, int]], out: Path) -> None:
    """Print the records per demo log file (``describe(paths)`` of the demo) and the next command."""
    table = Table(title="demo logs written", title_justify="left")
    table.add_column("file")
    table.add_column("tool_call records", justify="right")
    table.add_column("loop_exit records", justify="right")
    for path, kinds in described.items():
        table.add_row(inert(path), str(kinds["tool_call"]), str(kinds["loop_exit"]))
    console = stdout_console()
    console.print(table)
    console.print(f"Next: [b]loopscope metrics {inert(out)}[/b]")
