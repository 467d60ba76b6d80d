"""``loopscope unrecovered``: conversations whose first unrecovered error exists."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from loopscope.cli.app import command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, write_csv, write_json


@command("unrecovered")
@selection_options()
def unrecovered_command(
    scope: Scope,
    tool: Annotated[
        Optional[list[str]],
        typer.Option("--tool", help="Only conversations whose first unrecovered error is in this tool (repeat for several).", show_default=False),
    ] = None,
    error_class: Annotated[
        Optional[list[str]],
        typer.Option("--class", help="Only this class of first unrecovered error: [b]gave_up[/b], [b]aborted[/b] or [b]open[/b] (repeat for several).", show_default=False),
    ] = None,
    never_resolved: Annotated[
        bool,
        typer.Option(
            "--never-resolved",
            help="Only errors no later prompt of the conversation resolved (the same tool never succeeded again).",
        ),
    ] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Show at most this many conversations.", show_default=False)] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List conversations with an unrecovered tool error, newest first.

    Reads the store (--db), after loading any PATHs given. One row per
    conversation: its first unrecovered error (prompt, step, tool, class,
    the message the model saw) among the selected prompts, and whether a later
    prompt resolved it (the same tool succeeded after the user helped).
    Follow up with [b]loopscope triage CONVERSATION_ID[/b].

    \b
    Examples:
      loopscope unrecovered sample_logs/
      loopscope unrecovered --since 2026-11-20 --class gave_up --tool book
      loopscope unrecovered --never-resolved --limit 20
      loopscope unrecovered --limit 20 --format csv > unrecovered.csv
    """
    from loopscope.analyses.recovery import (
        UNRECOVERED_COLUMNS, check_list_arguments, count_first_unrecovered, iter_first_unrecovered_all,
    )

    from loopscope.cli.common import print_notices, selection_notices

    check_list_arguments(tuple(error_class or ()), limit)  # a typo fails before any loading
    with scope.open() as (con, selection, summary):
        found = selection_notices(con, selection, summary is not None)
        rows = iter_first_unrecovered_all(
            con, selection, tools=tuple(tool or ()), classes=tuple(error_class or ()), limit=limit,
            never_resolved=never_resolved,
        )
        # json and csv are written while the rows are read (the store is open until then)
        if output is OutputFormat.json:
            print_notices(found, scope.db)
            write_json(r.to_dict() for r in rows)
            return
        if output is OutputFormat.csv:
            print_notices(found, scope.db)
            write_csv((r.to_dict() for r in rows), UNRECOVERED_COLUMNS)
            return
        shown = list(rows)
        total = len(shown)
        if limit is not None and len(shown) == limit:  # cut: say how many there are in all
            total = count_first_unrecovered(
                con, selection, tools=tuple(tool or ()), classes=tuple(error_class or ()),
                never_resolved=never_resolved,
            )
    from loopscope.cli.render.unrecovered import render

    print_notices(found, scope.db)
    render(shown, total)
