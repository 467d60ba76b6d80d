"""``loopscope audit``: the whole report, for a terminal, a script (json) or a browser (--html)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from loopscope.cli.app import command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, inert, stderr_console, stdout_console, write_json


@command("audit")
@selection_options()
def audit_command(
    scope: Scope,
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write the report as one self-contained HTML page (opens offline).", show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", help="Rows per list (loops, replays, templates, triage...). Totals are always complete.")] = 10,
    by: Annotated[Optional[str], typer.Option(
        "--by", help="Also every figure and weekly series per value of a tag ([b]tag:model[/b], [b]tag:domain[/b]); "
        "the charts then draw one line per value. Per agent is always there.", show_default=False)] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """The audit report: the four metrics per week and agent with significant changes flagged, and every incident list.

    Week-over-week changes are tested (two-proportion z-test for the rates,
    Mann-Whitney U for tool calls per prompt) and flagged at p < 0.05. Then error
    classes per tool, costliest generic error messages, retry loops, replays and
    double executions, budget pressure, protocol violations, the conversations to
    triage first, and reviewer verdicts next to the computed classes.

    \b
    Examples:
      loopscope audit sample_logs/
      loopscope audit sample_logs/ --html audit.html
      loopscope audit --since 2026-11-01 --format json
      loopscope audit --week 2026-W47 --limit 25
      loopscope audit tau2/ --by tag:model --html audit.html
    """
    from loopscope.analyses.audit import audit
    from loopscope.analyses.errors import LoopscopeError
    from loopscope.analyses.outputs import check_output_file, write_output_file
    from loopscope.analyses.selection import parse_group_by

    grouping = parse_group_by(by, ("agent",)) if by is not None else None
    if limit < 1:
        raise LoopscopeError(f"--limit {limit} must be at least 1", hint="for example --limit 20")
    if output is OutputFormat.csv:
        raise LoopscopeError("audit has no csv output: it is many tables", hint="use --format json, or --html FILE")
    if html is not None:  # fail before the work, not after
        check_output_file(html, "--html")
    with scope.open(name_quarantined="none") as (con, selection, _summary):  # the quarantined_lines notice names them
        report = audit(con, selection, limit=limit, by=grouping, timelines=html is not None)
    if report["overall"]["prompts"] == 0:
        raise LoopscopeError("the selection has no prompt to audit",
                             hint="load logs first (pass PATHs), or widen --since/--until/--agent/--tag")
    from loopscope.analyses.notices import Notice
    from loopscope.cli.common import print_notices

    print_notices([Notice(**n) for n in report["notices"]], scope.db)
    if html is not None:
        from loopscope.cli.render.html import render_html

        write_output_file(html, render_html(report))
        stderr_console().print(f"wrote {inert(html)}")
    if output is OutputFormat.json:
        write_json(report)
        return
    from loopscope.cli.render.audit import render

    render(report, stdout_console())
