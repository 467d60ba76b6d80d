"""Terminal rendering of ``loopscope compare``: one row per figure, A, B, B - A and the test."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.output import fmt_number, fmt_rate, inert, print_fitted, stdout_console
from loopscope.cli.render.styles import is_rate


def _fmt(metric: str, value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    if is_rate(metric):
        text = f"{value * 100:+.1f} pts" if signed else fmt_rate(value)
        return text
    text = fmt_number(value)
    return f"+{text}" if signed and value > 0 else text


def render(result: Any, rows: list[dict[str, Any]]) -> None:
    """Print a ``Comparison`` and its rows."""
    from rich.table import Table

    table = Table(title=f"A = {inert(result.label_a)}    B = {inert(result.label_b)}", title_justify="left")
    # A figure keeps its one name whole (print_fitted): only the significance note wraps on a
    # narrow terminal. Which test each row had is said once, under the table (JSON and CSV
    # carry it per row).
    for col, justify in (("metric", "left"), ("A", "right"), ("B", "right"), ("B - A", "right"), ("p", "right")):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("significant", min_width=len("significant"))
    for m, row in zip(result.metrics, rows):
        sig = "-" if m.test is None else ("[bold]yes[/bold]" if m.test.significant else
                                          ("no" if not m.test.note else f"no ({inert(m.test.note)})"))
        table.add_row(
            m.metric, _fmt(m.metric, m.a), _fmt(m.metric, m.b), _fmt(m.metric, m.difference, signed=True),
            "-" if row["p_value"] is None else f"{row['p_value']:.3g}", sig,
        )
    console = stdout_console()
    print_fitted(console, table)
    console.print(f"[dim]alpha = {result.alpha}; rates: two-proportion z-test; tool calls per prompt: "
                  "Mann-Whitney U (see docs/audit.md)[/dim]")
