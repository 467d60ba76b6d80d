"""``loopscope metrics [PATH...]``: the four dashboard metrics."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from loopscope.cli.app import command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, write_csv, write_json


@command("metrics")
@selection_options()
def metrics(
    scope: Scope,
    fmt: FormatOption = OutputFormat.table,
    by: Annotated[
        Optional[str],
        typer.Option("--by", help="One row per [b]day[/b], ISO [b]week[/b] (2026-W47), [b]agent[/b] or value of a "
                     "tag ([b]tag:model[/b]: prompts without the tag are '(untagged)'); "
                     "[b]tool[/b]: per-tool health (calls, errors, error rate, recovery, replays, latency "
                     "p50/p95/p99, most frequent error template).", show_default=False),
    ] = None,
) -> None:
    """The four dashboard metrics: tool calls per prompt (median, p99), recovery rate, replay rate.

    Beside the recovery rate (recovered inside the prompt's own loop), the
    conversation recovery rate also counts the errors a later prompt of the
    conversation resolved (the same tool succeeded after the user helped).
    --by tool gives each tool's health instead: its calls, errors and error
    rate, recovery rates, replays, latency percentiles (p50, p95, p99 of
    latency_ms) and its most frequent error template.
    With PATHs, loads them first and reports on those files only. Anything
    that makes the figures mislead (errors only in the text, no timestamps,
    reused tool call ids) is said on stderr.

    \b
    Examples:
      loopscope metrics sample_logs/
      loopscope metrics --by week --format json
      loopscope metrics sample_logs/ --by tool
      loopscope metrics tau2/ --by tag:model
      loopscope metrics --agent concierge --since 2026-11-01 --format csv
    """
    from loopscope.analyses.metrics import (
        BY_TOOL,
        ERROR_CLASSES_KEY,
        GROUP_BY_CHOICES,
        METRIC_KEYS,
        TOOL_KEYS,
        flat_dict,
        metrics_by,
    )
    from loopscope.analyses.model import ERROR_CLASSES
    from loopscope.analyses.notices import notices
    from loopscope.analyses.selection import parse_group_by
    from loopscope.cli.common import print_notices

    grouping = parse_group_by(by, (*GROUP_BY_CHOICES, BY_TOOL)) if by is not None else None  # before any work
    with scope.open(name_quarantined="none") as (con, selection, _summary):  # the quarantined_lines notice names them
        if by == BY_TOOL:
            from loopscope.analyses.tools import tool_health

            tools = tool_health(con, selection).tools
        else:
            rows = metrics_by(con, selection, grouping)
        found = notices(con, selection)
    print_notices(found, scope.db)
    if by == BY_TOOL:
        if fmt is OutputFormat.json:
            write_json([t.as_dict() for t in tools])
        elif fmt is OutputFormat.csv:
            write_csv([flat_dict(t.as_dict()) for t in tools],
                      TOOL_KEYS + tuple(f"{ERROR_CLASSES_KEY}.{c}" for c in ERROR_CLASSES))
        else:
            from loopscope.cli.render.metrics import render_tools

            render_tools(tools)
        return
    if fmt is OutputFormat.json:
        write_json([m.as_dict() for m in rows] if by else rows[0].as_dict())
        return
    columns = (("group",) if by else ()) + METRIC_KEYS + tuple(f"{ERROR_CLASSES_KEY}.{c}" for c in ERROR_CLASSES)
    if fmt is OutputFormat.csv:
        write_csv([flat_dict(m.as_dict()) for m in rows], columns)
        return
    from loopscope.cli.render.metrics import render

    render(rows, by)
