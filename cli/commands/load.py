"""``loopscope load PATH...``: load log files into the store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from loopscope.cli.app import command
from loopscope.cli.options import DbOption, FormatOption, InputFormatOption
from loopscope.cli.output import OutputFormat, fmt_number, inert, stdout_console, write_csv, write_json

if TYPE_CHECKING:
    from loopscope.analyses.loader import LoadSummary

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
    from loopscope.analyses.store import connect
    from loopscope.cli.common import load_with_progress

    con = connect(db)
    reader_options = {
        key: value
        for key, value in (("messages_key", messages_key), ("id_key", id_key), ("error_when", error_when), ("agent_name", agent_name))
        if value
    }
    summary = load_with_progress(con, paths, input_format, reader_options)
    if fmt is OutputFormat.json:
        write_json(summary.as_dict())
    elif fmt is OutputFormat.csv:
        write_csv([{c: getattr(summary, c) for c in SUMMARY_COLUMNS}], SUMMARY_COLUMNS)
    else:
        _render_table(summary, db)
    if summary.unreadable:
        # The other files are loaded; exit 1 so a script notices the ones that were not.
        con.close()
        raise typer.Exit(1)


def _render_table(summary: LoadSummary, db: str | None) -> None:
    from loopscope.cli.common import shown_path
    from rich.table import Table

    out = stdout_console()
    table = Table(title=None, box=None, pad_edge=False)
    for col in ("file", "format", "status", "loaded", "skipped", "quarantined"):
        table.add_column(col, justify="right" if col in ("loaded", "skipped", "quarantined") else "left")
    for d in summary.details:
        table.add_row(
            inert(shown_path(d.path)), inert(d.input_format), inert(d.status),
            fmt_number(d.loaded), fmt_number(d.skipped), fmt_number(d.quarantined),
        )
    out.print(table)
    out.print(
        f"{summary.files} files: {summary.loaded} records loaded "
        f"({summary.tool_calls} tool calls, {summary.loop_exits} loop exits), "
        f"{summary.skipped} skipped as already loaded, {summary.quarantined} quarantined"
        + (f", {summary.protocol_violations} protocol violations" if summary.protocol_violations else "")
        + (f", {summary.unreadable} unreadable (not loaded)" if summary.unreadable else "")
    )
    if summary.skipped_types:
        counts = ", ".join(f"{inert(name)} {n}" for name, n in sorted(summary.skipped_types.items(), key=lambda kv: (-kv[1], kv[0])))
        total = sum(summary.skipped_types.values())
        out.print(f"Lines not read (not errors), per type: {total} ({counts})")
    if summary.ignored:
        names = ", ".join(inert(shown_path(p)) for p in summary.ignored[:3]) + (", ..." if len(summary.ignored) > 3 else "")
        n = len(summary.ignored)
        out.print(f"Not log files (not *.jsonl, *.ndjson, *.json or .gz), left out: {n} file{'s' if n != 1 else ''}, {names}")
    if summary.quarantined:
        out.print("See the bad lines with: [b]loopscope quarantine[/b]" + (f" --db {inert(db)}" if db else ""))
