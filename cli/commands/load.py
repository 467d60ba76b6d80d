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
    scratchpad_tool: Annotated[
        Optional[list[str]],
        typer.Option(
            "--scratchpad-tool",
            help="A tool that does nothing in the world (a scratchpad such as [b]think[/b]): its success never "
            "counts as recovering an error. Repeat for several; replaces the store's set (default: think), which "
            "every command then uses. [b]--scratchpad-tool ''[/b] clears it.",
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
    from loopscope.analyses.notices import notices as store_notices
    from loopscope.cli.common import analysis_store
    from loopscope.cli.render.output import inert, stderr_console

    reader_options = {
        key: value
        for key, value in (("messages_key", messages_key), ("id_key", id_key), ("error_when", error_when), ("agent_name", agent_name))
        if value
    }
    # loads the PATHs (required here) and closes the store; the summary is all load reports
    with analysis_store(db, paths, input_format, reader_options=reader_options) as opened:
        summary = opened.summary
        if scratchpad_tool is not None:
            from loopscope.analyses.store.facts import set_scratchpad_tools

            set_scratchpad_tools(opened.con, scratchpad_tool)
        notices = [n.as_dict() for n in store_notices(opened.con, opened.selection)]
    assert summary is not None
    if fmt is OutputFormat.json:
        write_json({**summary.as_dict(), "notices": notices})
    elif fmt is OutputFormat.csv:
        write_csv([{c: getattr(summary, c) for c in SUMMARY_COLUMNS}], SUMMARY_COLUMNS)
    else:
        from loopscope.cli.render.load import render

        render(summary, db)
    from loopscope.analyses.ingest.formats import fruitless_files
    from loopscope.analyses.notices import Notice
    from loopscope.cli.common import print_notices

    print_notices([Notice(**n) for n in notices])
    fruitless = fruitless_files(summary.details)
    if fruitless and not (summary.loaded or summary.skipped):
        # Nothing came of the whole load: that is a user error, not an empty success.
        from loopscope.analyses.errors import LoopscopeError

        first = fruitless[0]
        more = f" (and {len(fruitless) - 1} more file(s) like it)" if len(fruitless) > 1 else ""
        raise LoopscopeError(first.message() + more, hint=first.hint)
    for f in fruitless:
        stderr_console().print(f"[yellow]warning:[/yellow] {inert(f.message())}\n  [dim]{inert(f.hint)}[/dim]")
    if summary.unreadable:
        # The other files are loaded; exit 1 so a script notices the ones that were not.
        raise typer.Exit(1)
