"""Terminal rendering of ``loopscope metrics``: one column of figures, or one row per group."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.output import fmt_number, fmt_rate, inert, stdout_console
from loopscope.cli.render.styles import label

# The figures of the table, in order, and how each is shown.
_FIGURES = (
    ("prompts", "n"),
    ("open_prompts", "n"),
    ("tool_calls", "n"),
    ("median_tool_calls_per_prompt", "n"),
    ("p99_tool_calls_per_prompt", "n"),
    ("errors", "n"),
    ("recovered_errors", "n"),
    ("recovery_rate", "rate"),
    ("resolved_later_errors", "n"),
    ("conversation_recovery_rate", "rate"),
    ("replays", "n"),
    ("replay_rate", "rate"),
)
_LABELS = tuple((key, label(key), kind) for key, kind in _FIGURES)


def _cell(value: object, kind: str) -> str:
    return fmt_rate(value) if kind == "rate" else fmt_number(value)  # type: ignore[arg-type]


def render(rows: list[Any], by: str | None) -> None:
    from rich.table import Table

    out = stdout_console()
    if by is None:
        m = rows[0].as_dict()
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, text, kind in _LABELS:
            table.add_row(text, _cell(m[key], kind))
        out.print(table)
        return
    table = Table(box=None, pad_edge=False, collapse_padding=True, padding=(0, 1))
    table.add_column(by, no_wrap=True, min_width=8 if by == "week" else None)
    short = ("prompts", "open", "calls", "median", "p99", "errors", "recov", "recov %", "later", "conv %",
             "replays", "replay %")
    for name in short:
        table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    for m in rows:
        d = m.as_dict()
        table.add_row(inert(d["group"]), *(_cell(d[key], kind) for key, _, kind in _LABELS))
    if not rows:
        out.print("No prompts in the selection.")
        return
    out.print(table)
