"""``loopscope metrics [PATH...]``: the four dashboard metrics."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from loopscope.cli.app import command
from loopscope.cli.options import (
    AgentOption,
    DbOption,
    FormatOption,
    InputFormatOption,
    PathsArgument,
    SinceOption,
    TagOption,
    UntilOption,
)
from loopscope.cli.render.output import OutputFormat, fmt_number, fmt_rate, inert, stdout_console, write_csv, write_json


@command("metrics")
def metrics(
    paths: PathsArgument = None,
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
    since: SinceOption = None,
    until: UntilOption = None,
    agent: AgentOption = None,
    tag: TagOption = None,
    by: Annotated[
        Optional[str],
        typer.Option("--by", help="One row per [b]day[/b], ISO [b]week[/b] (2026-W47) or [b]agent[/b].", show_default=False),
    ] = None,
    input_format: InputFormatOption = "auto",
) -> None:
    """The four dashboard metrics: tool calls per prompt (median, p99), recovery rate, replay rate.

    With PATHs, loads them first and reports on those files only.
    """
    from loopscope.analyses.metrics import GROUP_KEYS, METRIC_KEYS, metrics_by
    from loopscope.analyses.errors import LoopscopeError
    from loopscope.cli.common import open_store, selection_from_options

    if by is not None and by not in GROUP_KEYS:
        raise LoopscopeError(f"--by {by!r} is not a grouping", hint="use --by day, --by week or --by agent")
    selection = selection_from_options(since, until, agent, tag)
    con, loaded, _ = open_store(db, paths, input_format)
    selection = dataclasses.replace(selection, source_ids=loaded.source_ids)
    rows = metrics_by(con, selection, by)
    if fmt is OutputFormat.json:
        write_json([m.as_dict() for m in rows] if by else rows[0].as_dict())
        return
    columns = (("group",) if by else ()) + METRIC_KEYS
    if fmt is OutputFormat.csv:
        write_csv([m.as_dict() for m in rows], columns)
        return
    _render_table(rows, by)


_LABELS = (
    ("prompts", "prompts", "n"),
    ("open_prompts", "open prompts (no loop_exit)", "n"),
    ("tool_calls", "tool calls", "n"),
    ("median_tool_calls_per_prompt", "median tool calls / prompt", "n"),
    ("p99_tool_calls_per_prompt", "p99 tool calls / prompt", "n"),
    ("errors", "tool errors", "n"),
    ("recovered_errors", "recovered errors", "n"),
    ("recovery_rate", "recovery rate", "rate"),
    ("replays", "replayed tool calls", "n"),
    ("replay_rate", "replay rate", "rate"),
)


def _cell(value: object, kind: str) -> str:
    return fmt_rate(value) if kind == "rate" else fmt_number(value)  # type: ignore[arg-type]


def _render_table(rows: list, by: str | None) -> None:  # type: ignore[type-arg]
    from rich.table import Table

    out = stdout_console()
    if by is None:
        m = rows[0].as_dict()
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, label, kind in _LABELS:
            table.add_row(label, _cell(m[key], kind))
        out.print(table)
        return
    table = Table(box=None, pad_edge=False, collapse_padding=True, padding=(0, 1))
    table.add_column(by, no_wrap=True, min_width=8 if by == "week" else None)
    short = ("prompts", "open", "calls", "median", "p99", "errors", "recov", "recov %", "replays", "replay %")
    for name in short:
        table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    for m in rows:
        d = m.as_dict()
        table.add_row(inert(d["group"]), *(_cell(d[key], kind) for key, _, kind in _LABELS))
    if not rows:
        out.print("No prompts in the selection.")
        return
    out.print(table)
