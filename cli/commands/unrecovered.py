"""``loopscope unrecovered``: conversations whose first unrecovered error exists."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Annotated, Optional

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
from loopscope.cli.output import OutputFormat, inert, stdout_console, write_csv, write_json

if TYPE_CHECKING:  # imported inside the command body: the analyses pull in duckdb
    from loopscope.analyses.recovery import UnrecoveredRow

CLASS_STYLE = {"gave_up": "yellow", "aborted": "red", "open": "magenta"}
MESSAGE_CHARS = 70


@command("unrecovered")
def unrecovered_command(
    paths: PathsArgument = None,
    db: DbOption = None,
    input_format: InputFormatOption = "auto",
    since: SinceOption = None,
    until: UntilOption = None,
    agent: AgentOption = None,
    tag: TagOption = None,
    tool: Annotated[
        Optional[list[str]],
        typer.Option("--tool", help="Only conversations whose first unrecovered error is in this tool (repeat for several).", show_default=False),
    ] = None,
    error_class: Annotated[
        Optional[list[str]],
        typer.Option("--class", help="Only this class of first unrecovered error: [b]gave_up[/b], [b]aborted[/b] or [b]open[/b] (repeat for several).", show_default=False),
    ] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Show at most this many conversations.", show_default=False)] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List conversations with an unrecovered tool error, newest first.

    One row per conversation: its first unrecovered error (prompt, step, tool,
    tool_call_id, class, the message the model saw) among the selected prompts.
    Follow up with [b]loopscope triage CONVERSATION_ID[/b].

    \b
    Examples:
      loopscope unrecovered sample_logs/
      loopscope unrecovered --since 2026-11-20 --class gave_up --tool search_flights
      loopscope unrecovered --limit 20 --format csv > unrecovered.csv
    """
    from loopscope.analyses.recovery import UNRECOVERED_COLUMNS, first_unrecovered_all
    from loopscope.cli.common import open_store, selection_from_options

    # Parse the options before loading anything, so a typo fails fast.
    selection_from_options(since, until, agent, tag)
    con, loaded, _summary = open_store(db, paths, input_format)
    try:
        selection = selection_from_options(since, until, agent, tag, source_ids=loaded.source_ids)
        rows = first_unrecovered_all(
            con, selection, tools=tuple(tool or ()), classes=tuple(error_class or ()), limit=limit
        )
    finally:
        con.close()
    if output is OutputFormat.json:
        write_json([r.to_dict() for r in rows])
    elif output is OutputFormat.csv:
        write_csv([r.to_dict() for r in rows], UNRECOVERED_COLUMNS)
    else:
        _render(rows)


def _ts(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M") + "Z"


def _render(rows: list[UnrecoveredRow]) -> None:
    from rich.table import Table

    console = stdout_console()
    if not rows:
        console.print("No conversation in the selection has an unrecovered tool error.")
        return
    table = Table(title=f"{len(rows)} conversation{'s' if len(rows) != 1 else ''} with an unrecovered tool error", title_justify="left")
    # Two lines per row keep the table narrow; tool_call_id and the other fields
    # are in --format json/csv. Ids stay on one line (copy-pasteable), the message wraps.
    table.add_column("last active", no_wrap=True)
    table.add_column("conversation / prompt, step", no_wrap=True)
    table.add_column("tool / class", no_wrap=True)
    table.add_column("error message", ratio=1)
    for r in rows:
        style = CLASS_STYLE.get(r.error_class, "white")
        message = " ".join((r.error_message or "").split())
        if len(message) > MESSAGE_CHARS:
            message = message[: MESSAGE_CHARS - 1] + "…"
        prev = f"prev. {r.previous_attempts}"
        table.add_row(
            _ts(r.last_ts),
            f"{inert(r.conversation_id)}\n[dim]{inert(r.prompt_id)}, step {r.step}[/dim]",
            f"{inert(r.tool_name)}\n[{style}]{r.error_class}[/{style}] [dim]· {prev}[/dim]",
            inert(message),
        )
    console.print(table)
    console.print("[dim]prev. = earlier calls at the same tool with the same arguments. "
                  "Next: loopscope triage CONVERSATION_ID[/dim]")
