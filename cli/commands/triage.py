"""``loopscope triage CONVERSATION_ID``: the conversation and its first unrecovered error."""

from __future__ import annotations

from typing import Annotated

import typer

from loopscope.cli.app import command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, stdout_console, write_csv, write_json


@command("triage")
@selection_options(window=False)
def triage_command(
    conversation_id: Annotated[str, typer.Argument(help="The conversation to triage (its conversation_id).", show_default=False)],
    scope: Scope,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Show a conversation as a timeline and its first unrecovered tool error.

    Reads the conversation from the store (--db), after loading any PATHs
    given. Per prompt and step: each tool call with its outcome, attempts,
    latency and, for errors, the recovery class; the loop exit; retry loops
    and replays; and the first error the model did not recover from, with
    what was already tried and the recovery suggestions a harness could have
    injected. An unknown id exits 1 with the closest ids as a hint.

    \b
    Examples:
      loopscope unrecovered sample_logs/        # find the ids first
      loopscope triage c02-date-blind sample_logs/
      loopscope triage c02-date-blind --db prod.duckdb --format json
    """
    from loopscope.analyses.triage import triage
    from loopscope.cli.render.triage import CSV_COLUMNS, csv_rows, render

    # The PATHs are loaded into --db first; triage then reads the whole
    # conversation from the store, wherever its records came from.
    with scope.open() as (con, _selection, summary):
        result = triage(con, conversation_id, files_loaded=None if summary is None else summary.files)
    if output is OutputFormat.json:
        write_json(result.to_dict())
    elif output is OutputFormat.csv:
        write_csv(csv_rows(result), CSV_COLUMNS)
    else:
        console = stdout_console()
        console.print(render(result, console.width))
