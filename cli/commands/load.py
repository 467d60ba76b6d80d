"""``loopscope load PATH...``: load log files into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from loopscope.cli.app import command
from loopscope.cli.options import DbOption, FormatOption, InputFormatOption
from loopscope.cli.render.output import OutputFormat, write_csv, write_json

MESSAGES_PANEL = "Conversation message arrays (--input-format messages, docs/inputs.md)"
SUMMARY_COLUMNS = ("files", "loaded", "skipped", "quarantined", "tool_calls", "loop_exits", "protocol_violations", "unreadable")


@command("load")
def load(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Log files, directories (searched recursively) or globs.", show_default=False),
    ],
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
    input_format: InputFormatOption = "auto",
    messages_key: Annotated[
        Optional[str],
        typer.Option(
            "--messages-key",
            help="Messages format: where each conversation's messages list is, as dotted keys with [] for "
            "'each element' (e.g. [b]simulations[].messages[/b]). Default: detected.",
            rich_help_panel=MESSAGES_PANEL,
            show_default=False,
        ),
    ] = None,
    id_key: Annotated[
        Optional[str],
        typer.Option(
            "--id-key",
            help="Messages format: the conversation id's key in each conversation (dotted keys allowed). "
            "Default: conversation_id, id, session_id or thread_id.",
            rich_help_panel=MESSAGES_PANEL,
            show_default=False,
        ),
    ] = None,
    error_when: Annotated[
        Optional[list[str]],
        typer.Option(
            "--error-when",
            help="Messages format: when a tool result without an error flag is an error: [b]flag[/b] (default: "
            "never), [b]prefix[/b] (text starts with 'Error:'), [b]json-error-key[/b] (a JSON body with an "
            "\"error\" key) or [b]regex:PATTERN[/b]. Repeat to combine.",
            rich_help_panel=MESSAGES_PANEL,
            show_default=False,
        ),
    ] = None,
    agent_name: Annotated[
        Optional[str],
        typer.Option(
            "--agent-name",
            help="Messages format: the agent name for every record. Default: the file's agent name, else 'default'.",
            rich_help_panel=MESSAGES_PANEL,
            show_default=False,
        ),
    ] = None,
) -> None:
    """Load log files into the database; safe to repeat (only new lines are added).

    Bad lines never stop a load: they are kept in the quarantine with file,
    line and reason (see [b]loopscope quarantine[/b]).
    """
    from loopscope.cli.common import analysis_store

    reader_options = {
        key: value
        for key, value in (("messages_key", messages_key), ("id_key", id_key), ("error_when", error_when), ("agent_name", agent_name))
        if value
    }
    # loads the PATHs (required here) and closes the store; the summary is all load reports
    with analysis_store(db, paths, input_format, reader_options=reader_options) as opened:
        summary = opened.summary
    assert summary is not None
    if fmt is OutputFormat.json:
        write_json(summary.as_dict())
    elif fmt is OutputFormat.csv:
        write_csv([{c: getattr(summary, c) for c in SUMMARY_COLUMNS}], SUMMARY_COLUMNS)
    else:
        from loopscope.cli.render.load import render

        render(summary, db)
    if summary.unreadable:
        # The other files are loaded; exit 1 so a script notices the ones that were not.
        raise typer.Exit(1)
