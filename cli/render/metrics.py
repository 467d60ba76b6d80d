"""Terminal rendering of ``loopscope metrics``: one column of figures, or one row per group."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.output import fmt_number, fmt_rate, inert, print_fitted, print_whole, stdout_console
from loopscope.cli.render.styles import TOOL_COLUMNS, TOOL_TEMPLATE_COLUMNS, figure_text, label

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
GROUP_COLUMN_MAX = 28


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
    # the group names whole (a model name such as openai/gpt-oss-120b), up to a limit; tag:KEY is user text
    longest = max([len(str(m.group)) for m in rows] + [len(by)])
    table.add_column(inert(by), no_wrap=True, min_width=min(longest, GROUP_COLUMN_MAX))
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
    print_whole(out, table)


def tool_cells(tool: dict[str, Any], columns: tuple[tuple[str, str], ...] = TOOL_COLUMNS) -> list[str]:
    """One tool's row as rich-markup cells, every text from the logs inert."""
    cells = []
    for key, _ in columns:
        value = tool[key]
        if key == "tool_name":
            cells.append(inert(value) + (" [dim](scratchpad)[/dim]" if tool["scratchpad"] else ""))
        elif key == "top_error_template":
            cells.append(inert(value) if value else "[dim](no message)[/dim]")
        else:
            cells.append(figure_text(key, value))
    return cells


def tool_tables(tools: list[dict[str, Any]], title: str | None = None, *, ruled: bool = False) -> list[Any]:
    """The per-tool figures table, and the tools' most frequent error templates (tools with errors only).

    ``ruled``: a rule under the headers, as the audit's tables have; else bare, as ``metrics --by``.
    """
    from rich import box
    from rich.table import Table

    def table(title: str | None) -> Table:
        # one space between columns: ten figures fit 80 columns
        return Table(title=title, title_justify="left", title_style="bold",
                     box=box.SIMPLE_HEAD if ruled else None, padding=(0, 0 if ruled else 1), pad_edge=False,
                     collapse_padding=True)

    figures = table(title)
    for key, header in TOOL_COLUMNS:
        if key == "tool_name":  # a tool name is never cut or folded (print_whole, print_fitted)
            figures.add_column(header, no_wrap=True, min_width=12)
        else:
            figures.add_column(header, justify="right", no_wrap=True)
    for t in tools:
        figures.add_row(*tool_cells(t))
    templates = table("Most frequent error template per tool")
    for key, header in TOOL_TEMPLATE_COLUMNS:
        if key == "top_error_template":
            templates.add_column(header, ratio=1, min_width=24, overflow="fold")
        elif key == "tool_name":
            templates.add_column(header, no_wrap=True)
        else:
            templates.add_column(header, justify="right", no_wrap=True)
    with_errors = [t for t in tools if t["errors"]]
    for t in with_errors:
        templates.add_row(*tool_cells(t, TOOL_TEMPLATE_COLUMNS))
    return [figures, templates] if with_errors else [figures]


def render_tools(tools: list[Any]) -> None:
    """``metrics --by tool``: one row per tool, most called first, then the tools' error templates."""
    out = stdout_console()
    if not tools:
        out.print("No tool calls in the selection.")
        return
    rows = [t.as_dict() for t in tools]
    for i, table in enumerate(tool_tables(rows)):
        if i:
            out.print()
            print_fitted(out, table)  # the error templates wrap to the terminal's width, the tool names whole
        else:
            print_whole(out, table)  # the figures, every column whole
    missing = sum(t.tool_calls_without_latency for t in tools)
    if missing:
        out.print(f"[dim]{missing} call{'s' if missing != 1 else ''} without latency_ms, left out of the percentiles "
                  "(tool_calls_without_latency in --format json)[/dim]")
