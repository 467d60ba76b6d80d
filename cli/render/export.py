"""Terminal rendering of ``loopscope export``: the files written and their rows."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.audit import new_table
from loopscope.cli.render.output import fmt_number, inert, stdout_console


def render(written: Any) -> None:
    """Print the ``ExportedTable`` list."""
    table = new_table("Parquet files written")
    table.add_column("table", no_wrap=True)
    table.add_column("file", overflow="fold")
    table.add_column("rows", justify="right", no_wrap=True)
    for w in written:
        table.add_row(w.table, inert(w.path), fmt_number(w.rows))
    stdout_console().print(table)
