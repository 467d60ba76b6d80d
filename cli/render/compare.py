"""Terminal rendering of ``loopscope compare``: one row per figure, A, B, B - A and the test."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.output import fmt_number, fmt_rate, inert, stdout_console
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
    for col, justify in (("metric", "left"), ("A", "right"), ("B", "right"), ("B - A", "right"),
                         ("p", "right"), ("significant", "left"), ("test", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for m, row in zip(result.metrics, rows):
        sig = "-" if m.test is None else ("[bold]yes[/bold]" if m.test.significant else
                                          ("no" if not m.test.note else f"no ({inert(m.test.note)})"))
        table.add_row(
            m.metric, _fmt(m.metric, m.a), _fmt(m.metric, m.b), _fmt(m.metric, m.difference, signed=True),
            "-" if row["p_value"] is None else f"{row['p_value']:.3g}", sig,
            "Mann-Whitney U" if (row["test"] or "").startswith("Mann-Whitney") else row["test"] or "",
        )
    console = stdout_console()
    console.print(table)
    console.print(f"[dim]alpha = {result.alpha}; rates: two-proportion z-test; tool calls per prompt: "
                  "Mann-Whitney U (see docs/audit.md)[/dim]")
